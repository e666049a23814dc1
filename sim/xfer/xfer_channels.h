// A core's transfer queue (kSend, kHostLoad, kHostStore): which channel a transfer takes, when
// it is free, and (analytical engine only) the occupancy of the transfers' first stage. One model
// for the SystemC transfer unit (sim/xfer/xfer.h) and the analytical engine.
//
// Channels: one in-order queue over `xfer.channels` channels (sim/base/unit_pool.h). A transfer
// starts at the earliest time >= max(ready, the queue's previous start) a channel is free, on the
// lowest-numbered channel free then, and holds it until its last byte has left the source (its
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

class XferChannels : public UnitPool {
 public:
  void reset(uint32_t channels, uint32_t stages = 0) {
    UnitPool::reset(std::max<uint32_t>(channels, 1));
    stage_free_.assign(stages, 0);
  }

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
  // The transfer picked as `p` has left the source through `stage` at `injected`.
  void injected(const Pick& p, uint32_t stage, uint64_t injected) {
    hold(0, p, injected);
    stage_free_[stage] = injected;
  }

 private:
  std::vector<uint64_t> stage_free_;  // per first stage: when the last transfer through it left
};

}  // namespace tpusim
