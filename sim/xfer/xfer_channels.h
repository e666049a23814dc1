// A core's transfer queue (kSend) and host queue (kHostLoad, kHostStore): which channel a transfer
// takes, when it is free, and (analytical engine only) the occupancy of the transfers' first
// stage. One model for the SystemC transfer unit (sim/xfer/xfer.h) and the analytical engine.
//
// Channels: the transfer queue in order over `xfer.channels` channels, the host queue in order
// over its own kHostChannels (sim/base/unit_pool.h). A transfer starts at the earliest time >=
// max(ready, its queue's previous start) a channel of its queue is free, on the lowest-numbered
// channel free then, and holds it until its last byte has left the source (its
// first stage): SystemC learns that end when the last train has gone (it holds the channel with
// UnitPool::kHeld, then release()s it), the analytical engine computes it at once (hold()).
//
// First stage: the stage a transfer leaves its chip through (the ICI port towards the first hop,
// the chip's NoC for a send on the chip, the chip's PCIe h2d / d2h for a host load / store).
// SystemC models every stage of the path as a bandwidth server (sim/ici/packet_server.h), so
// flows sharing a stage interleave train by train. The analytical engine models no stage, but a
// core never gets more than a stage's bandwidth: its transfers whose first stage is the same
// stream one after the other (a transfer's first byte leaves no earlier than the previous one
// through that stage has left: stream_after()); both end when the stage has carried all of them.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "sim/base/unit_pool.h"
#include "sim/hw/hw_config.h"
#include "sim/ici/ici_timing.h"
#include "sim/isa/program.h"

namespace tpusim {

class XferChannels {
 public:
  using Pick = UnitPool::Pick;
  // The host queue's own channels, one per PCIe direction: the host's DMA does not wait for the
  // ICI's channels (a host copy behind a collective's pipelined sends would otherwise wait for
  // the whole collective), nor they for it.
  static constexpr uint32_t kHostChannels = 2;

  // Queues: 0 the transfer queue (kSend) on `channels` channels, 1 the host queue (kHostLoad,
  // kHostStore) on kHostChannels more. Channel indices: the transfer queue's, then the host's.
  void reset(uint32_t channels, uint32_t stages = 0) {
    sends_ = std::max<uint32_t>(channels, 1);
    pool_[0].reset(sends_);
    pool_[1].reset(kHostChannels);
    stage_free_.assign(stages, 0);
  }
  uint32_t channels() const { return sends_ + kHostChannels; }
  static uint32_t queue_of(isa::Op op) { return op == isa::Op::kSend ? 0 : 1; }

  // UnitPool's pick/hold/release per queue (in order within each; the two are independent).
  Pick pick(uint32_t q, uint64_t ready) const {
    Pick p = pool_[q].pick(0, ready);
    if (q == 1 && p.start != UnitPool::kHeld) p.unit += sends_;
    return p;
  }
  void hold(uint32_t q, Pick p, uint64_t end) {
    if (q == 1) p.unit -= sends_;
    pool_[q].hold(0, p, end);
  }
  void release(uint32_t channel, uint64_t end) {
    if (channel < sends_)
      pool_[0].release(channel, end);
    else
      pool_[1].release(channel - sends_, end);
  }
  uint64_t last_start(uint32_t q) const { return pool_[q].last_start(0); }

  // First stages of a chip's transfers: its ICI ports (ici_port_count), then the NoC, PCIe h2d,
  // PCIe d2h.
  static uint32_t stage_count(const HwConfig& hw) { return ici_port_count(hw.slice.topology) + 3; }
  // The first stage of a transfer of `op` from a core of `chip` (`peer_chip`: a send's
  // destination).
  static uint32_t first_stage(const HwConfig& hw, isa::Op op, uint32_t chip, uint32_t peer_chip) {
    const uint32_t ports = ici_port_count(hw.slice.topology);
    if (op != isa::Op::kSend) return ports + (op == isa::Op::kHostLoad ? 1 : 2);
    return chip == peer_chip ? ports : ici_next_port(hw.slice.topology, chip, peer_chip);
  }

  // When a transfer whose first byte could leave at `flow` through `stage` gets to stream.
  uint64_t stream_after(uint32_t stage, uint64_t flow) const { return std::max(flow, stage_free_[stage]); }
  // The transfer picked as `p` for queue `q` has left the source through `stage` at `injected`.
  void injected(uint32_t q, const Pick& p, uint32_t stage, uint64_t injected) {
    hold(q, p, injected);
    stage_free_[stage] = injected;
  }

 private:
  uint32_t sends_ = 1;
  UnitPool pool_[2];
  std::vector<uint64_t> stage_free_;  // per first stage: when the last transfer through it left
};

}  // namespace tpusim
