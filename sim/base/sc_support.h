// SystemC support shared by the blocks: the clock period in kernel time, the context of one
// program run, and the trace names derived from a block's hierarchical name.
//
// Time: the kernel runs at 1 ps resolution and a clock period is a whole number of ps
// (round(1e6 / clock_mhz): 1064 ps at 940 MHz). Blocks only wait whole periods, counted from the
// run start, so cycle counts are recovered from sc_time by exact division. Conversions from ns or
// GB/s go through sim/base/clock.h's Clock, never through this period.
#pragma once
#include <cmath>
#include <cstdint>
#include <string>

#include <systemc>

#include "sim/base/progress_ticker.h"
#include "sim/base/trace.h"

namespace tpusim {

struct ScClock {
  uint64_t period_ps = 1;

  static ScClock from_mhz(double mhz) { return ScClock{uint64_t(std::llround(1e6 / mhz))}; }
  sc_core::sc_time cycles(uint64_t c) const { return sc_core::sc_time::from_value(c * period_ps); }
  uint64_t cycles_ceil(uint64_t ps) const { return (ps + period_ps - 1) / period_ps; }
};

// What every block needs to know about the current run.
struct RunContext {
  uint64_t start_ps = 0;  // kernel time of the run start (cycle 0 of the run)
  ScClock clock;
  double clock_mhz = 0;  // for trace events (their cycles are in this clock)
  TraceSink* trace = nullptr;
  ProgressTicker* ticker = nullptr;  // counts retired instructions (may be null)

  // Cycles since the run start of kernel time `t` (a whole number of periods after the start).
  uint64_t cycle(const sc_core::sc_time& t) const { return cycle_of_ps(t.value()); }
  uint64_t cycle_of_ps(uint64_t ps) const { return (ps - start_ps) / clock.period_ps; }
  uint64_t now_cycle() const { return cycle(sc_core::sc_time_stamp()); }
};

// Trace names from a hierarchical name: "slice.chip0.core0.mxu1" -> process "slice.chip0",
// track "core0.mxu1" (STYLE rule 5: one name everywhere).
struct TraceNames {
  std::string process;
  std::string track;

  static TraceNames of(const std::string& hier, const std::string& suffix = "") {
    size_t first = hier.find('.');
    size_t second = first == std::string::npos ? std::string::npos : hier.find('.', first + 1);
    if (second == std::string::npos) return {hier, suffix};
    return {hier.substr(0, second), hier.substr(second + 1) + suffix};
  }
};

}  // namespace tpusim
