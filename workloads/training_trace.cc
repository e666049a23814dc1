#include "workloads/training_trace.h"

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
  if (forwarded_ >= kMaxEvents || ev.process != "slice.chip0") return;
  if (ev.track.rfind("core", 0) == 0 && ev.track.rfind("core0.", 0) != 0) return;
  ++forwarded_;
  TraceEvent shifted = ev;
  shifted.start_cycle += uint64_t(std::llround(offset_s_ * ev.clock_mhz * 1e6));
  out_.complete(shifted);
}

bool TrainingTracer::traced(uint64_t index, bool first_execution) const {
  if (!sink_) return false;
  if (opts_.range_set) return index >= opts_.from && index < opts_.to;
  return index < TrainingTraceOptions::kDefaultTracedSteps || first_execution;
}

TraceSink* TrainingTracer::detail(uint64_t index, bool first_execution, double start_s) {
  if (!first_execution || !traced(index, first_execution)) return nullptr;
  offset_.emplace(*sink_, start_s);
  return &*offset_;
}

void TrainingTracer::host(std::string_view track, std::string_view name, double start_s, double dur_s) {
  if (!sink_ || dur_s <= 0) return;
  const uint64_t a = ns(start_s), b = ns(start_s + dur_s);
  sink_->complete({"host0", track, name, a, std::max(a, b) - a, kNsClockMhz, 0});
}

void TrainingTracer::step(std::string_view name, double start_s, double dur_s) {
  if (!sink_) return;
  const uint64_t a = ns(start_s), b = ns(start_s + dur_s);
  for (uint32_t chip = 0; chip < chips_; ++chip) {
    const std::string process = fmt::format("slice.chip{}", chip);
    for (uint32_t core = 0; core < cores_; ++core) {
      const std::string track = fmt::format("core{}.step", core);
      sink_->complete({process, track, name, a, std::max(a, b) - a, kNsClockMhz, 0});
    }
  }
}

}  // namespace tpusim
