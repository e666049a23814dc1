// Parameters of a TensorCore's DMA engines (HBM <-> VMEM).
#pragma once
#include <cstdint>

namespace tpusim {

struct DmaParams {
  uint32_t engines = 0;        // transfers in flight at once per core
  uint32_t setup_cycles = 0;   // descriptor issue to first request, per transfer (core cycles)
  uint32_t chunk_bytes = 0;    // a transfer is cut into requests of this size, spread over HBM channels
};

}  // namespace tpusim
