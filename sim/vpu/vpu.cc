#include "sim/vpu/vpu.h"

namespace tpusim {

Vpu::Vpu(sc_core::sc_module_name name)
    : sc_module(name), in("in"), group_(this->name()), track_(TraceNames::of(this->name())) {
  stats_.declare(group_);
  in.bind(*this);
}

void Vpu::begin_run(isa::StreamView stream, const RunContext* run, uint32_t main_blocks, uint32_t async_blocks) {
  stream_ = stream;
  run_ = run;
  unit_.reset(p_, main_blocks, async_blocks);
  stats_.reset();
}

// In order within its queue: a block whose deps complete at `ready` starts when the VPU is free.
uint64_t Vpu::issue(uint32_t i, uint64_t ready_ps) {
  const isa::Instr& ins = stream_[i];
  // Nothing issued from now on starts before now: every completion the sequencer learns of at
  // time t lies at or after t, and a block waiting behind its queue's head starts after it.
  const VpuUnit::Block b = unit_.place(ins.async, ready_ps, ins.vpu, sc_core::sc_time_stamp().value(), run_->clock.period_ps);
  stats_.block(ins.vpu, b.cycles);
  if (run_->trace) {
    run_->trace->complete({track_.process, track_.track, ins.label, run_->cycle_of_ps(b.start), b.cycles, run_->clock_mhz, 0});
  }
  return b.done;
}

}  // namespace tpusim
