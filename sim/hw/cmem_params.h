// Parameters of a chip's CMEM (TPU v4: a 128 MiB on-chip memory between HBM and the cores' VMEMs,
// shared by the chip's TensorCores). Optional: chips without one (v2, v3) have no `cmem:` block.
#pragma once
#include <cstdint>

namespace tpusim {

struct CmemParams {
  uint32_t size_mib = 0;             // capacity per chip; 0 disables it (as if absent)
  double bandwidth_gbyte_per_s = 0;  // peak per chip (10^9 bytes/s), shared by the chip's cores
  double latency_ns = 0;             // request to first data
};

}  // namespace tpusim
