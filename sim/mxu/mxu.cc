#include "sim/mxu/mxu.h"

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
  SC_HAS_PROCESS(Mxu);
  stats_.declare(group_);
  SC_METHOD(weights_step);
  SC_METHOD(stream_step);
}

void Mxu::configure(const MxuParams& p) { p_ = p; }

void Mxu::begin_run(const isa::CoreProgram* prog, const RunContext* run) {
  prog_ = prog;
  run_ = run;
  weights_free_ = stream_free_ = sc_core::SC_ZERO_TIME;
  stats_.reset(p_);
}

// Both paths: wait for the path to be free, take the next instruction of the queue, report its
// completion time to the sequencer, stay busy for its occupancy. First activation (kernel
// initialisation) just subscribes to the queue.
void Mxu::weights_step() {
  const sc_time now = sc_time_stamp();
  if (now < weights_free_) return next_trigger(weights_free_ - now);
  uint32_t i;
  if (!prog_ || !weights_in->nb_read(i)) return next_trigger(weights_in->data_written_event());
  const isa::Instr& ins = prog_->instrs[i];
  const uint64_t c = mxu_weight_load_cycles(p_, ins.k);
  stats_.weights(c);
  if (run_->trace) {
    run_->trace->complete({weights_track_.process, weights_track_.track, ins.label, run_->cycle(now), c,
                           run_->clock_mhz, 0});
  }
  weights_free_ = now + run_->clock.cycles(c);
  done->complete(i, run_->clock.cycles(c));
  next_trigger(run_->clock.cycles(c));
}

void Mxu::stream_step() {
  const sc_time now = sc_time_stamp();
  if (now < stream_free_) return next_trigger(stream_free_ - now);
  uint32_t i;
  if (!prog_ || !stream_in->nb_read(i)) return next_trigger(stream_in->data_written_event());
  const isa::Instr& ins = prog_->instrs[i];
  const uint64_t c = mxu_stream_cycles(p_, ins.rows, ins.passes);
  stats_.matmul(ins, c);
  if (run_->trace) {
    run_->trace->complete({stream_track_.process, stream_track_.track, ins.label, run_->cycle(now), c,
                           run_->clock_mhz, 0});
  }
  stream_free_ = now + run_->clock.cycles(c);
  done->complete(i, run_->clock.cycles(c + mxu_fill_drain_cycles(p_)));
  next_trigger(run_->clock.cycles(c));
}

}  // namespace tpusim
