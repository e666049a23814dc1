// Parameters of a chip's HBM (high-bandwidth memory).
#pragma once
#include <cstdint>
#include <string>

#include "base/enum_names.h"

namespace tpusim {

// Who owns a chip's HBM: per_core, each core 1/cores of size, bandwidth and channels (v2/v3);
// shared, all cores share the chip's HBM (v4 and later).
enum class HbmOwnership { kPerCore, kShared };
inline const NameTable<HbmOwnership>& enum_names(HbmOwnership) {
  static const NameTable<HbmOwnership> t = {{HbmOwnership::kPerCore, "per_core"}, {HbmOwnership::kShared, "shared"}};
  return t;
}

struct HbmParams {
  std::string impl;                 // model variant by name: "simple" (bandwidth + latency per channel)
  uint32_t size_gib = 0;            // capacity per chip
  double bandwidth_gbyte_per_s = 0; // peak per chip (10^9 bytes/s)
  double efficiency = 0;            // achievable fraction of peak for streaming DMA (refresh, turnarounds)
  uint32_t channels = 0;            // independent channels per chip
  double latency_ns = 0;            // request to first data
  HbmOwnership ownership = HbmOwnership::kPerCore;
};

}  // namespace tpusim
