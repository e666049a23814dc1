// The trace of a training run (`tpusim run --trace` on a `kind: training` workload): a bounded view
// of a run that may have hundreds of steps.
//
//  * process "host0": track `tracing` (one slice per step: tracing + dispatch), `compile` (one slice
//    per XLA compile or persistent-cache load, named after the program), `transfer` (program load,
//    parameter upload);
//  * processes "slice.chipN": per traced step one slice per core on `coreM.step`, named after the
//    program, from the step's execution start to its completion;
//  * for the first execution of each distinct program within the traced steps, the engine's
//    per-unit events (MXU/VPU/DMA/HBM/ICI lanes), shifted to the step's start.
//
// Host slices cover every step (one event each). Step slices and engine detail cover the traced
// steps: by default the first `kDefaultTracedSteps` steps plus every program's first execution; with
// an explicit range [from, to), only the steps in it; with a time window (--trace-window), the steps
// that overlap it (and the range, when both are given). Time is the run's simulated time, in µs.
// Every event carries its step's index (args.step), which `tpusim trace summarize` uses.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sim/base/trace.h"
#include "traces/trace_filter.h"

namespace tpusim {

struct TrainingTraceOptions {
  static constexpr uint64_t kDefaultTracedSteps = 5;
  // Unit-level operations kept per program (see OffsetTraceSink), by default.
  static constexpr uint64_t kDefaultDetailOps = 8000;
  bool range_set = false;  // false: the default selection (see the file comment)
  uint64_t from = 0, to = 0;  // steps [from, to) when range_set
  // What the trace file keeps (--trace-lanes, --trace-window), so that the detail cap counts kept
  // operations and the window selects steps; null: everything.
  const TraceFilter* filter = nullptr;
  uint64_t detail_ops = kDefaultDetailOps;  // per program; 0: no cap
};

// Shifts engine events (which start at cycle 0 of the program) to a point of the run's timeline and
// tags them with their step. Unit-level detail is kept for chip 0 only (core 0's lanes and the chip's
// shared HBM, network and PCIe lanes), and at most `max_ops` operations per program that pass the
// filter: the replicas run the same stream, and a whole BERT-base step on a v3-8 is ~1.5 million
// operations (a trace of ~1 GB); chip 0 core 0 alone ~0.4 million.
class OffsetTraceSink : public TraceSink {
 public:
  OffsetTraceSink(TraceSink& out, double offset_s, int64_t step, const TraceFilter* filter, uint64_t max_ops)
      : out_(out), offset_s_(offset_s), step_(step), filter_(filter), max_ops_(max_ops) {}
  void complete(const TraceEvent& ev) override;

 private:
  TraceSink& out_;
  double offset_s_;
  int64_t step_;
  const TraceFilter* filter_;
  uint64_t max_ops_;
  uint64_t forwarded_ = 0;
};

class TrainingTracer {
 public:
  // One tracer per step: every event it writes is tagged with `step`.
  TrainingTracer(TraceSink* sink, TrainingTraceOptions opts, uint32_t chips, uint32_t cores_per_chip, uint64_t step)
      : sink_(sink), opts_(opts), chips_(chips), cores_(cores_per_chip), step_(step) {}

  bool enabled() const { return sink_ != nullptr; }
  // Whether step `index` gets step slices; `first_execution`: its program runs for the first time;
  // [start_s, end_s]: its execution (end_s unknown before it ran: pass start_s).
  bool traced(uint64_t index, bool first_execution, double start_s, double end_s) const;
  // Host tracks: "tracing", "compile", "transfer".
  void host(std::string_view track, std::string_view name, double start_s, double dur_s);
  // One `coreM.step` slice per core of every chip.
  void step(std::string_view name, double start_s, double dur_s);

  // The sink for the engine's events of step `index` (shifted to `start_s`), or null when the step
  // gets no detail: only a traced step that is its program's first execution does.
  TraceSink* detail(uint64_t index, bool first_execution, double start_s);

 private:
  std::optional<OffsetTraceSink> offset_;
  TraceSink* sink_;
  TrainingTraceOptions opts_;
  uint32_t chips_, cores_;
  uint64_t step_;
};

}  // namespace tpusim
