#include "sim/mxu/mxu.h"

namespace tpusim {

Mxu::Mxu(sc_core::sc_module_name name)
    : sc_module(name),
      weights_in("weights_in"),
      stream_in("stream_in"),
      group_(this->name()),
      stream_track_(TraceNames::of(this->name())),
      weights_track_(TraceNames::of(this->name(), ".weights")) {
  stats_.declare(group_);
  weights_path_.mxu = stream_path_.mxu = this;
  weights_path_.weights = true;
  weights_in.bind(weights_path_);
  stream_in.bind(stream_path_);
}

void Mxu::configure(const MxuParams& p) { p_ = p; }

void Mxu::begin_run(isa::StreamView stream, const RunContext* run) {
  stream_ = stream;
  run_ = run;
  paths_.reset();
  stats_.reset(p_);
}

// Both paths are in order: an instruction whose deps complete at `ready` starts when the path is
// free.
uint64_t Mxu::start_weights(uint32_t i, uint64_t ready_ps) {
  const isa::Instr& ins = stream_[i];
  const MxuPaths::Op o = paths_.weights(p_, ins, ready_ps, run_->clock.period_ps);
  stats_.weights(o.cycles);
  if (run_->trace) {
    run_->trace->complete({weights_track_.process, weights_track_.track, ins.label, run_->cycle_of_ps(o.start), o.cycles,
                           run_->clock_mhz, 0});
  }
  return o.done;
}

uint64_t Mxu::start_stream(uint32_t i, uint64_t ready_ps) {
  const isa::Instr& ins = stream_[i];
  const MxuPaths::Op o = paths_.matmul(p_, ins, ready_ps, run_->clock.period_ps);
  stats_.matmul(ins, o.cycles);
  if (run_->trace) {
    run_->trace->complete({stream_track_.process, stream_track_.track, ins.label, run_->cycle_of_ps(o.start), o.cycles,
                           run_->clock_mhz, 0});
  }
  return o.done;
}

}  // namespace tpusim
