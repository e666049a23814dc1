#include "traces/trace_summary.h"

#include <algorithm>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "traces/chrome_trace.h"
#include "traces/trace_error.h"

namespace tpusim {
namespace {

std::string us_text(int64_t ns) { return ChromeTraceSink::ns_as_us(ns) + " µs"; }

// A few lane names for an error message: "slice.chip0.core0.mxu0, ... (23 lanes)".
std::string some_lanes(const TraceData& t) {
  std::string s;
  for (size_t i = 0; i < t.lanes.size() && i < 6; ++i) s += (i ? ", " : "") + t.lanes[i].name;
  if (t.lanes.size() > 6) s += fmt::format(", ... ({} lanes)", t.lanes.size());
  return s;
}

}  // namespace

TraceSummary summarize_trace(const TraceData& t, const SummaryOptions& o) {
  using trace_analysis::View;
  View v{t, {}, {}, {}, {}, {}};
  v.lane_selected.resize(t.lanes.size());
  bool any_lane = false;
  for (size_t i = 0; i < t.lanes.size(); ++i) {
    v.lane_selected[i] = o.lanes.matches(t.lanes[i].process, t.lanes[i].track);
    any_lane = any_lane || v.lane_selected[i];
  }
  if (!any_lane && !o.lanes.empty())
    throw TraceError("--lanes", "matches no lane of the trace", o.lanes.text(),
                     t.lanes.empty() ? "the trace has no operations" : "lanes are named like " + some_lanes(t));
  v.lane_ops.resize(t.lanes.size());
  for (uint32_t i = 0; i < t.ops.size(); ++i) v.lane_ops[t.ops[i].lane].push_back(i);
  v.busy.resize(t.lanes.size());
  for (size_t l = 0; l < t.lanes.size(); ++l) {
    std::vector<Interval> iv;
    iv.reserve(v.lane_ops[l].size());
    for (uint32_t i : v.lane_ops[l]) iv.push_back({t.ops[i].start_ns, t.ops[i].end_ns});
    v.busy[l] = interval_union(std::move(iv));
  }

  TraceSummary s;
  s.steps = o.steps;
  s.trace_has_steps = t.has_steps();
  // The window: the selected operations' span, narrowed by --steps and --window.
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
  std::set<int64_t> steps_seen;
  for (const TraceOp& op : t.ops) {
    if (!v.lane_selected[op.lane]) continue;
    if (op.step >= 0) steps_seen.insert(op.step);
    if (o.steps && !o.steps->contains(op.step)) continue;
    lo = std::min(lo, op.start_ns);
    hi = std::max(hi, op.end_ns);
  }
  if (o.steps) {
    const std::string range = fmt::format("{}:{}", o.steps->from, o.steps->to);
    if (steps_seen.empty())
      throw TraceError("--steps", "needs a training trace: this one has no steps (no args.step)", range,
                       "select time with --window instead");
    if (lo > hi)
      throw TraceError("--steps", "selects no step of the trace", range,
                       fmt::format("the trace has steps {} to {}", *steps_seen.begin(), *steps_seen.rbegin()));
  }
  if (lo > hi) lo = hi = 0;  // no operation at all: an empty window, empty tables
  Interval w{lo, hi};
  if (o.window.set()) {
    const Interval asked{o.window.from_ns, o.window.to_ns};
    const Interval cut{std::max(w.start, asked.start), std::min(w.end, asked.end)};
    if (cut.end <= cut.start)
      throw TraceError("--window", "lies outside the trace's operations", o.window.text() + " µs",
                       fmt::format("they span {} to {}{}", us_text(w.start), us_text(w.end),
                                   o.steps ? " in the selected steps" : ""));
    w = cut;
  }
  v.window = w;
  s.window = w;

  for (int64_t st : steps_seen) {
    if (o.steps && !o.steps->contains(st)) continue;
    v.steps.push_back(st);
  }

  // Lanes: busy time over the window.
  const double wlen = double(std::max<int64_t>(w.length(), 0));
  for (uint32_t l = 0; l < t.lanes.size(); ++l) {
    if (!v.lane_selected[l]) continue;
    LaneSummary ls;
    ls.lane = l;
    for (uint32_t i : v.lane_ops[l]) {
      if (!trace_analysis::in_window(t.ops[i], w)) continue;
      ++ls.ops;
      ls.bytes += t.ops[i].bytes;
    }
    if (ls.ops == 0) continue;
    ls.busy_ns = total_length(clip(v.busy[l], w));
    ls.utilization = wlen > 0 ? double(ls.busy_ns) / wlen : 0;
    s.ops_in_window += ls.ops;
    s.lanes.push_back(ls);
  }

  // Top operations by duration (ties: earlier, then lane order, then name).
  std::vector<uint32_t> cand;
  for (uint32_t i = 0; i < t.ops.size(); ++i)
    if (v.lane_selected[t.ops[i].lane] && trace_analysis::in_window(t.ops[i], w)) cand.push_back(i);
  auto longer = [&t](uint32_t a, uint32_t b) {
    const TraceOp &x = t.ops[a], &y = t.ops[b];
    if (x.dur_ns() != y.dur_ns()) return x.dur_ns() > y.dur_ns();
    if (x.start_ns != y.start_ns) return x.start_ns < y.start_ns;
    if (x.lane != y.lane) return x.lane < y.lane;
    return t.names[x.name] < t.names[y.name];
  };
  const size_t n = std::min(o.top, cand.size());
  std::partial_sort(cand.begin(), cand.begin() + long(n), cand.end(), longer);
  s.top_ops.assign(cand.begin(), cand.begin() + long(n));

  s.paths = trace_analysis::critical_paths(v);
  trace_analysis::idle_analysis(v, o.top, &s);
  return s;
}

}  // namespace tpusim
