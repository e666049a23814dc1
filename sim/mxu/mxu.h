// MXU: a weight-stationary systolic array with two independent paths, each an in-order queue fed
// by the sequencer:
//  * weight-load path: a kMxuWeights occupies it for mxu_weight_load_cycles and completes when
//    the tile is in (so the next load can start right after: double buffering is the compiler's
//    deps, see program.h);
//  * streaming path: a kMxuMatmul occupies it for mxu_stream_cycles and completes
//    mxu_fill_drain_cycles after its stream ends, so back-to-back matmuls pipeline.
// Timing comes only from sim/mxu/mxu_timing.h, the paths' rule from sim/mxu/mxu_paths.h (shared
// with the analytical engine). The sequencer issues to each path directly (IssueIf): the path
// starts an instruction at max(ready, path free) and returns its completion, so the MXU has no
// process of its own (no activation per instruction).
#pragma once
#include <cstdint>
#include <string>

#include <systemc>

#include "sim/base/core_ifs.h"
#include "sim/base/sc_support.h"
#include "sim/base/stats.h"
#include "sim/hw/mxu_params.h"
#include "sim/isa/program.h"
#include "sim/mxu/mxu_paths.h"
#include "sim/mxu/mxu_stats.h"

namespace tpusim {

class Mxu : public sc_core::sc_module {
 public:
  sc_core::sc_export<IssueIf> weights_in;  // instruction indices for the weight-load path
  sc_core::sc_export<IssueIf> stream_in;   // instruction indices for the streaming path

  explicit Mxu(sc_core::sc_module_name name);

  void configure(const MxuParams& p);
  void begin_run(isa::StreamView stream, const RunContext* run);
  void end_run(uint64_t core_cycles) { stats_.run_cycles = core_cycles; }
  const StatGroup& stats() const { return group_; }

 private:
  struct Path final : IssueIf {
    Mxu* mxu = nullptr;
    bool weights = false;
    uint64_t issue(uint32_t instr, uint64_t ready_ps) override {
      return weights ? mxu->start_weights(instr, ready_ps) : mxu->start_stream(instr, ready_ps);
    }
  };
  uint64_t start_weights(uint32_t instr, uint64_t ready_ps);
  uint64_t start_stream(uint32_t instr, uint64_t ready_ps);

  Path weights_path_, stream_path_;

  MxuParams p_;
  isa::StreamView stream_;  // the core stream of the run (set by begin_run)
  const RunContext* run_ = nullptr;
  MxuPaths paths_;  // in kernel time (ps)
  MxuStats stats_;
  StatGroup group_;
  TraceNames stream_track_, weights_track_;
};

}  // namespace tpusim
