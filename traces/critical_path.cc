// Critical paths of a trace (heuristic; see trace_summary.h and docs/traces.md).
#include <algorithm>
#include <map>

#include "traces/trace_summary.h"

namespace tpusim::trace_analysis {
namespace {

// Device time after the last unit-detail operation shorter than this is pipeline drain, not a cut
// in the detail.
constexpr int64_t kDetailSlackNs = 1000;

// Walks back from the operation that finishes last; each predecessor is the operation that ends
// latest at or before the current one starts (ties: longer, then the lane listed first).
CriticalPath walk(const TraceData& t, std::vector<uint32_t> cands) {
  CriticalPath p;
  if (cands.empty()) return p;
  std::sort(cands.begin(), cands.end(), [&t](uint32_t a, uint32_t b) {
    const TraceOp &x = t.ops[a], &y = t.ops[b];
    if (x.end_ns != y.end_ns) return x.end_ns < y.end_ns;
    if (x.dur_ns() != y.dur_ns()) return x.dur_ns() < y.dur_ns();
    if (x.lane != y.lane) return x.lane > y.lane;
    return a > b;
  });
  std::vector<uint32_t> path;  // last first
  size_t pos = cands.size() - 1;
  path.push_back(cands[pos]);
  while (true) {
    const int64_t start = t.ops[cands[pos]].start_ns;
    // Positions before `pos` end no later than the current op; find the last one ending by `start`.
    auto it = std::upper_bound(cands.begin(), cands.begin() + long(pos), start,
                               [&t](int64_t s, uint32_t i) { return s < t.ops[i].end_ns; });
    if (it == cands.begin()) break;
    pos = size_t(it - cands.begin()) - 1;
    path.push_back(cands[pos]);
  }
  std::reverse(path.begin(), path.end());

  p.start_ns = t.ops[path.front()].start_ns;
  p.end_ns = t.ops[path.back()].end_ns;
  p.ops = path.size();
  int64_t prev_end = p.start_ns;
  for (uint32_t i : path) {
    const TraceOp& op = t.ops[i];
    const TraceLane& lane = t.lanes[op.lane];
    p.wait_ns += op.start_ns - prev_end;
    prev_end = op.end_ns;
    p.by_kind_ns[size_t(lane.kind)] += op.dur_ns();
    if (lane.kind == LaneKind::kHost) p.host_ns[lane.track] += op.dur_ns();
    if (!p.runs.empty() && p.runs.back().lane == op.lane) {
      PathRun& r = p.runs.back();
      ++r.ops;
      r.end_ns = op.end_ns;
      r.busy_ns += op.dur_ns();
    } else {
      p.runs.push_back({op.lane, op.name, 1, op.start_ns, op.end_ns, op.dur_ns()});
    }
  }
  return p;
}

}  // namespace

std::vector<CriticalPath> critical_paths(const View& v) {
  const TraceData& t = v.t;
  std::vector<CriticalPath> out;
  if (v.steps.empty()) {
    std::vector<uint32_t> cands;
    for (uint32_t i = 0; i < t.ops.size(); ++i)
      if (v.lane_selected[t.ops[i].lane] && in_window(t.ops[i], v.window)) cands.push_back(i);
    if (!cands.empty()) out.push_back(walk(t, std::move(cands)));
    return out;
  }
  // A step's own operations, split by role.
  struct StepOps {
    std::vector<uint32_t> host, unit, step_slices;
  };
  std::map<int64_t, StepOps> by_step;
  for (uint32_t i = 0; i < t.ops.size(); ++i) {
    const TraceOp& op = t.ops[i];
    if (op.step < 0 || !v.lane_selected[op.lane] || !std::binary_search(v.steps.begin(), v.steps.end(), op.step))
      continue;
    StepOps& s = by_step[op.step];
    switch (t.lanes[op.lane].kind) {
      case LaneKind::kHost: s.host.push_back(i); break;
      case LaneKind::kDeviceStep: s.step_slices.push_back(i); break;
      default: s.unit.push_back(i); break;
    }
  }
  // Steps the device ran in the trace (host slices cover every step, step slices only traced ones);
  // with lanes that exclude the device (--lanes 'host*'), every step.
  const bool any_device = std::any_of(by_step.begin(), by_step.end(), [](const auto& kv) {
    return !kv.second.unit.empty() || !kv.second.step_slices.empty();
  });
  for (auto& [step, s] : by_step) {
    if (any_device && s.unit.empty() && s.step_slices.empty()) continue;
    int64_t device_end = -1;
    for (uint32_t i : s.step_slices) device_end = std::max(device_end, t.ops[i].end_ns);
    std::vector<uint32_t> cands = s.host;
    std::string detail = s.step_slices.empty() ? "" : "none";
    int64_t beyond = 0;
    if (!s.unit.empty()) {
      cands.insert(cands.end(), s.unit.begin(), s.unit.end());
      int64_t unit_end = 0;
      for (uint32_t i : s.unit) unit_end = std::max(unit_end, t.ops[i].end_ns);
      if (device_end >= 0) {
        beyond = device_end - unit_end > kDetailSlackNs ? device_end - unit_end : 0;
        detail = beyond > 0 ? "partial" : "full";
      }
    } else {
      cands.insert(cands.end(), s.step_slices.begin(), s.step_slices.end());
    }
    CriticalPath p = walk(t, std::move(cands));
    p.step = step;
    p.unit_detail = detail;
    if (!s.step_slices.empty()) p.program = t.names[t.ops[s.step_slices.front()].name];
    if (beyond > 0) {
      // The device ran on after the capped unit detail: that time is on the path as "device step".
      p.by_kind_ns[size_t(LaneKind::kDeviceStep)] += beyond;
      p.end_ns += beyond;
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace tpusim::trace_analysis
