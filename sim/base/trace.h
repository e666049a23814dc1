// Tracing is an observer: blocks call TraceSink::complete() once per finished operation; a null sink
// costs one pointer test. Sinks (Chrome JSON, CSV) live in traces/.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace tpusim {

struct TraceEvent {
  std::string_view process;  // pid: chip or host, e.g. "slice.chip0"
  std::string_view track;    // tid: lane within the process, e.g. "core0.mxu1", "hbm.ch3"
  std::string_view name;     // operation, e.g. the HLO fusion label
  uint64_t start_cycle = 0;  // in the clock of `clock_mhz`
  uint64_t dur_cycles = 0;
  double clock_mhz = 0;
  uint64_t bytes = 0;  // moved bytes (DMA/HBM), 0 if not applicable
  int64_t step = -1;   // training step the event belongs to (written as args.step); -1: none
};

class TraceSink {
 public:
  virtual ~TraceSink() = default;
  virtual void complete(const TraceEvent& ev) = 0;
};

}  // namespace tpusim
