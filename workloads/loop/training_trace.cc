#include "workloads/loop/training_trace.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace tpusim {
namespace {

// Host and step slices are written in a 1 GHz "clock": one cycle is one nanosecond.
constexpr double kNsClockMhz = 1000.0;

uint64_t ns(double s) { return s > 0 ? uint64_t(std::llround(s * 1e9)) : 0; }

}  // namespace

void OffsetTraceSink::complete(const TraceEvent& ev) {
  if ((max_ops_ > 0 && forwarded_ >= max_ops_) || ev.process != "slice.chip0") return;
  if (ev.track.rfind("core", 0) == 0 && ev.track.rfind("core0.", 0) != 0) return;
  TraceEvent shifted = ev;
  shifted.start_cycle += uint64_t(std::llround(offset_s_ * ev.clock_mhz * 1e6));
  shifted.step = step_;
  // Count only what the file keeps, so that a bounded trace gets its cap's worth of operations
  // (the rest is still handed over: the file drops it and counts it as outside its bounds).
  if (!filter_ || filter_->keep(shifted)) ++forwarded_;
  out_.complete(shifted);
}

bool TrainingTracer::traced(uint64_t index, bool first_execution, double start_s, double end_s) const {
  if (!sink_) return false;
  const bool windowed = opts_.filter && opts_.filter->window.set();
  if (windowed && !opts_.filter->window.overlaps(int64_t(ns(start_s)), int64_t(ns(end_s)))) return false;
  if (opts_.range_set) return index >= opts_.from && index < opts_.to;
  return windowed || index < TrainingTraceOptions::kDefaultTracedSteps || first_execution;
}

TraceSink* TrainingTracer::detail(uint64_t index, bool first_execution, double start_s) {
  // Only a program's first execution is simulated in detail (the others replay its time).
  if (!sink_ || !first_execution) return nullptr;
  if (opts_.range_set && (index < opts_.from || index >= opts_.to)) return nullptr;
  // The step's end is unknown before it runs: a window keeps it if it starts before the window
  // ends, and the filter drops the operations outside.
  if (opts_.filter && opts_.filter->window.set() && int64_t(ns(start_s)) >= opts_.filter->window.to_ns) return nullptr;
  offset_.emplace(*sink_, start_s, int64_t(step_), opts_.filter, opts_.detail_ops);
  return &*offset_;
}

void TrainingTracer::host(std::string_view track, std::string_view name, double start_s, double dur_s) {
  if (!sink_ || dur_s <= 0) return;
  const uint64_t a = ns(start_s), b = ns(start_s + dur_s);
  sink_->complete({"host0", track, name, a, std::max(a, b) - a, kNsClockMhz, 0, int64_t(step_)});
}

void TrainingTracer::step(std::string_view name, double start_s, double dur_s) {
  if (!sink_) return;
  const uint64_t a = ns(start_s), b = ns(start_s + dur_s);
  for (uint32_t chip = 0; chip < chips_; ++chip) {
    const std::string process = fmt::format("slice.chip{}", chip);
    for (uint32_t core = 0; core < cores_; ++core) {
      const std::string track = fmt::format("core{}.step", core);
      sink_->complete({process, track, name, a, std::max(a, b) - a, kNsClockMhz, 0, int64_t(step_)});
    }
  }
}

}  // namespace tpusim
