#include "sim/hbm/simple_hbm.h"

#include <algorithm>
#include <cmath>

#include "sim/hbm/hbm_timing.h"

namespace tpusim {

SimpleHbm::SimpleHbm(sc_core::sc_module_name name) : Hbm(name), group_(this->name()) { stats_.declare(group_); }

void SimpleHbm::configure(const ChipParams& chip) {
  const uint32_t ch = chip.hbm.channels;
  const bool per_core = chip.hbm.ownership == "per_core";
  core_bytes_per_cycle_ = hbm_core_bytes_per_cycle(chip);
  latency_cycles_ = Clock{chip.core.clock_mhz}.cycles_from_ns(chip.hbm.latency_ns);
  clock_mhz_ = chip.core.clock_mhz;
  peak_gbyte_per_s_ = chip.hbm.bandwidth_gbyte_per_s;
  if (channels_.size() != ch) {
    channels_.clear();
    for (uint32_t c = 0; c < ch; ++c)
      channels_.push_back(std::make_unique<Channel>(std::string(name()) + ".ch" + std::to_string(c)));
  }
  cores_.assign(chip.cores, CoreView{});
  for (uint32_t i = 0; i < chip.cores; ++i) {
    cores_[i].first = per_core ? i * ch / chip.cores : 0;
    cores_[i].count = per_core ? (i + 1) * ch / chip.cores - cores_[i].first : ch;
  }
}

void SimpleHbm::begin_run(const RunContext* run) {
  run_ = run;
  for (auto& ch : channels_) {
    ch->period_start = ch->period_bytes = 0;
    ch->stats.reset();
    ch->span_open = false;
  }
  for (auto& v : cores_) v.next = 0;
  stats_.reset(clock_mhz_, peak_gbyte_per_s_);
}

void SimpleHbm::serve(int core, tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
  const uint64_t period_ps = run_->clock.period_ps;
  const uint64_t req = (sc_core::sc_time_stamp().value() + delay.value() - run_->start_ps) / period_ps;
  const auto* tag = trans.get_extension<HbmRequestTag>();
  const uint64_t bytes = tag ? tag->bytes : trans.get_data_length();
  const uint64_t chunk = tag && tag->chunk_bytes ? tag->chunk_bytes : std::max<uint64_t>(bytes, 1);
  CoreView& v = cores_[size_t(core) % cores_.size()];  // the core's DMA and transfer unit share its view
  // Request i of the transfer goes to channel (next + i) mod count. Channel d (counted from
  // `next`) gets requests d, d + count, ...; they all arrive now, so it serves them back to back:
  // reserving their byte sum at once is the same as reserving them one by one.
  const uint64_t requests = (bytes + chunk - 1) / chunk;
  const uint64_t short_by = requests * chunk - bytes;  // the last request is shorter
  uint64_t latest_ps = 0;
  for (uint64_t d = 0; d < std::min<uint64_t>(requests, v.count); ++d) {
    const uint64_t k = (requests - 1 - d) / v.count + 1;
    const uint64_t b = k * chunk - ((requests - 1 - d) % v.count == 0 ? short_by : 0);
    Channel& ch = *channels_[v.first + (v.next + d) % v.count];
    latest_ps = std::max(latest_ps, reserve(ch, core, v.count, req, b, k, tag));
  }
  v.next = uint32_t((v.next + requests) % v.count);
  delay = sc_core::sc_time::from_value(delay.value() + latest_ps);
  trans.set_response_status(tlm::TLM_OK_RESPONSE);
}

// Reserves `bytes` (`requests` requests) issued at cycle `req` on `ch`, a channel of a core with
// `count` channels; returns when their data has arrived, in ps after `req`.
uint64_t SimpleHbm::reserve(Channel& ch, int core, uint32_t count, uint64_t req, uint64_t bytes, uint64_t requests,
                            const HbmRequestTag* tag) {
  const uint64_t period_ps = run_->clock.period_ps;
  // A channel serves rate = core_bytes_per_cycle / count, so b bytes take b * count / core rate.
  double len = double(ch.period_bytes * count) / core_bytes_per_cycle_;
  if (ch.period_bytes == 0 || double(req) >= double(ch.period_start) + len) {  // idle: new busy period
    ch.period_start = req;
    ch.period_bytes = 0;
    len = 0;
  }
  const double begin = double(ch.period_start) + len;
  ch.period_bytes += bytes;
  len = double(ch.period_bytes * count) / core_bytes_per_cycle_;

  const double service = double(bytes * count) / core_bytes_per_cycle_;
  ch.stats.bytes += bytes;
  ch.stats.requests += requests;
  ch.stats.busy_cycles += service;
  stats_.bytes += bytes;
  stats_.requests += requests;
  stats_.busy_cycles += service / count;  // in cycles of the core's whole bandwidth

  if (run_->trace) {
    const uint32_t instr = tag ? tag->instr : UINT32_MAX;
    const double end = double(ch.period_start) + len;
    if (ch.span_open && ch.span_core == core && ch.span_instr == instr && begin <= ch.span_end + 1e-6) {
      ch.span_end = end;
      ch.span_bytes += bytes;
    } else {
      flush(ch);
      ch.span_open = true;
      ch.span_core = core;
      ch.span_instr = instr;
      ch.span_start = begin;
      ch.span_end = end;
      ch.span_bytes = bytes;
      ch.span_label = tag ? tag->label : std::string_view("hbm");
    }
  }

  // Data arrives at period_start + len + latency. Relative to the request that is a whole number
  // of cycles (period_start <= req are whole cycles) plus a fraction; the fraction becomes
  // ceil(fraction * period) ps, so the initiator's ceil to whole cycles equals ceil(len): a lone
  // transfer spread evenly over the channels ends exactly where hbm_transfer_cycles puts it.
  const double whole = std::floor(len);
  const uint64_t rel_cycles = ch.period_start + uint64_t(whole) - req + latency_cycles_;
  const uint64_t frac_ps = uint64_t(std::ceil((len - whole) * double(period_ps)));
  return rel_cycles * period_ps + frac_ps;
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
