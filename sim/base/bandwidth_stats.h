// What a chip's memory (HBM, CMEM) reports about its bandwidth: bytes moved over the chip's run
// time against the configured peak. The memory's stats structs extend it with their own counters.
#pragma once
#include <cstdint>

#include "sim/base/clock.h"
#include "sim/base/stats.h"

namespace tpusim {

struct ChipBandwidthStats {
  uint64_t bytes = 0;
  uint64_t run_cycles = 0;  // the chip's cycles in this run: its slowest core (set when the run ends)
  double clock_mhz = 0;
  double peak_gbyte_per_s = 0;

  double achieved_gbyte_per_s() const {
    return run_cycles ? double(bytes) / Clock{clock_mhz}.seconds(run_cycles) / 1e9 : 0.0;
  }
  // Declares achieved_gbyte_per_s and utilization (`peak`: what the utilization is a fraction of).
  void declare_rates(StatGroup& g, const char* peak) const {
    g.derived("achieved_gbyte_per_s", [this] { return achieved_gbyte_per_s(); }, "GB/s",
              "bytes / chip run time (10^9 bytes/s)");
    g.derived("utilization", [this] { return peak_gbyte_per_s > 0 ? achieved_gbyte_per_s() / peak_gbyte_per_s : 0.0; },
              "fraction", peak);
  }
};

}  // namespace tpusim
