// Stats of a chip's CMEM, shared by the SystemC CMEM and the analytical engine (reported only
// when a program used it).
#pragma once
#include <cstdint>

#include "sim/base/bandwidth_stats.h"

namespace tpusim {

struct CmemStats : ChipBandwidthStats {
  uint64_t transfers = 0;
  uint64_t busy_cycles = 0;   // whole-cycle occupancy of the bandwidth, summed over transfers

  void reset(double mhz, double peak) {
    *this = CmemStats{};
    clock_mhz = mhz;
    peak_gbyte_per_s = peak;
  }
  bool used() const { return transfers > 0; }
  void declare(StatGroup& g) const {
    g.counter("bytes", &bytes, "bytes", "bytes moved through CMEM");
    g.counter("transfers", &transfers, "transfers", "DMA transfers served");
    g.counter("busy_cycles", &busy_cycles, "cycles", "time the bytes occupy the CMEM bandwidth, summed over transfers");
    declare_rates(g, "achieved / peak chip CMEM bandwidth");
  }
};

}  // namespace tpusim
