#include "sim/mxu/mxu.h"

#include <algorithm>

#include "sim/mxu/mxu_timing.h"

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

void Mxu::begin_run(const isa::CoreProgram* prog, const RunContext* run) {
  prog_ = prog;
  run_ = run;
  weights_free_ps_ = stream_free_ps_ = 0;
  stats_.reset(p_);
}

// Both paths are in order: an instruction whose deps complete at `ready` starts when the path is
// free.
uint64_t Mxu::start_weights(uint32_t i, uint64_t ready_ps) {
  const uint64_t start = std::max(ready_ps, weights_free_ps_);
  const isa::Instr& ins = prog_->instrs[i];
  const uint64_t c = mxu_weight_load_cycles(p_, ins.k);
  stats_.weights(c);
  if (run_->trace) {
    run_->trace->complete({weights_track_.process, weights_track_.track, ins.label, run_->cycle_of_ps(start), c,
                           run_->clock_mhz, 0});
  }
  weights_free_ps_ = start + c * run_->clock.period_ps;
  return weights_free_ps_;
}

uint64_t Mxu::start_stream(uint32_t i, uint64_t ready_ps) {
  const uint64_t start = std::max(ready_ps, stream_free_ps_);
  const isa::Instr& ins = prog_->instrs[i];
  const uint64_t c = mxu_stream_cycles(p_, ins.rows, ins.passes);
  stats_.matmul(ins, c);
  if (run_->trace) {
    run_->trace->complete({stream_track_.process, stream_track_.track, ins.label, run_->cycle_of_ps(start), c,
                           run_->clock_mhz, 0});
  }
  stream_free_ps_ = start + c * run_->clock.period_ps;
  return stream_free_ps_ + mxu_fill_drain_cycles(p_) * run_->clock.period_ps;
}

}  // namespace tpusim
