#include "workloads/loop/collective_time.h"

#include <algorithm>

namespace tpusim {

namespace {

constexpr std::string_view kKernels[3] = {"all-reduce", "all-gather", "reduce-scatter"};

// Total length of the union of intervals.
double union_length(std::vector<std::pair<double, double>> v) {
  std::sort(v.begin(), v.end());
  double total = 0, from = 0, to = -1;
  for (auto [a, b] : v) {
    if (a > to) {
      if (to > from) total += to - from;
      from = a;
      to = b;
    } else {
      to = std::max(to, b);
    }
  }
  if (to > from) total += to - from;
  return total;
}

}  // namespace

void CollectiveTimer::complete(const TraceEvent& ev) {
  if (inner_) inner_->complete(ev);
  if (ev.process != "slice.chip0" || ev.track.substr(0, 5) != "core0" || ev.clock_mhz <= 0) return;
  for (int k = 0; k < 3; ++k) {
    const std::string_view kernel = kKernels[k];
    if (ev.name.size() > kernel.size() && ev.name.substr(0, kernel.size()) == kernel && ev.name[kernel.size()] == ':') {
      const double start = double(ev.start_cycle) / (ev.clock_mhz * 1e6);
      spans_[k].push_back({start, start + double(ev.dur_cycles) / (ev.clock_mhz * 1e6)});
      return;
    }
  }
}

CollectiveTimes CollectiveTimer::times() const {
  return {union_length(spans_[0]), union_length(spans_[1]), union_length(spans_[2])};
}

}  // namespace tpusim
