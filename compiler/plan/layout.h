// Physical layout of tensors on a TPU core: HBM and VMEM store arrays in (8, 128) tiles of 32-bit
// words over the two minor dimensions (XLA TPU layout T(8,128); bf16 packs two values per word, so
// its tiles hold 16 rows). A minor dimension of 64 therefore occupies 128 lanes: padding is real
// traffic. One vector register holds one tile: 8 sublanes x 128 lanes x 4 bytes = 4 KiB.
#pragma once
#include <cstdint>

#include "models/graph.h"

namespace tpusim::compiler {

inline int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
inline int64_t div_up(int64_t x, int64_t m) { return (x + m - 1) / m; }

constexpr int64_t kLanes = 128;
constexpr int64_t kSublanes = 8;
constexpr int64_t kVregBytes = kLanes * kSublanes * 4;

// Rows per tile for a dtype: 8 for 32-bit, 16 for bf16 (packed).
inline int64_t tile_rows(models::DType t) { return kSublanes * 4 / models::dtype_bytes(t); }

// Bytes of a tensor in tiled layout (HBM or VMEM).
inline uint64_t padded_bytes(const models::Dims& d, models::DType t) {
  const int64_t b = models::dtype_bytes(t);
  if (d.empty()) return uint64_t(b);
  if (d.size() == 1) return uint64_t(round_up(d[0], kLanes * tile_rows(t)) * b);
  int64_t outer = 1;
  for (size_t i = 0; i + 2 < d.size(); ++i) outer *= d[i];
  return uint64_t(outer * round_up(d[d.size() - 2], tile_rows(t)) * round_up(d.back(), kLanes) * b);
}

// Stored bytes of a materialized value in HBM (tiled layout).
inline uint64_t stored_bytes(const models::Graph& g, int node) {
  const models::Node& n = g.node(node);
  return padded_bytes(n.shape, n.dtype);
}

// Vector registers needed to hold a tensor (its tiles).
inline uint64_t vregs(const models::Dims& d, models::DType t) {
  return uint64_t(div_up(int64_t(padded_bytes(d, t)), kVregBytes));
}

}  // namespace tpusim::compiler
