// `tpusim trace summarize`: where the time of a traced run went, from its Chrome trace alone.
//
//  * lanes: per lane, operations, busy time (the union of its operations, so nesting is not counted
//    twice) and utilization = busy / window, in the analysis window;
//  * critical paths: per training step (args.step) or, for a trace without steps, over the window.
//    Traces carry no dependency edges, so the path is a heuristic (docs/traces.md): start at the
//    operation that finishes last; its predecessor is the operation that ends latest at or before
//    it starts (ties: the longer one, then the lane listed first); repeat until none is left. The
//    path's time is split by lane kind (MXU, VPU, DMA/HBM, ICI/transfer, barrier, host by track,
//    device step) plus `wait`, the gaps between consecutive path operations. Per step, a step's own
//    operations are the candidates (host tracing, compile, transfer, unit detail, step slice); where
//    unit detail exists the step slice is replaced by it, and device time after the last unit
//    operation (detail capped per program) counts as "device step";
//  * top operations: the N longest operations overlapping the window;
//  * idle: for compute lanes (MXU row streams, VPUs, device steps), the gaps in the spans where the
//    trace is complete for them (the window; in a training trace, each step's unit-detail span, and
//    for step lanes the time since the previous traced step ended), with what else was busy: each
//    idle instant goes to the first busy cause in priority order (lane_kind.h), or "nothing".
//    Causes are looked up on every lane of the trace (same chip: same core or chip-wide lanes; and
//    the host), whatever --lanes selects.
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "traces/intervals.h"
#include "traces/lane_kind.h"
#include "traces/trace_filter.h"
#include "traces/trace_reader.h"

namespace tpusim {

struct SummaryOptions {
  size_t top = 10;                 // rows of top operations, longest gaps, critical-path steps/runs
  TimeWindow window;               // not set: the span of the (selected) operations
  std::optional<StepRange> steps;  // training traces: only these steps
  LanePatterns lanes;              // empty: every lane
};

inline constexpr int kLaneKinds = int(LaneKind::kOther) + 1;

struct LaneSummary {
  uint32_t lane = 0;
  uint64_t ops = 0;        // operations overlapping the window
  int64_t busy_ns = 0;     // union of those operations, clipped to the window
  double utilization = 0;  // busy / window length
  uint64_t bytes = 0;      // args.bytes of those operations
};

struct PathRun {  // consecutive critical-path operations on one lane
  uint32_t lane = 0, name = 0;  // name of the run's first operation
  uint64_t ops = 0;
  int64_t start_ns = 0, end_ns = 0, busy_ns = 0;
};

struct CriticalPath {
  int64_t step = -1;     // -1: a trace without steps (the window)
  std::string program;   // the step slice's name (training), or ""
  int64_t start_ns = 0, end_ns = 0;
  uint64_t ops = 0;
  std::array<int64_t, kLaneKinds> by_kind_ns{};  // on-path busy time by lane kind
  std::map<std::string, int64_t> host_ns;        // the host's share by track (tracing, compile, ...)
  int64_t wait_ns = 0;                           // gaps between consecutive path operations
  std::string unit_detail;  // "full", "partial" (capped), "none" (step slice only); "" without steps
  std::vector<PathRun> runs;  // in time order
  int64_t span_ns() const { return end_ns - start_ns; }
};

struct LaneIdle {
  uint32_t lane = 0;
  int64_t measured_ns = 0;  // time in which the lane's trace is complete (see the file comment)
  int64_t idle_ns = 0;
  std::array<int64_t, kGapCauses> by_cause_ns{};
};

struct IdleGap {
  uint32_t lane = 0;       // the first (display order) of the lanes with this gap
  uint32_t same_lanes = 1; // lanes of the same kind idle over exactly this interval (step lanes of every core)
  int64_t start_ns = 0, end_ns = 0;
  std::array<int64_t, kGapCauses> by_cause_ns{};
  GapCause cause = GapCause::kNothing;  // the largest share
  int64_t dur_ns() const { return end_ns - start_ns; }
};

struct TraceSummary {
  Interval window;
  std::optional<StepRange> steps;
  bool trace_has_steps = false;
  uint64_t ops_in_window = 0;
  std::vector<LaneSummary> lanes;
  std::vector<CriticalPath> paths;  // by step index
  std::vector<uint32_t> top_ops;    // indices into TraceData::ops, longest first
  std::vector<LaneIdle> idle;       // compute lanes, in lane order
  std::vector<IdleGap> gaps;        // longest first, at most `top`
  uint64_t gaps_total = 0;          // gaps before the cut
};

// Throws TraceError (flag named) when --lanes matches no lane, --steps names steps the trace does not
// have (or it has none), or the window misses the trace.
TraceSummary summarize_trace(const TraceData& t, const SummaryOptions& o);

// The human tables (stdout of `tpusim trace summarize`), every figure with its unit.
std::string format_trace_summary(const TraceData& t, const TraceSummary& s, const SummaryOptions& o);
// The same for machines (`--json`): times in µs (`*_us`), fractions, bytes; `units` names each.
nlohmann::json trace_summary_json(const TraceData& t, const TraceSummary& s, const SummaryOptions& o);

// Internal to the analysis (critical_path.cc, idle_gaps.cc).
namespace trace_analysis {
struct View {
  const TraceData& t;
  std::vector<bool> lane_selected;               // by --lanes
  Interval window;
  std::vector<std::vector<uint32_t>> lane_ops;   // op indices per lane (all ops, sorted by start)
  std::vector<std::vector<Interval>> busy;       // per lane: union of all its operations
  std::vector<int64_t> steps;                    // the steps analysed (sorted), empty without steps
};
// An operation overlaps window `w`; a zero-length one lies in [w.start, w.end] (so the last
// instant of a trace still holds its zero-length operations).
inline bool in_window(const TraceOp& op, Interval w) {
  if (op.end_ns > op.start_ns) return op.start_ns < w.end && op.end_ns > w.start;
  return op.start_ns >= w.start && op.start_ns <= w.end;
}
std::vector<CriticalPath> critical_paths(const View& v);
void idle_analysis(const View& v, size_t top, TraceSummary* out);
}  // namespace trace_analysis

}  // namespace tpusim
