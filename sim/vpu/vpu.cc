#include "sim/vpu/vpu.h"

#include <algorithm>

#include "sim/vpu/vpu_timing.h"

namespace tpusim {

Vpu::Vpu(sc_core::sc_module_name name)
    : sc_module(name), in("in"), group_(this->name()), track_(TraceNames::of(this->name())) {
  stats_.declare(group_);
  in.bind(*this);
}

void Vpu::begin_run(const isa::CoreProgram* prog, const RunContext* run) {
  prog_ = prog;
  run_ = run;
  free_ps_ = 0;
  stats_.reset();
}

// In order: a block whose deps complete at `ready` starts when the VPU is free.
uint64_t Vpu::issue(uint32_t i, uint64_t ready_ps) {
  const uint64_t start = std::max(ready_ps, free_ps_);
  const isa::Instr& ins = prog_->instrs[i];
  const uint64_t c = vpu_issue_cycles(p_, ins.vpu);
  stats_.block(ins.vpu, c);
  if (run_->trace) {
    run_->trace->complete({track_.process, track_.track, ins.label, run_->cycle_of_ps(start), c, run_->clock_mhz, 0});
  }
  free_ps_ = start + c * run_->clock.period_ps;
  return free_ps_ + p_.pipeline_latency_cycles * run_->clock.period_ps;
}

}  // namespace tpusim
