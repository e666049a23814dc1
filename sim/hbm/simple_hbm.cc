#include "sim/hbm/simple_hbm.h"

#include <algorithm>
#include <cmath>

#include "sim/hbm/hbm_interleave.h"

namespace tpusim {

SimpleHbm::SimpleHbm(sc_core::sc_module_name name) : Hbm(name), group_(this->name()) { stats_.declare(group_); }

void SimpleHbm::configure(const ChipParams& chip, const ResolvedHw& r) {
  const uint32_t ch = chip.hbm.channels;
  core_bytes_per_cycle_ = r.hbm_core_bytes_per_cycle;
  latency_cycles_ = r.hbm_latency_cycles;
  clock_mhz_ = chip.core.clock_mhz;
  peak_gbyte_per_s_ = chip.hbm.bandwidth_gbyte_per_s;
  if (channels_.size() != ch) {
    channels_.clear();
    lanes_.assign(ch, Lane{});  // before the groups that point into it
    for (uint32_t c = 0; c < ch; ++c)
      channels_.push_back(std::make_unique<Channel>(std::string(name()) + ".ch" + std::to_string(c), &lanes_[c].stats));
  }
  cores_.assign(chip.cores, CoreView{});
  for (uint32_t i = 0; i < chip.cores; ++i) {
    cores_[i].first = r.hbm_first_channel(i);
    cores_[i].count = r.hbm_core_channels;
  }
}

void SimpleHbm::begin_run(const RunContext* run) {
  run_ = run;
  period_ps_ = run->clock.period_ps;
  for (Lane& l : lanes_) {
    l.period_start = l.period_bytes = 0;
    l.len = l.end = 0;
    l.stats.reset();
  }
  for (auto& ch : channels_) ch->span_open = false;
  for (auto& v : cores_) v.next = 0;
  stats_.reset(clock_mhz_, peak_gbyte_per_s_);
}

void SimpleHbm::serve(int core, tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
  const uint64_t req = (sc_core::sc_time_stamp().value() + delay.value() - run_->start_ps) / period_ps_;
  const auto* tag = trans.get_extension<HbmRequestTag>();
  const uint64_t bytes = tag ? tag->bytes : trans.get_data_length();
  const uint64_t chunk = tag && tag->chunk_bytes ? tag->chunk_bytes : std::max<uint64_t>(bytes, 1);
  const uint64_t latest_ps = run_->trace ? reserve_transfer<true>(core, req, bytes, chunk, tag)
                                         : reserve_transfer<false>(core, req, bytes, chunk, tag);
  delay = sc_core::sc_time::from_value(delay.value() + latest_ps);
  trans.set_response_status(tlm::TLM_OK_RESPONSE);
}

// Request i of the transfer goes to channel (next + i) mod count (sim/hbm/hbm_interleave.h). The
// requests of a channel all arrive now, so it serves them back to back: reserving their byte sum
// at once is the same as reserving them one by one. So the channels before the one that gets the
// last (shorter) request get k requests, that one k requests minus the shortfall, the ones after
// it k - 1: three shares, computed once. Returns when the last data has arrived, in ps after
// `req`.
template <bool kTrace>
uint64_t SimpleHbm::reserve_transfer(int core, uint64_t req, uint64_t bytes, uint64_t chunk, const HbmRequestTag* tag) {
  CoreView& v = cores_[size_t(core) % cores_.size()];  // the core's DMA and transfer unit share its view
  const HbmSpread spread = hbm_spread(bytes, chunk, v.count);
  const uint64_t requests = spread.requests, k = spread.k, last = spread.last, touched = spread.touched;
  if (requests == 0) return 0;
  const Share full = share(spread.full_bytes(), k, v.count);
  const Share tail = share(spread.tail_bytes(), k, v.count);
  const Share fewer = k > 1 ? share(spread.fewer_bytes(), k - 1, v.count) : Share{};

  // Core stats: summed channel by channel, in channel order.
  double busy = stats_.busy_cycles;
  for (uint64_t d = 0; d < last; ++d) busy += full.core_service;
  busy += tail.core_service;
  for (uint64_t d = last + 1; d < touched; ++d) busy += fewer.core_service;
  stats_.busy_cycles = busy;
  stats_.bytes += bytes;
  stats_.requests += requests;

  double latest_end = 0, longest = 0;
  bool one_start = true;  // every touched lane's busy period started at the same cycle
  const uint32_t first = v.first + v.next;
  uint32_t c = v.next;
  auto run = [&](const Share& s, uint64_t channels) {
    for (uint64_t d = 0; d < channels; ++d) {
      const Lane& l = reserve<kTrace>(v.first + c, core, req, s, v.count, tag);
      latest_end = std::max(latest_end, l.end);
      longest = std::max(longest, l.len);
      one_start &= l.period_start == lanes_[first].period_start;
      if (++c == v.count) c = 0;
    }
  };
  run(full, last);
  run(tail, 1);
  run(fewer, touched - last - 1);
  v.next += uint32_t(last + 1);  // (next + requests) mod count
  if (v.next >= v.count) v.next -= v.count;

  // The last data is the latest period end: arrival_ps() grows with the exact end, period_start +
  // len. Usually the periods started together, and the longest is the latest. Else the rounded
  // `end` never reverses the order of two exact ends: only lanes whose `end` equals the largest
  // can hold the latest arrival.
  if (one_start) return arrival_ps(lanes_[first].period_start, longest, req);
  uint64_t latest_ps = 0;
  c = first - v.first;
  for (uint64_t d = 0; d < touched; ++d) {
    const Lane& l = lanes_[v.first + c];
    if (l.end == latest_end) latest_ps = std::max(latest_ps, arrival_ps(l.period_start, l.len, req));
    if (++c == v.count) c = 0;
  }
  return latest_ps;
}

SimpleHbm::Share SimpleHbm::share(uint64_t bytes, uint64_t requests, uint32_t count) const {
  Share s;
  s.bytes = bytes;
  s.requests = requests;
  // A channel serves rate = core_bytes_per_cycle / count, so b bytes take b * count / core rate.
  s.service = double(bytes * count) / core_bytes_per_cycle_;
  s.core_service = s.service / count;
  return s;
}

// Data arrives at period_start + len + latency. Relative to the request that is a whole number
// of cycles (period_start <= req are whole cycles) plus a fraction; the fraction becomes
// ceil(fraction * period) ps, so the initiator's ceil to whole cycles equals ceil(len): a lone
// transfer spread evenly over the channels ends exactly where hbm_transfer_cycles puts it.
// (0 <= len < 2^63: truncation is floor, and the ceil below is std::ceil without the call.)
uint64_t SimpleHbm::arrival_ps(uint64_t period_start, double len, uint64_t req) const {
  const uint64_t whole = uint64_t(int64_t(len));
  const double frac = (len - double(int64_t(whole))) * double(int64_t(period_ps_));
  int64_t frac_ps = int64_t(frac);
  if (double(frac_ps) < frac) ++frac_ps;
  return (period_start + whole - req + latency_cycles_) * period_ps_ + uint64_t(frac_ps);
}

// Reserves share `s` issued at cycle `req` on channel `c` of a core with `count` channels;
// returns the lane (its busy period after the reservation). Branch-free but for the trace: an
// idle channel (its period over) starts a new period at the request. (Counts stay below 2^63, so
// they convert to double as signed integers, which is cheaper.)
template <bool kTrace>
const SimpleHbm::Lane& SimpleHbm::reserve(uint32_t c, int core, uint64_t req, const Share& s, uint32_t count,
                                          const HbmRequestTag* tag) {
  Lane& l = lanes_[c];
  l.stats.bytes += s.bytes;
  l.stats.requests += s.requests;
  l.stats.busy_cycles += s.service;
  const double at = double(int64_t(req));
  const bool idle = (l.period_bytes == 0) | (at >= l.end);
  const double begin = idle ? at : l.end;
  l.period_start = idle ? req : l.period_start;
  l.period_bytes = (idle ? 0 : l.period_bytes) + s.bytes;
  l.len = double(int64_t(l.period_bytes * count)) / core_bytes_per_cycle_;
  l.end = double(int64_t(l.period_start)) + l.len;
  if constexpr (kTrace) trace_span(*channels_[c], l, core, begin, s.bytes, tag);
  return l;
}

// Trace: consecutive requests of one DMA on a channel are drawn as one event, [begin, end].
void SimpleHbm::trace_span(Channel& ch, const Lane& lane, int core, double begin, uint64_t bytes,
                           const HbmRequestTag* tag) {
  const uint32_t instr = tag ? tag->instr : UINT32_MAX;
  if (ch.span_open && ch.span_core == core && ch.span_instr == instr && begin <= ch.span_end + 1e-6) {
    ch.span_end = lane.end;
    ch.span_bytes += bytes;
    return;
  }
  flush(ch);
  ch.span_open = true;
  ch.span_core = core;
  ch.span_instr = instr;
  ch.span_start = begin;
  ch.span_end = lane.end;
  ch.span_bytes = bytes;
  ch.span_label = tag ? tag->label : std::string_view("hbm");
}

// Span ends are rounded to the nearest cycle, so back-to-back spans never overlap on the track.
void SimpleHbm::flush(Channel& ch) {
  if (!ch.span_open) return;
  ch.span_open = false;
  const uint64_t start = uint64_t(std::llround(ch.span_start));
  const uint64_t end = std::max<uint64_t>(uint64_t(std::llround(ch.span_end)), start);
  run_->trace->complete({ch.track.process, ch.track.track, ch.span_label, start, end - start, run_->clock_mhz, ch.span_bytes});
}

void SimpleHbm::end_run(uint64_t chip_cycles) {
  stats_.run_cycles = chip_cycles;
  if (run_ && run_->trace)
    for (auto& ch : channels_) flush(*ch);
}

void SimpleHbm::dump_stats(nlohmann::json& out) const {
  out[group_.name()] = group_.dump();
  for (const auto& ch : channels_) out[ch->group.name()] = ch->group.dump();
}

}  // namespace tpusim
