// Stats of a bandwidth stage of the network (an ICI link direction, a chip's NoC, a PCIe
// direction), shared by the SystemC blocks and the analytical engine.
#pragma once
#include <cstdint>

#include "sim/base/stats.h"

namespace tpusim {

struct LinkStats {
  uint64_t bytes = 0;
  uint64_t packets = 0;
  double bytes_per_cycle = 0;  // the stage's rate (for the derived figures)
  uint64_t run_cycles = 0;     // cycles of the run (set when the run ends)

  void reset(double rate) {
    *this = LinkStats{};
    bytes_per_cycle = rate;
  }
  bool used() const { return packets > 0; }
  double busy_cycles() const { return bytes_per_cycle > 0 ? double(bytes) / bytes_per_cycle : 0.0; }
  void declare(StatGroup& g) const {
    g.counter("bytes", &bytes, "bytes", "bytes carried");
    g.counter("packets", &packets, "packets", "packets carried (ici.packet_bytes each, the last of a message shorter)");
    g.derived("busy_cycles", [this] { return busy_cycles(); }, "cycles",
              "time the bytes occupy the bandwidth (bytes / bytes per cycle)");
    g.derived("utilization", [this] { return run_cycles ? busy_cycles() / double(run_cycles) : 0.0; }, "fraction",
              "busy_cycles / cycles of the run (device_cycles)");
  }
};

}  // namespace tpusim
