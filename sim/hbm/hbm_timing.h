// HBM/DMA timing formulas, shared by the SystemC HBM + DMA and the analytical engine.
//
// A core sees `bandwidth / cores` (per_core ownership, v2/v3) or the whole chip bandwidth (shared,
// v4), derated by `efficiency` (the streaming fraction of peak that DRAM refresh and read/write
// turnarounds leave). A transfer of B bytes occupies the bandwidth for B / bytes_per_cycle cycles
// and completes `setup + latency` cycles after it could first start; latency overlaps with other
// transfers in flight (it is pipelined), bandwidth does not.
#pragma once
#include <cmath>
#include <cstdint>

#include "sim/base/clock.h"
#include "sim/hw/chip_params.h"

namespace tpusim {

// HBM bytes per core-clock cycle available to one core's DMA.
inline double hbm_core_bytes_per_cycle(const ChipParams& chip) {
  Clock clk{chip.core.clock_mhz};
  double gbps = chip.hbm.bandwidth_gbyte_per_s * chip.hbm.efficiency;
  if (chip.hbm.ownership == "per_core") gbps /= chip.cores;
  return clk.bytes_per_cycle(gbps);
}

// Cycles a transfer occupies the core's HBM bandwidth (`core_bytes_per_cycle`: the above, for
// callers that keep it rather than derive it per transfer).
inline uint64_t hbm_transfer_cycles(double core_bytes_per_cycle, uint64_t bytes) {
  return uint64_t(std::ceil(double(bytes) / core_bytes_per_cycle));
}
inline uint64_t hbm_transfer_cycles(const ChipParams& chip, uint64_t bytes) {
  return hbm_transfer_cycles(hbm_core_bytes_per_cycle(chip), bytes);
}

// Fixed part of a DMA: descriptor setup plus HBM access latency (core cycles).
inline uint64_t dma_fixed_cycles(const ChipParams& chip) {
  Clock clk{chip.core.clock_mhz};
  return chip.core.dma.setup_cycles + clk.cycles_from_ns(chip.hbm.latency_ns);
}

}  // namespace tpusim
