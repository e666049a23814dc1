// Parameters of a chip's HBM (high-bandwidth memory).
#pragma once
#include <cstdint>
#include <string>

namespace tpusim {

struct HbmParams {
  std::string impl;                 // model variant by name: "simple" (bandwidth + latency per channel)
  uint32_t size_gib = 0;            // capacity per chip
  double bandwidth_gbyte_per_s = 0; // peak per chip (10^9 bytes/s)
  double efficiency = 0;            // achievable fraction of peak for streaming DMA (refresh, turnarounds)
  uint32_t channels = 0;            // independent channels per chip
  double latency_ns = 0;            // request to first data
  std::string ownership;            // "per_core": each core owns 1/cores of size, bandwidth and channels
                                    // (v2/v3); "shared": all cores share the chip's HBM (v4)
};

}  // namespace tpusim
