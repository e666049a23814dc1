// MXU timing formulas, shared by the SystemC MXU and the analytical engine.
//
// Weight-stationary systolic array of R x C bf16 multipliers with fp32 accumulation:
//  * weight load: k weight rows are shifted in at `weight_load_rows_per_cycle`; with two weight
//    buffers the load of the next tile overlaps streaming against the current one.
//  * streaming: LHS rows enter one per cycle (per pass); an fp32 operand at precision high/highest
//    is split into 3/6 bf16 passes (PyTorch/XLA torch_xla.backends docs), each a full stream.
//  * latency: a row's partial sums cross R rows and its inputs cross C columns before the result
//    leaves the array (fill + drain = R + C cycles); consecutive streams on the same array
//    pipeline, so latency is paid once per dependent result, not per stream.
#pragma once
#include <cstdint>

#include "sim/hw/mxu_params.h"

namespace tpusim {

inline uint64_t mxu_weight_load_cycles(const MxuParams& p, uint32_t k) {
  return (uint64_t(k) + p.weight_load_rows_per_cycle - 1) / p.weight_load_rows_per_cycle;
}

// Occupancy of the streaming path: rows x passes / rows-per-cycle.
// Row slots of a stream: rows x bf16 passes, `packing` narrow-precision rows sharing one slot (int8
// and fp8 at twice the bf16 rate: MxuParams::int8_rate, fp8_rate).
inline uint64_t mxu_row_slots(uint32_t rows, uint32_t passes, uint32_t packing = 1) {
  return (uint64_t(rows) * passes + packing - 1) / packing;
}
inline uint64_t mxu_stream_cycles(const MxuParams& p, uint32_t rows, uint32_t passes, uint32_t packing = 1) {
  const uint64_t row_slots = mxu_row_slots(rows, passes, packing);
  return (row_slots + p.lhs_rows_per_cycle - 1) / p.lhs_rows_per_cycle;
}

// From the last LHS row entering to its result leaving the array.
inline uint64_t mxu_fill_drain_cycles(const MxuParams& p) { return uint64_t(p.rows) + p.cols; }

}  // namespace tpusim
