// An MXU's two paths: when a weight load or a matmul starts and completes. One model for the
// SystemC MXU (sim/mxu/mxu.h) and the analytical engine.
//
// Rule (formulas: sim/mxu/mxu_timing.h): each path is an in-order unit; an instruction ready at
// `ready` starts at max(ready, the path free).
//  * weight-load path: a kMxuWeights occupies it mxu_weight_load_cycles and completes at its end;
//  * streaming path: a kMxuMatmul occupies it mxu_stream_cycles and completes
//    mxu_fill_drain_cycles after (back-to-back matmuls pipeline).
// Times are in any unit: `period` is the length of a cycle in it (SystemC: kernel ps; the
// analytical engine: cycles, period 1).
#pragma once
#include <algorithm>
#include <cstdint>

#include "sim/hw/mxu_params.h"
#include "sim/isa/program.h"
#include "sim/mxu/mxu_timing.h"

namespace tpusim {

class MxuPaths {
 public:
  struct Op {
    uint64_t start = 0;   // on the path
    uint64_t cycles = 0;  // occupancy of the path
    uint64_t done = 0;    // completion
  };

  void reset() { weights_free_ = stream_free_ = 0; }
  Op weights(const MxuParams& p, const isa::Instr& ins, uint64_t ready, uint64_t period = 1) {
    Op o{std::max(ready, weights_free_), mxu_weight_load_cycles(p, ins.k), 0};
    o.done = weights_free_ = o.start + o.cycles * period;
    return o;
  }
  Op matmul(const MxuParams& p, const isa::Instr& ins, uint64_t ready, uint64_t period = 1) {
    Op o{std::max(ready, stream_free_), mxu_stream_cycles(p, ins.rows, ins.passes, ins.packing), 0};
    stream_free_ = o.start + o.cycles * period;
    o.done = stream_free_ + mxu_fill_drain_cycles(p) * period;
    return o;
  }

 private:
  uint64_t weights_free_ = 0, stream_free_ = 0;
};

}  // namespace tpusim
