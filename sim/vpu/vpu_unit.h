// The VPU's occupancy: when a vector block starts and completes. One model for the SystemC VPU
// (sim/vpu/vpu.h) and the analytical engine.
//
// Rule: the VPU serves the core's main and background (`async`) VPU queues, each in order, one
// block at a time. A block ready at `ready` occupies the VPU for vpu_issue_cycles (formula:
// sim/vpu/vpu_timing.h) from its start, the VPU's earliest idle interval at or after
// max(ready, its queue's previous start) that fits it (with one queue: max(ready, VPU free);
// sim/base/busy_calendar.h, SharedUnit), and completes pipeline_latency_cycles after its last
// issue. Both engines place a block as soon as its deps' completion times are known, so of two
// blocks competing for an interval the one placed first keeps it (which one that is depends on
// the engine: sim/README.md, "Background queues").
// Times are in any unit: `period` is the length of a cycle in it (SystemC: kernel ps; the
// analytical engine: cycles, period 1).
#pragma once
#include <cstdint>

#include "sim/base/busy_calendar.h"
#include "sim/hw/vpu_params.h"
#include "sim/isa/program.h"
#include "sim/vpu/vpu_timing.h"

namespace tpusim {

class VpuUnit {
 public:
  struct Block {
    uint64_t start = 0;   // first issue
    uint64_t cycles = 0;  // issue cycles (the occupancy)
    uint64_t done = 0;    // result ready
  };

  // `main_blocks` / `async_blocks`: how many blocks each queue will issue.
  void reset(const VpuParams& p, uint32_t main_blocks, uint32_t async_blocks) {
    p_ = &p;
    unit_.reset({main_blocks, async_blocks});
  }
  // Places block `w` of the background queue or the main one, ready at `ready`. `floor`: no
  // later block starts before it (SharedUnit::place).
  Block place(bool background, uint64_t ready, const isa::VpuWork& w, uint64_t floor, uint64_t period = 1) {
    Block b;
    b.cycles = vpu_issue_cycles(*p_, w);
    b.start = unit_.place(background ? 1 : 0, ready, b.cycles * period, floor);
    b.done = b.start + (b.cycles + p_->pipeline_latency_cycles) * period;
    return b;
  }
  // Whether a block occupies the VPU at all (a zero-work block never waits for it).
  static bool occupies(const VpuParams& p, const isa::VpuWork& w) { return vpu_issue_cycles(p, w) > 0; }

 private:
  const VpuParams* p_ = nullptr;
  SharedUnit unit_;
};

}  // namespace tpusim
