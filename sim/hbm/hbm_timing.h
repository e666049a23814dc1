// HBM/DMA timing formulas, shared by the SystemC HBM + DMA and the analytical engine.
//
// A core streams at its share of the chip's HBM bandwidth, derated by `efficiency` (the streaming
// fraction of peak that DRAM refresh and read/write turnarounds leave): hbm_core_bytes_per_cycle
// (sim/hw/resolved_hw.h, which has the ownership rule). A transfer of B bytes occupies that
// bandwidth for B / bytes_per_cycle cycles and completes `setup + latency` cycles after it could
// first start (dma_fixed_cycles); latency overlaps with other transfers in flight (it is
// pipelined), bandwidth does not.
#pragma once
#include <cmath>
#include <cstdint>

namespace tpusim {

// Cycles a transfer occupies the core's HBM bandwidth (`core_bytes_per_cycle`: the resolved
// hbm_core_bytes_per_cycle).
inline uint64_t hbm_transfer_cycles(double core_bytes_per_cycle, uint64_t bytes) {
  return uint64_t(std::ceil(double(bytes) / core_bytes_per_cycle));
}

}  // namespace tpusim
