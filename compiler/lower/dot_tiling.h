// The tiling of a dot kernel: which operand streams through the MXUs, the tile sizes, which
// operands stay resident in VMEM, the buffers and the loop order. A pure function of the dot's
// sizes, the stored bytes and vector work of what the kernel loads, computes and stores (a
// DotProblem, built from the graph by dot_parts.h), the VMEM it may use and the chip; the emission
// (lower_dot.cc) walks the result. The cost model and its rules are described at the top of
// dot_tiling.cc.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "sim/hw/hw_config.h"
#include "sim/isa/program.h"

namespace tpusim::compiler {

// What one dot operand loads and prepares. Its inputs are "large" ones (read block by block with
// the operand's tiles) and "small" ones (at most 1/8 of the operand's elements, such as a
// broadcast's source: held whole in VMEM, unless no tiling fits beside them).
struct DotOperandLoad {
  uint64_t large_bytes = 0;               // stored bytes of the large inputs
  std::vector<uint64_t> small_bytes;      // stored bytes of each small input, in the kernel's order
  isa::VpuWork prep;  // over the whole operand: fused producers, conversion to bf16, the MXU-ready copy
};

// A dot [B x M x K] . [B x K x N] with its operand (prologue) and output (epilogue) fusion.
struct DotProblem {
  int64_t batch = 1, m = 0, k = 0, n = 0;
  uint32_t passes = 1;         // bf16 passes per streamed row (an fp32 dot at high/highest: 3/6)
  uint32_t packing = 1;        // rows per row slot: 2 for int8/fp8 at twice the bf16 rate
  DotOperandLoad operands[2];  // lhs, rhs
  // The epilogue (output fusion, merged reductions) over the whole output, and its inputs' bytes:
  // large ones read tile by tile, small ones held whole.
  isa::VpuWork epilogue;
  uint64_t epilogue_large_bytes = 0, epilogue_small_bytes = 0;
  uint64_t out_bytes = 0;  // stored with every output tile: the root and any extra outputs
  int64_t out_elems = 0;   // of the root
  // Merged reductions (multi-output fusion): their results, stored once at the end, and whether
  // one runs along M or N (then an output tile must span that dimension, or keep partial results).
  bool merged_reduces = false;
  uint64_t reduce_out_bytes = 0;
  bool reduce_spans_m = false, reduce_spans_n = false;
};

// The chosen tiling. The streamed operand has r rows (M when the lhs streams, else N: the MXU
// computes C^T = B^T A^T as readily), the stationary one c columns; the output is cut into
// tr x tc tiles accumulated over k blocks of tk. Steps run in the order batch, row tile, column
// tile, K block (dot_steps).
struct DotTiling {
  bool fits = false;  // false: no tiling fits in the VMEM given (the fields below are unset)
  bool stream_lhs = true;
  int64_t batch = 1, r = 0, c = 0, k = 0;
  int64_t tr = 0, tc = 0, tk = 0;
  int64_t row_tiles = 0, col_tiles = 0, k_blocks = 0;
  // Resident: the streamed operand's panels (tr x K) or the whole stationary operand (K x C) stay
  // in VMEM; otherwise their blocks are re-read from HBM for every tile that needs them.
  bool streamed_resident = false, stationary_resident = false;
  uint32_t acc_tiles = 2;  // fp32 accumulator tiles in flight (accumulating, or draining to HBM)
  // VMEM of the streamed and stationary operand buffers, and of the accumulators, the epilogue's
  // inputs and the small inputs together.
  uint64_t streamed_buffer_bytes = 0, stationary_buffer_bytes = 0, fixed_buffer_bytes = 0;
  // Steps between a step's matmuls and the accumulation of their results (software pipelining
  // over the arrays' fill/drain latency).
  size_t accumulate_lag_steps = 1;
  uint64_t steps = 0;
  double est_cycles = std::numeric_limits<double>::infinity();  // the cost model's estimate
  // Per operand (lhs, rhs): small inputs streamed with the operand's blocks instead of held whole
  // (indices into DotOperandLoad::small_bytes, in the order they were given up), because no tiling
  // fit beside them.
  std::vector<size_t> streamed_small[2];

  int64_t rows_in(int64_t i) const { return std::min(tr, r - i * tr); }  // of row tile i
  int64_t cols_in(int64_t j) const { return std::min(tc, c - j * tc); }  // of column tile j
  int64_t depth_in(int64_t kb) const { return std::min(tk, k - kb * tk); }  // of K block kb
};

// Chooses the tiling with the lowest estimated cycles that fits in `vmem_bytes` on a core of `hw`.
DotTiling choose_dot_tiling(const DotProblem& p, const HwConfig& hw, uint64_t vmem_bytes);

// One step: the matmuls of K block `k` of output tile (i, j) of batch `b`.
struct DotStep {
  int64_t b, i, j, k;
};
// Every step of a tiling in its loop order (K innermost: a tile accumulates over consecutive steps).
std::vector<DotStep> dot_steps(const DotTiling& t);

}  // namespace tpusim::compiler
