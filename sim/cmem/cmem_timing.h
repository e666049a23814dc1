// CMEM/DMA timing formulas, shared by the SystemC CMEM + DMA and the analytical engine.
//
// A DMA naming CMEM (isa::MemSpace::kCmem) is served by the chip's CMEM instead of its HBM: the
// same DMA engine and descriptor setup, then the bytes at the CMEM's bandwidth after its latency.
// CMEM is on-chip SRAM (Jouppi et al., ISCA 2023): no refresh or bus turnarounds, so unlike HBM no
// efficiency derate applies, and it is one bandwidth server per chip (no channel interleave):
//   transfer = ceil(bytes / cmem_bytes_per_cycle)   cycles of occupancy, whole cycles
//   complete = start + setup + max(0, queueing) + transfer + latency
// (the rate and latency in core cycles: sim/hw/resolved_hw.h). Like HBM's, latency is pipelined
// (it overlaps other transfers), bandwidth is not. Both cores of a chip see the whole chip
// bandwidth, as with v4's shared HBM; when they overlap they contend in the SystemC model (one
// server per chip), not in the analytical one.
// The bandwidth and latency are assumptions (no published figure: see docs/hardware.md).
#pragma once
#include <cmath>
#include <cstdint>

#include "sim/hw/resolved_hw.h"

namespace tpusim {

// Cycles a transfer occupies the chip's CMEM bandwidth.
inline uint64_t cmem_transfer_cycles(const ResolvedHw& r, uint64_t bytes) {
  return bytes ? uint64_t(std::ceil(double(bytes) / r.cmem_bytes_per_cycle)) : 0;
}

}  // namespace tpusim
