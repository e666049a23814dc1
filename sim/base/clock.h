// The one place where time units are converted. Inside a block, time is integer cycles of its clock.
#pragma once
#include <cmath>
#include <cstdint>

namespace tpusim {

struct Clock {
  double mhz = 0;

  double seconds(uint64_t cycles) const { return double(cycles) / (mhz * 1e6); }
  double microseconds(uint64_t cycles) const { return double(cycles) / mhz; }
  // Durations round up: a transfer that needs 3.2 cycles occupies 4.
  uint64_t cycles_from_ns(double ns) const { return uint64_t(std::ceil(ns * mhz / 1e3 - 1e-9)); }
  // A bandwidth in 10^9 bytes/s seen from this clock: bytes per cycle.
  double bytes_per_cycle(double gbyte_per_s) const { return gbyte_per_s * 1e3 / mhz; }
};

}  // namespace tpusim
