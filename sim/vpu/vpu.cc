#include "sim/vpu/vpu.h"

#include <algorithm>

#include "sim/vpu/vpu_timing.h"

namespace tpusim {

using sc_core::sc_time;

Vpu::Vpu(sc_core::sc_module_name name)
    : sc_module(name), in("in"), done("done"), group_(this->name()), track_(TraceNames::of(this->name())) {
  stats_.declare(group_);
  in.bind(*this);
}

void Vpu::begin_run(const isa::CoreProgram* prog, const RunContext* run) {
  prog_ = prog;
  run_ = run;
  free_ = sc_core::SC_ZERO_TIME;
  stats_.reset();
}

// In order: a block issued now starts when the VPU is free.
void Vpu::issue(uint32_t i) {
  const sc_time now = sc_core::sc_time_stamp();
  const sc_time start = std::max(now, free_);
  const isa::Instr& ins = prog_->instrs[i];
  const uint64_t c = vpu_issue_cycles(p_, ins.vpu);
  stats_.block(ins.vpu, c);
  if (run_->trace) run_->trace->complete({track_.process, track_.track, ins.label, run_->cycle(start), c, run_->clock_mhz, 0});
  free_ = start + run_->clock.cycles(c);
  done->complete(i, free_ - now + run_->clock.cycles(p_.pipeline_latency_cycles));
}

}  // namespace tpusim
