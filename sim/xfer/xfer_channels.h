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
// A background collective's sends stream after the foreground's, the foreground's only after the
// foreground's: a synchronous send does not wait for background sends placed ahead of it, and
// where the two overlap the stage carries both (optimistic; SystemC shares it between them).
#pragma once
#include <algorithm>
#include <array>
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
  // kHostStore) on kHostChannels more, 2 the background transfer queue (a kSend marked async: an
  // asynchronous collective's). Channel indices: the transfer queue's, then the host's.
  // The background queue's sends use the transfer channels (their indices), but the analytical
  // engine places them ahead of the main queue's (sim/engine/analytical_engine.cc, "defer") and
  // would otherwise hand every channel to a background collective's whole pipeline before a
  // synchronous collective's send gets one; SystemC's in-time issue gives that send the next
  // channel to free. So queue 2 keeps an occupancy of its own: neither queue waits for the other's
  // channels (the stage below still puts the background's bytes behind the foreground's).
  void reset(uint32_t channels, uint32_t stages = 0) {
    sends_ = std::max<uint32_t>(channels, 1);
    pool_[0].reset(sends_);
    pool_[1].reset(kHostChannels);
    pool_[2].reset(sends_);
    stage_free_.assign(stages, {0, 0});
  }
  uint32_t channels() const { return sends_ + kHostChannels; }
  static uint32_t queue_of(isa::Op op, bool async = false) { return op == isa::Op::kSend ? (async ? 2 : 0) : 1; }

  // UnitPool's pick/hold/release per queue (in order within each; the queues are independent).
  Pick pick(uint32_t q, uint64_t ready) const {
    Pick p = pool_[q].pick(0, ready);
    if (q == 1 && p.start != UnitPool::kHeld) p.unit += sends_;
    return p;
  }
  void hold(uint32_t q, Pick p, uint64_t end) {
    if (q == 1) p.unit -= sends_;
    pool_[q].hold(0, p, end);
  }
  // SystemC's (queues 0 and 1: it issues in time order, the background's sends in queue 0).
  void release(uint32_t channel, uint64_t end) {
    if (channel < sends_)
      pool_[0].release(channel, end);
    else
      pool_[1].release(channel - sends_, end);
  }
  uint64_t last_start(uint32_t q) const { return pool_[q].last_start(0); }

  // When a transfer of queue `q` whose first byte could leave at `flow` through `stage` gets to
  // stream. A background transfer (queue 2) streams after every transfer placed through the
  // stage; the others after the foreground's only (a synchronous send does not wait for the
  // background sends placed ahead of it; where they overlap the stage carries both: optimistic,
  // SystemC's stages share their bandwidth between the flows).
  uint64_t stream_after(uint32_t q, uint32_t stage, uint64_t flow) const {
    const uint64_t fore = stage_free_[stage][0];
    return std::max(flow, q == 2 ? std::max(fore, stage_free_[stage][1]) : fore);
  }
  // The transfer picked as `p` for queue `q` has left the source through `stage` at `injected`.
  void injected(uint32_t q, const Pick& p, uint32_t stage, uint64_t injected) {
    hold(q, p, injected);
    stage_free_[stage][q == 2] = injected;
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

 private:
  uint32_t sends_ = 1;
  UnitPool pool_[3];
  // Per first stage: when the last transfer through it left, of the foreground queues (transfer,
  // host) and of the background queue.
  std::vector<std::array<uint64_t, 2>> stage_free_;
};

}  // namespace tpusim
