// CMEM/DMA timing formulas, shared by the SystemC CMEM + DMA and the analytical engine.
//
// A DMA naming CMEM (isa::MemSpace::kCmem) is served by the chip's CMEM instead of its HBM: the
// same DMA engine and descriptor setup, then the bytes at the CMEM's bandwidth after its latency.
// CMEM is on-chip SRAM (Jouppi et al., ISCA 2023): no refresh or bus turnarounds, so unlike HBM no
// efficiency derate applies, and it is one bandwidth server per chip (no channel interleave):
//   transfer = ceil(bytes / (bandwidth / clock))   cycles of occupancy, whole cycles
//   complete = start + setup + max(0, queueing) + transfer + latency
// Like HBM's, latency is pipelined (it overlaps other transfers), bandwidth is not. Both cores of
// a chip see the whole chip bandwidth, as with v4's shared HBM (hbm_timing.h); when they overlap
// they contend in the SystemC model (one server per chip), not in the analytical one.
// The bandwidth and latency are assumptions (no published figure: see docs/hardware.md).
#pragma once
#include <cmath>
#include <cstdint>

#include "sim/base/clock.h"
#include "sim/hw/chip_params.h"

namespace tpusim {

// CMEM bytes per core-clock cycle (0 when the chip has none).
inline double cmem_bytes_per_cycle(const ChipParams& chip) {
  return has_cmem(chip) ? Clock{chip.core.clock_mhz}.bytes_per_cycle(chip.cmem->bandwidth_gbyte_per_s) : 0.0;
}

// Cycles a transfer occupies the chip's CMEM bandwidth.
inline uint64_t cmem_transfer_cycles(const ChipParams& chip, uint64_t bytes) {
  return bytes ? uint64_t(std::ceil(double(bytes) / cmem_bytes_per_cycle(chip))) : 0;
}

// CMEM access latency in whole core cycles.
inline uint64_t cmem_latency_cycles(const ChipParams& chip) {
  return has_cmem(chip) ? Clock{chip.core.clock_mhz}.cycles_from_ns(chip.cmem->latency_ns) : 0;
}

// Fixed part of a CMEM DMA: descriptor setup plus CMEM latency (core cycles).
inline uint64_t cmem_dma_fixed_cycles(const ChipParams& chip) {
  return chip.core.dma.setup_cycles + cmem_latency_cycles(chip);
}

}  // namespace tpusim
