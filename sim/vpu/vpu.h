// VPU: the core's vector unit, serving the main and the background (`async`) queue of vector
// blocks. When a block starts and completes is VpuUnit's rule (sim/vpu/vpu_unit.h, shared with the
// analytical engine): it occupies the VPU for vpu_issue_cycles (slot-bound, sim/vpu/vpu_timing.h)
// from max(ready, VPU free) — with background work, the VPU's earliest idle interval after that
// which fits it — and completes pipeline_latency_cycles after its last issue. The sequencer issues
// to it directly (IssueIf) and gets the completion back, so the VPU has no process of its own.
#pragma once
#include <cstdint>

#include <systemc>

#include "sim/base/core_ifs.h"
#include "sim/base/sc_support.h"
#include "sim/base/stats.h"
#include "sim/hw/vpu_params.h"
#include "sim/isa/program.h"
#include "sim/vpu/vpu_stats.h"
#include "sim/vpu/vpu_unit.h"

namespace tpusim {

class Vpu : public sc_core::sc_module, public IssueIf {
 public:
  sc_core::sc_export<IssueIf> in;        // instruction indices from the sequencer

  explicit Vpu(sc_core::sc_module_name name);

  void configure(const VpuParams& p) { p_ = p; }
  // `main_blocks` / `async_blocks`: how many blocks each queue will issue.
  void begin_run(isa::StreamView stream, const RunContext* run, uint32_t main_blocks, uint32_t async_blocks);
  void end_run(uint64_t core_cycles) { stats_.run_cycles = core_cycles; }
  const StatGroup& stats() const { return group_; }

 private:
  uint64_t issue(uint32_t instr, uint64_t ready_ps) override;

  VpuParams p_;
  isa::StreamView stream_;  // the core stream of the run (set by begin_run)
  const RunContext* run_ = nullptr;
  VpuUnit unit_;  // occupancy in kernel time (ps)
  VpuStats stats_;
  StatGroup group_;
  TraceNames track_;
};

}  // namespace tpusim
