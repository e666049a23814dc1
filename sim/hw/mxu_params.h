// Parameters of one MXU (matrix unit): a weight-stationary systolic array.
#pragma once
#include <cstdint>

namespace tpusim {

struct MxuParams {
  uint32_t count = 0;                     // MXUs per TensorCore (v2: 1, v3: 2, v4: 4)
  uint32_t rows = 0;                      // systolic array rows = contraction depth per weight tile (128)
  uint32_t cols = 0;                      // systolic array columns = output columns per tile (128)
  uint32_t weight_buffers = 0;            // resident weight tiles (2 = double buffered)
  uint32_t weight_load_rows_per_cycle = 0;  // weight rows shifted into the array per cycle
  uint32_t lhs_rows_per_cycle = 0;        // LHS rows entering the array per cycle (1 for a systolic array)
  // Narrow-precision matmuls: LHS rows an int8 (fp8) matmul streams per bf16 row slot (2: twice the
  // bf16 rate, v5e/v5p/v6e; 1: the bf16 rate, v4; 0: not supported).
  uint32_t int8_rate = 0, fp8_rate = 0;
};

}  // namespace tpusim
