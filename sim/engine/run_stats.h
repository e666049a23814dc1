// The run-level stat group ("slice"), identical for both engines.
#pragma once
#include <cstdint>

#include "sim/base/stats.h"
#include "sim/engine/engine.h"

namespace tpusim {

inline void add_run_stats(RunResult& r, uint64_t instructions) {
  uint64_t cores = r.cores.size();
  StatGroup g("slice");
  g.counter("device_cycles", &r.device_cycles, "cycles", "program start to the last completion on any core");
  g.derived("device_time_s", [&r] { return r.device_time_s; }, "s", "device_cycles at the core clock");
  g.counter("cores", &cores, "cores", "cores that ran a stream");
  g.counter("instructions", &instructions, "instructions", "instructions in the program");
  r.stats[g.name()] = g.dump();
}

}  // namespace tpusim
