// VPU: the core's vector unit, one in-order queue of vector blocks. A block occupies the VPU for
// vpu_issue_cycles (slot-bound, sim/vpu/vpu_timing.h) and completes pipeline_latency_cycles after
// its last issue. The sequencer issues to it directly (IssueIf): a block starts at max(issue, VPU
// free) and reports its completion at once, so the VPU has no process of its own.
#pragma once
#include <cstdint>

#include <systemc>

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
  sc_core::sc_port<CompletionIf> done;   // to the core's sequencer

  explicit Vpu(sc_core::sc_module_name name);

  void configure(const VpuParams& p) { p_ = p; }
  void begin_run(const isa::CoreProgram* prog, const RunContext* run);
  void end_run(uint64_t core_cycles) { stats_.run_cycles = core_cycles; }
  const StatGroup& stats() const { return group_; }

 private:
  void issue(uint32_t instr) override;

  VpuParams p_;
  const isa::CoreProgram* prog_ = nullptr;
  const RunContext* run_ = nullptr;
  sc_core::sc_time free_;
  VpuStats stats_;
  StatGroup group_;
  TraceNames track_;
};

}  // namespace tpusim
