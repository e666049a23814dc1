// Stats of a chip's CMEM, shared by the SystemC CMEM and the analytical engine (reported only
// when a program used it).
#pragma once
#include <cstdint>

#include "sim/base/clock.h"
#include "sim/base/stats.h"

namespace tpusim {

struct CmemStats {
  uint64_t bytes = 0;
  uint64_t transfers = 0;
  uint64_t busy_cycles = 0;   // whole-cycle occupancy of the bandwidth, summed over transfers
  uint64_t run_cycles = 0;    // the chip's cycles in this run: its slowest core (set when the run ends)
  double clock_mhz = 0;
  double peak_gbyte_per_s = 0;

  void reset(double mhz, double peak) {
    *this = CmemStats{};
    clock_mhz = mhz;
    peak_gbyte_per_s = peak;
  }
  bool used() const { return transfers > 0; }
  double achieved_gbyte_per_s() const {
    return run_cycles ? double(bytes) / Clock{clock_mhz}.seconds(run_cycles) / 1e9 : 0.0;
  }
  void declare(StatGroup& g) const {
    g.counter("bytes", &bytes, "bytes", "bytes moved through CMEM");
    g.counter("transfers", &transfers, "transfers", "DMA transfers served");
    g.counter("busy_cycles", &busy_cycles, "cycles", "time the bytes occupy the CMEM bandwidth, summed over transfers");
    g.derived("achieved_gbyte_per_s", [this] { return achieved_gbyte_per_s(); }, "GB/s",
              "bytes / chip run time (10^9 bytes/s)");
    g.derived("utilization", [this] { return peak_gbyte_per_s > 0 ? achieved_gbyte_per_s() / peak_gbyte_per_s : 0.0; },
              "fraction", "achieved / peak chip CMEM bandwidth");
  }
};

}  // namespace tpusim
