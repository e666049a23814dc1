// Measures, from a simulated execution, how long core 0 of chip 0 spent in each kind of
// collective: the union of the intervals of its lanes' operations whose kernel is an all-reduce,
// an all-gather or a reduce-scatter (compiler/collectives.h names the kernels so). A trace sink
// (an observer, sim/base/trace.h) that forwards every event to an optional inner sink.
#pragma once
#include <string_view>
#include <utility>
#include <vector>

#include "sim/base/trace.h"

namespace tpusim {

struct CollectiveTimes {
  double allreduce_s = 0, allgather_s = 0, reducescatter_s = 0;  // s, core 0's wall time inside each
};

class CollectiveTimer : public TraceSink {
 public:
  explicit CollectiveTimer(TraceSink* inner) : inner_(inner) {}
  void complete(const TraceEvent& ev) override;
  CollectiveTimes times() const;

 private:
  TraceSink* inner_;
  std::vector<std::pair<double, double>> spans_[3];  // [kind]: (start_s, end_s)
};

}  // namespace tpusim
