// VPU: the core's vector unit, serving the main and the background (`async`) queue of vector
// blocks. A block occupies the VPU for vpu_issue_cycles (slot-bound, sim/vpu/vpu_timing.h) and
// completes pipeline_latency_cycles after its last issue. The sequencer issues to it directly
// (IssueIf): a block starts at max(ready, VPU free) — with background work, at the VPU's earliest
// idle interval after that which fits it (sim/base/busy_calendar.h) — and returns its completion,
// so the VPU has no process of its own.
#pragma once
#include <cstdint>

#include <systemc>

#include "sim/base/busy_calendar.h"
#include "sim/base/sc_support.h"
#include "sim/base/stats.h"
#include "sim/core/core_ifs.h"
#include "sim/isa/program.h"
#include "sim/vpu/vpu_params.h"
#include "sim/vpu/vpu_stats.h"

namespace tpusim {

class Vpu : public sc_core::sc_module, public IssueIf {
 public:
  sc_core::sc_export<IssueIf> in;        // instruction indices from the sequencer

  explicit Vpu(sc_core::sc_module_name name);

  void configure(const VpuParams& p) { p_ = p; }
  // `main_blocks` / `async_blocks`: how many blocks each queue will issue.
  void begin_run(const isa::CoreProgram* prog, const RunContext* run, uint32_t main_blocks, uint32_t async_blocks);
  void end_run(uint64_t core_cycles) { stats_.run_cycles = core_cycles; }
  const StatGroup& stats() const { return group_; }

 private:
  uint64_t issue(uint32_t instr, uint64_t ready_ps) override;

  VpuParams p_;
  const isa::CoreProgram* prog_ = nullptr;
  const RunContext* run_ = nullptr;
  SharedUnit unit_;  // occupancy in kernel time (ps)
  VpuStats stats_;
  StatGroup group_;
  TraceNames track_;
};

}  // namespace tpusim
