#include "sim/vpu/vpu.h"

#include "sim/vpu/vpu_timing.h"

namespace tpusim {

using sc_core::sc_time;

Vpu::Vpu(sc_core::sc_module_name name)
    : sc_module(name), in("in"), done("done"), group_(this->name()), track_(TraceNames::of(this->name())) {
  SC_HAS_PROCESS(Vpu);
  stats_.declare(group_);
  SC_METHOD(step);
}

void Vpu::begin_run(const isa::CoreProgram* prog, const RunContext* run) {
  prog_ = prog;
  run_ = run;
  free_ = sc_core::SC_ZERO_TIME;
  stats_.reset();
}

void Vpu::step() {
  const sc_time now = sc_core::sc_time_stamp();
  if (now < free_) return next_trigger(free_ - now);
  uint32_t i;
  if (!prog_ || !in->nb_read(i)) return next_trigger(in->data_written_event());
  const isa::Instr& ins = prog_->instrs[i];
  const uint64_t c = vpu_issue_cycles(p_, ins.vpu);
  stats_.block(ins.vpu, c);
  if (run_->trace) run_->trace->complete({track_.process, track_.track, ins.label, run_->cycle(now), c, run_->clock_mhz, 0});
  free_ = now + run_->clock.cycles(c);
  done->complete(i, run_->clock.cycles(c + p_.pipeline_latency_cycles));
  next_trigger(run_->clock.cycles(c));
}

}  // namespace tpusim
