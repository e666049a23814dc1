// Idle gaps of compute lanes and what else was busy during them (see trace_summary.h).
#include <algorithm>
#include <map>

#include "traces/trace_summary.h"

namespace tpusim::trace_analysis {
namespace {

using CauseLanes = std::array<std::vector<uint32_t>, kGapCauses>;

// Lanes that can explain a gap of lane `l`: on its chip, the same core's lanes and the chip-wide
// ones (HBM, ICI, PCIe); and the host's. Step slices are the device itself, never a cause.
CauseLanes cause_lanes(const TraceData& t, uint32_t l) {
  CauseLanes c;
  const TraceLane& me = t.lanes[l];
  for (uint32_t m = 0; m < t.lanes.size(); ++m) {
    const TraceLane& o = t.lanes[m];
    if (m == l || o.kind == LaneKind::kDeviceStep) continue;
    const bool related = o.kind == LaneKind::kHost || (o.process == me.process && (o.core == me.core || o.core < 0));
    if (related) c[size_t(gap_cause(o.kind, o.track))].push_back(m);
  }
  return c;
}

// Splits gap `g` among causes: each instant goes to the first cause (in priority order) with a
// busy lane then, or to "nothing".
void attribute(const View& v, const CauseLanes& lanes, IdleGap* g) {
  const Interval gap{g->start_ns, g->end_ns};
  std::vector<Interval> remaining{gap};
  for (int c = 0; c < int(GapCause::kNothing) && !remaining.empty(); ++c) {
    if (lanes[size_t(c)].empty()) continue;
    std::vector<Interval> u;
    for (uint32_t m : lanes[size_t(c)]) {
      const auto part = clip(v.busy[m], gap);
      u.insert(u.end(), part.begin(), part.end());
    }
    if (u.empty()) continue;
    u = interval_union(std::move(u));
    std::vector<Interval> next;
    for (const Interval& r : remaining) {
      g->by_cause_ns[size_t(c)] += total_length(clip(u, r));
      const auto rest = complement(u, r);
      next.insert(next.end(), rest.begin(), rest.end());
    }
    remaining = std::move(next);
  }
  g->by_cause_ns[size_t(GapCause::kNothing)] = total_length(remaining);
  int best = 0;
  for (int c = 1; c < kGapCauses; ++c)
    if (g->by_cause_ns[size_t(c)] > g->by_cause_ns[size_t(best)]) best = c;
  g->cause = GapCause(best);
}

}  // namespace

void idle_analysis(const View& v, size_t top, TraceSummary* out) {
  const TraceData& t = v.t;
  // Unit-detail span of each (chip, step): where a training trace is complete for MXU/VPU lanes.
  std::map<std::pair<std::string, int64_t>, Interval> detail;
  if (!v.steps.empty()) {
    for (const TraceOp& op : t.ops) {
      const TraceLane& lane = t.lanes[op.lane];
      if (op.step < 0 || lane.kind == LaneKind::kHost || lane.kind == LaneKind::kDeviceStep) continue;
      auto [it, added] = detail.emplace(std::make_pair(lane.process, op.step), Interval{op.start_ns, op.end_ns});
      if (!added) it->second = {std::min(it->second.start, op.start_ns), std::max(it->second.end, op.end_ns)};
    }
  }
  auto analysed = [&v](int64_t step) { return std::binary_search(v.steps.begin(), v.steps.end(), step); };

  std::vector<IdleGap> all;
  for (uint32_t l = 0; l < t.lanes.size(); ++l) {
    const TraceLane& lane = t.lanes[l];
    if (!v.lane_selected[l] || !is_compute_lane(lane.kind, lane.track) || v.lane_ops[l].empty()) continue;
    std::vector<Interval> spans;
    if (v.steps.empty()) {
      spans.push_back(v.window);
    } else if (lane.kind == LaneKind::kDeviceStep) {
      // Before a traced step the device waited since the previous step ended, if that one is traced
      // too (untraced steps ran in between otherwise); step 0 waited since the run began.
      std::map<int64_t, int64_t> end_of;
      for (uint32_t i : v.lane_ops[l])
        if (t.ops[i].step >= 0) end_of[t.ops[i].step] = t.ops[i].end_ns;
      for (uint32_t i : v.lane_ops[l]) {
        const TraceOp& op = t.ops[i];
        if (op.step < 0 || !analysed(op.step)) continue;
        auto prev = end_of.find(op.step - 1);
        const int64_t from = op.step == 0 ? std::min<int64_t>(0, op.start_ns)
                             : prev != end_of.end() ? std::min(prev->second, op.start_ns)
                                                    : op.start_ns;
        spans.push_back({from, op.end_ns});
      }
    } else {
      for (const auto& [key, span] : detail)
        if (key.first == lane.process && analysed(key.second)) spans.push_back(span);
    }
    std::vector<Interval> clipped;
    for (const Interval& s : spans) {
      const Interval c{std::max(s.start, v.window.start), std::min(s.end, v.window.end)};
      if (c.end > c.start) clipped.push_back(c);
    }
    clipped = interval_union(std::move(clipped));
    if (clipped.empty()) continue;

    const CauseLanes causes = cause_lanes(t, l);
    LaneIdle li;
    li.lane = l;
    li.measured_ns = total_length(clipped);
    for (const Interval& span : clipped) {
      for (const Interval& gap : complement(v.busy[l], span)) {
        IdleGap g;
        g.lane = l;
        g.start_ns = gap.start;
        g.end_ns = gap.end;
        attribute(v, causes, &g);
        li.idle_ns += g.dur_ns();
        for (int c = 0; c < kGapCauses; ++c) li.by_cause_ns[size_t(c)] += g.by_cause_ns[size_t(c)];
        all.push_back(g);
      }
    }
    out->idle.push_back(li);
  }

  // The same gap on several lanes of one kind (every core's step lane waiting for one compile) is
  // one row.
  std::stable_sort(all.begin(), all.end(), [&t](const IdleGap& a, const IdleGap& b) {
    if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
    if (a.end_ns != b.end_ns) return a.end_ns < b.end_ns;
    if (t.lanes[a.lane].kind != t.lanes[b.lane].kind) return t.lanes[a.lane].kind < t.lanes[b.lane].kind;
    return a.lane < b.lane;
  });
  std::vector<IdleGap> merged;
  for (const IdleGap& g : all) {
    if (!merged.empty()) {
      IdleGap& m = merged.back();
      if (m.start_ns == g.start_ns && m.end_ns == g.end_ns && t.lanes[m.lane].kind == t.lanes[g.lane].kind) {
        ++m.same_lanes;
        continue;
      }
    }
    merged.push_back(g);
  }
  out->gaps_total = merged.size();
  std::stable_sort(merged.begin(), merged.end(), [](const IdleGap& a, const IdleGap& b) {
    if (a.dur_ns() != b.dur_ns()) return a.dur_ns() > b.dur_ns();
    if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
    return a.lane < b.lane;
  });
  if (merged.size() > top) merged.resize(top);
  out->gaps = std::move(merged);
}

}  // namespace tpusim::trace_analysis
