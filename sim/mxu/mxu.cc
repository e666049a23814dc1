#include "sim/mxu/mxu.h"

#include <algorithm>

#include "sim/mxu/mxu_timing.h"

namespace tpusim {

using sc_core::sc_time;
using sc_core::sc_time_stamp;

Mxu::Mxu(sc_core::sc_module_name name)
    : sc_module(name),
      weights_in("weights_in"),
      stream_in("stream_in"),
      done("done"),
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
  weights_free_ = stream_free_ = sc_core::SC_ZERO_TIME;
  stats_.reset(p_);
}

// Both paths are in order: an instruction issued now starts when the path is free.
void Mxu::start_weights(uint32_t i) {
  const sc_time now = sc_time_stamp();
  const sc_time start = std::max(now, weights_free_);
  const isa::Instr& ins = prog_->instrs[i];
  const uint64_t c = mxu_weight_load_cycles(p_, ins.k);
  stats_.weights(c);
  if (run_->trace) {
    run_->trace->complete({weights_track_.process, weights_track_.track, ins.label, run_->cycle(start), c,
                           run_->clock_mhz, 0});
  }
  weights_free_ = start + run_->clock.cycles(c);
  done->complete(i, weights_free_ - now);
}

void Mxu::start_stream(uint32_t i) {
  const sc_time now = sc_time_stamp();
  const sc_time start = std::max(now, stream_free_);
  const isa::Instr& ins = prog_->instrs[i];
  const uint64_t c = mxu_stream_cycles(p_, ins.rows, ins.passes);
  stats_.matmul(ins, c);
  if (run_->trace) {
    run_->trace->complete({stream_track_.process, stream_track_.track, ins.label, run_->cycle(start), c,
                           run_->clock_mhz, 0});
  }
  stream_free_ = start + run_->clock.cycles(c);
  done->complete(i, stream_free_ - now + run_->clock.cycles(mxu_fill_drain_cycles(p_)));
}

}  // namespace tpusim
