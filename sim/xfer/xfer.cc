#include "sim/xfer/xfer.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "sim/ici/ici_timing.h"

namespace tpusim {

using sc_core::sc_time;

namespace {

// At least this many packets per train: fewer activations; trains of 16 x 4 KiB last ~750
// cycles on a v3 link, short against the messages of collectives (MBs).
constexpr uint64_t kMinTrainPackets = 16;
constexpr uint64_t kMaxTrainBytes = 16ull << 20;

}  // namespace

uint64_t train_bytes(const HwConfig& hw, const ResolvedHw& r) {
  const ChipParams& c = hw.chip;
  const uint64_t packet = std::max<uint32_t>(c.ici.packet_bytes, 1);
  const uint64_t chunk = std::max<uint32_t>(c.core.dma.chunk_bytes, 1);
  const uint64_t channels = std::max<uint32_t>(r.hbm_core_channels, 1);
  // Every HBM read of a train covers all of the core's channels (chunks go round-robin).
  double bytes = double(std::max(kMinTrainPackets * packet, channels * chunk));
  // The read of train k+1 is issued when train k is reserved (about when it starts on the
  // path), so that no train waits for its data: (a) its first byte (read issue + HBM latency)
  // must be there before train k is through, B / rate >= latency; (b) its last byte (issue +
  // latency + B / hbm) before train k+1 is through, B * (2 / rate - 1 / hbm) >= latency. Both
  // with 2 cycles for rounding. With several channels a read may wait behind one train read of
  // each other channel streaming at once: (b) becomes B * (2 / rate - k / hbm) >= latency for k
  // concurrent readers, k = the channels, at most the hbm / rate that the HBM can feed at this
  // rate (more is HBM-bound anyway). (Paths faster than HBM are HBM-bound: (b) cannot hold, and
  // the transfer is paced by its reads.)
  const double hbm = r.hbm_core_bytes_per_cycle;
  const double latency = double(r.hbm_latency_cycles) + 2;
  const double xfer_channels = std::max<uint32_t>(c.core.xfer.channels, 1);
  for (double rate : {r.noc_bytes_per_cycle, r.ici_link_bytes_per_cycle, r.pcie_bytes_per_cycle}) {
    if (rate <= 0) continue;
    bytes = std::max(bytes, latency * rate);
    const double readers = std::clamp(std::floor(hbm / rate), 1.0, xfer_channels);
    const double slack = 2 / rate - readers / hbm;  // cycles per byte
    if (slack > 0) bytes = std::max(bytes, latency / slack);
  }
  // Whole packets and whole HBM chunks, so both engines count the same packets and requests.
  uint64_t unit = std::lcm(packet, chunk);
  if (unit > 64 * std::max(packet, chunk)) unit = packet;
  const uint64_t b = uint64_t(std::ceil(std::min(bytes, double(kMaxTrainBytes)) / double(unit))) * unit;
  return std::max(b, unit);
}

Xfer::Xfer(sc_core::sc_module_name name)
    : sc_module(name),
      in("in"),
      host_in("host_in"),
      done("done"),
      hbm("hbm"),
      noc("noc"),
      ici("ici"),
      pcie("pcie"),
      rx("rx"),
      group_(this->name()) {
  SC_HAS_PROCESS(Xfer);
  rx.bind(*this);
  tag_ = new HbmRequestTag;
  trans_.set_extension(tag_);  // the payload owns and frees it
  trans_.set_data_ptr(nullptr);
  trans_.set_byte_enable_ptr(nullptr);
  stats_.declare(group_);
  SC_METHOD(step);
}

void Xfer::configure(const HwConfig& hw, const ResolvedHw& r) {
  setup_cycles_ = hw.chip.core.dma.setup_cycles;
  hbm_latency_ = r.hbm_latency_cycles;
  chunk_bytes_ = hw.chip.core.dma.chunk_bytes;
  packet_bytes_ = std::max<uint32_t>(hw.chip.ici.packet_bytes, 1);
  train_bytes_ = train_bytes(hw, r);
  send_channels_ = std::max<uint32_t>(hw.chip.core.xfer.channels, 1);
  channels_.resize(send_channels_ + XferChannels::kHostChannels);
  for (size_t c = 0; c < channels_.size(); ++c) {
    channels_[c].index = uint32_t(c);
    channels_[c].track = TraceNames::of(name(), std::to_string(c));
  }
}

void Xfer::begin_run(const CorePlan* plan, const RunContext* run) {
  plan_ = plan;
  stream_ = plan->view();
  run_ = run;
  used_ = plan->has_transfers;
  for (Channel& ch : channels_) {
    ch.act = Active{};
    ch.next = 0;
  }
  pool_.reset(send_channels_);
  for (Head& h : heads_) h.holding = false;
  stats_.reset(uint32_t(channels_.size()));
}

// Each activation: hand on the trains that are due, then issue each queue (transfer, host) in
// stream order: its head transfer starts on the channel the pool picks among the queue's; when
// none is free, wake up when one frees (or when a train is due, or the sequencer queues a
// transfer).
void Xfer::step() {
  if (!or_built_) {  // the fifo events exist once the ports are bound
    either_written_ = in->data_written_event() | host_in->data_written_event();
    or_built_ = true;
  }
  if (!stream_) return next_trigger(either_written_);
  const uint64_t now = run_->now_cycle();  // the unit only waits whole cycles
  for (Channel& ch : channels_)
    if (ch.act.on && ch.next <= now) ch.next = send_train(ch, now);
  uint64_t wake = UINT64_MAX;
  for (uint32_t q = 0; q < 2; ++q) {
    Head& h = heads_[q];
    sc_core::sc_fifo_in<uint32_t>& from = q == 0 ? in : host_in;
    for (;;) {
      if (!h.holding) {
        if (!from->nb_read(h.held)) break;
        h.holding = true;
      }
      const UnitPool::Pick p = pool_.pick(q, now);
      if (p.start > now) break;
      h.holding = false;
      pool_.hold(q, p, UnitPool::kHeld);  // until finish()
      Channel& ch = channels_[p.unit];
      begin(ch, h.held, now);
      ch.next = send_train(ch, now);
    }
    if (h.holding) wake = std::min(wake, pool_.pick(q, now).start);  // an idle channel of the queue frees
  }
  for (const Channel& ch : channels_)
    if (ch.act.on) wake = std::min(wake, ch.next);
  // A queue whose head waits for a channel reads nothing more until one frees (wake < max then);
  // the other may still get an instruction.
  if (wake == UINT64_MAX) return next_trigger(either_written_);
  if (heads_[0].holding && heads_[1].holding) return next_trigger(run_->clock.cycles(wake - now));
  next_trigger(run_->clock.cycles(wake - now), either_written_);
}

void Xfer::begin(Channel& ch, uint32_t i, uint64_t now) {
  const isa::Instr& ins = stream_[i];
  Active& act = ch.act;
  act = Active{};
  act.on = true;
  act.instr = i;
  act.start = now;
  act.t0 = now + setup_cycles_;
  act.remaining = ins.bytes;
  act.reads_hbm = ins.op != isa::Op::kHostLoad;

  Train& t = ch.train;
  t.kind = ins.op == isa::Op::kSend ? TrainKind::kSend
           : ins.op == isa::Op::kHostLoad ? TrainKind::kHostLoad
                                          : TrainKind::kHostStore;
  t.dcn = ins.dcn;
  t.src_chip = plan_->chip;
  t.src_core = plan_->core;
  const bool send = t.kind == TrainKind::kSend;
  const isa::PeerRef dst = send ? plan_->peer(i) : isa::PeerRef{plan_->chip, plan_->core};
  t.dst_chip = dst.chip;
  t.dst_core = dst.core;
  t.src_instr = i;
  t.recv_instr = send ? plan_->match_instr(i) : kNoIndex;
  t.flow = uint64_t(plan_->slot) << 32 | i;
  t.label = ins.label;
  t.packet_bytes = packet_bytes_;
  t.delivered = 0;
  t.injected = 0;
  if (act.reads_hbm) act.next = read_hbm(act, std::min(train_bytes_, act.remaining), act.t0, now);
}

uint64_t Xfer::send_train(Channel& ch, uint64_t now) {
  Active& act = ch.act;
  Train& t = ch.train;
  const uint64_t b = std::min(train_bytes_, act.remaining);
  act.remaining -= b;
  t.bytes = b;
  t.packets = uint32_t(std::max<uint64_t>(1, (b + packet_bytes_ - 1) / packet_bytes_));
  t.last = act.remaining == 0;
  t.stage = 0;
  t.head.resize(t.packets);
  t.tail.resize(t.packets);
  if (act.reads_hbm) {
    // The train's data comes out of HBM between the read's first and last byte, evenly.
    const double a = act.next.first, span = act.next.last - act.next.first;
    for (uint32_t p = 0; p < t.packets; ++p) {
      t.head[p] = a + span * p / t.packets;
      t.tail[p] = a + span * (p + 1) / t.packets;
    }
    if (!t.last) act.next = read_hbm(act, std::min(train_bytes_, act.remaining), std::max(now, act.t0), now);
  } else {
    std::fill(t.head.begin(), t.head.end(), double(act.t0));  // host RAM: all there after setup
    std::fill(t.tail.begin(), t.tail.end(), double(act.t0));
  }
  sc_core::sc_port<TrainIf>& path = t.kind != TrainKind::kSend ? pcie : t.dst_chip == plan_->chip ? noc : ici;
  path->transmit(t);
  if (!t.last) return std::max(now, ceil_cycles(t.injected));
  return finish(ch, now);
}

uint64_t Xfer::finish(Channel& ch, uint64_t now) {
  const Active& act = ch.act;
  const isa::Instr& ins = stream_[act.instr];
  const uint64_t free = std::max(now, ceil_cycles(ch.train.injected));
  pool_.release(ch.index, free);
  const uint64_t end = std::max(free, ceil_cycles(ch.train.delivered));
  done->complete(act.instr, run_->clock.cycles(end - now));
  const uint64_t busy = free - act.start;
  stats_.transfer(ins, busy);
  if (run_->trace) {
    run_->trace->complete({ch.track.process, ch.track.track, ins.label, act.start, busy, run_->clock_mhz, ins.bytes});
  }
  ch.act.on = false;
  return free;
}

Xfer::Read Xfer::read_hbm(const Active& act, uint64_t bytes, uint64_t issue, uint64_t now) {
  const double first = double(issue + hbm_latency_);
  if (bytes == 0) return {first, first};
  return {first, hbm_call(tlm::TLM_READ_COMMAND, bytes, issue, now, act.instr, stream_[act.instr].label)};
}

double Xfer::hbm_call(tlm::tlm_command cmd, uint64_t bytes, uint64_t issue, uint64_t now, uint32_t instr,
                      std::string_view label) {
  tag_->bytes = bytes;
  tag_->chunk_bytes = chunk_bytes_;
  tag_->instr = instr;
  tag_->label = label;
  const uint32_t len = uint32_t(std::min<uint64_t>(bytes, UINT32_MAX));
  trans_.set_command(cmd);
  trans_.set_address(0);
  trans_.set_data_length(len);
  trans_.set_streaming_width(len);
  trans_.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  sc_time delay = run_->clock.cycles(issue - now);
  hbm->b_transport(trans_, delay);
  return double(now) + double(delay.value()) / double(run_->clock.period_ps);
}

// A train for this core's HBM (a send from another core, or this core's host load). Writes are
// posted: the train's bytes are requested from the HBM when the train is handed on (now; the
// request runs ahead of the data by the path's latency, which keeps HBM reservations in time
// order), and the data counts as delivered when its last byte has arrived and the HBM has served
// the request (its latency is hidden).
void Xfer::transmit(Train& t) {
  const uint64_t now = run_->now_cycle();
  const double arrived = t.tail[t.packets - 1];
  double written = arrived;
  if (t.bytes > 0) {
    const uint32_t instr = t.kind == TrainKind::kSend ? t.recv_instr : t.src_instr;
    written = hbm_call(tlm::TLM_WRITE_COMMAND, t.bytes, now, now, instr, t.label) - double(hbm_latency_);
  }
  t.delivered = std::max({t.delivered, arrived, written});
  if (t.kind != TrainKind::kSend) return;  // a host load completes at its sender, this unit
  stats_.received(t.bytes, t.last);
  if (t.last) done->complete(t.recv_instr, run_->clock.cycles(std::max(now, ceil_cycles(t.delivered)) - now));
}

}  // namespace tpusim
