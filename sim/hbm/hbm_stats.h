// Stats of a chip's HBM, shared by the SystemC HBM models and the analytical engine.
#pragma once
#include <cstdint>

#include "sim/base/bandwidth_stats.h"
#include "sim/base/clock.h"
#include "sim/base/stats.h"

namespace tpusim {

struct HbmStats : ChipBandwidthStats {
  uint64_t requests = 0;      // channel requests (SystemC) or transfers (analytical)
  double busy_cycles = 0;     // bytes / one core's bandwidth, summed over the chip's cores (unrounded)

  void reset(double mhz, double peak) {
    *this = HbmStats{};
    clock_mhz = mhz;
    peak_gbyte_per_s = peak;
  }
  void declare(StatGroup& g) const {
    g.counter("bytes", &bytes, "bytes", "bytes moved through HBM");
    g.counter("requests", &requests, "requests", "requests served");
    g.derived("busy_cycles", [this] { return busy_cycles; }, "cycles",
              "time the bytes occupy a core's bandwidth (bytes / per-core rate), summed over cores");
    declare_rates(g, "achieved / peak chip bandwidth (efficiency not applied)");
  }
};

// One HBM channel (SystemC simple model).
struct HbmChannelStats {
  uint64_t bytes = 0;
  uint64_t requests = 0;
  double busy_cycles = 0;

  void reset() { *this = HbmChannelStats{}; }
  void declare(StatGroup& g) const {
    g.counter("bytes", &bytes, "bytes", "bytes served by the channel");
    g.counter("requests", &requests, "requests", "requests served by the channel");
    g.derived("busy_cycles", [this] { return busy_cycles; }, "cycles", "time the channel's bandwidth was in use");
  }
};

}  // namespace tpusim
