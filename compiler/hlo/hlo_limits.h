// Bounds on HLO text, so that hostile input cannot recurse without limit or allocate without bound
// (docs/hlo.md, Limits). Each is far above what XLA prints for real models.
#pragma once
#include <cstddef>
#include <cstdint>

namespace tpusim::hlo {

// Nesting of tuple shapes, constant literals and attribute braces/brackets/parentheses.
inline constexpr int kMaxNesting = 64;
// Dimensions of one array shape (XLA's own limit is far lower in practice; TPU layouts use <= 8).
inline constexpr size_t kMaxRank = 64;
// A dimension size, and a product of sizes (e.g. an iota replica-group list), as int64 without overflow.
inline constexpr int64_t kMaxDimSize = int64_t{1} << 48;
// Devices expanded from one iota replica_groups / sharding device list.
inline constexpr int64_t kMaxDeviceList = int64_t{1} << 20;
// A module's text (a 1 GiB dump is ~10M instructions).
inline constexpr size_t kMaxTextBytes = size_t{1} << 30;

}  // namespace tpusim::hlo
