// The tables and the JSON of `tpusim trace summarize` (trace_summary.h).
#include <algorithm>

#include <fmt/format.h>

#include "traces/trace_summary.h"

namespace tpusim {
namespace {

using nlohmann::json;

// "850 ns", "12.35 µs", "41.56 ms", "8.871 s": a unit on every figure.
std::string dur(int64_t ns) {
  const double a = double(ns < 0 ? -ns : ns);
  if (a < 1e3) return fmt::format("{} ns", ns);
  if (a < 1e6) return fmt::format("{:.2f} µs", double(ns) / 1e3);
  if (a < 1e9) return fmt::format("{:.2f} ms", double(ns) / 1e6);
  return fmt::format("{:.3f} s", double(ns) / 1e9);
}

// A point on the trace's clock at ns resolution: µs for traces shorter than a second (a kernel),
// seconds otherwise ("18053783.000 µs" reads badly). One unit per summary, so columns line up.
struct At {
  bool seconds = false;
  std::string operator()(int64_t ns) const {
    return seconds ? fmt::format("{:.6f} s", double(ns) / 1e9) : fmt::format("{:.3f} µs", double(ns) / 1e3);
  }
};

std::string bytes_text(uint64_t b) {
  static const char* prefixes[] = {"B", "kB", "MB", "GB", "TB"};
  double v = double(b);
  int p = 0;
  while (v >= 1000 && p < 4) v /= 1000, ++p;
  return p == 0 ? fmt::format("{} B", b) : fmt::format("{:.2f} {}", v, prefixes[p]);
}

std::string pct(int64_t part, int64_t whole) {
  if (whole <= 0) return "-";
  const double p = 100.0 * double(part) / double(whole);
  return p > 0 && p < 0.05 ? "<0.1%" : fmt::format("{:.1f}%", p);
}

std::string grouped(uint64_t v) {
  const std::string d = std::to_string(v);
  std::string s;
  for (size_t i = 0; i < d.size(); ++i) {
    if (i > 0 && (d.size() - i) % 3 == 0) s.push_back(',');
    s.push_back(d[i]);
  }
  return s;
}

double us(int64_t ns) { return double(ns) / 1e3; }

// Operation names can be a fusion's whole path; tables cut them (JSON keeps them whole).
std::string shorten(const std::string& s, size_t max = 64) {
  if (s.size() <= max) return s;
  size_t cut = max - 3;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 character
  return s.substr(0, cut) + "...";
}

// "waiting for DMA/HBM 62.1%, other compute busy (...) 30.2%": causes with >= 1% of `total`.
std::string causes_text(const std::array<int64_t, kGapCauses>& by, int64_t total) {
  std::vector<int> order;
  for (int c = 0; c < kGapCauses; ++c)
    if (by[size_t(c)] > 0 && 100 * by[size_t(c)] >= total) order.push_back(c);
  std::stable_sort(order.begin(), order.end(), [&by](int a, int b) { return by[size_t(a)] > by[size_t(b)]; });
  std::string s;
  for (int c : order) s += fmt::format("{}{} {}", s.empty() ? "" : ", ", gap_cause_label(GapCause(c)), pct(by[size_t(c)], total));
  return s.empty() ? "-" : s;
}

// Path composition columns, in this order.
constexpr LaneKind kPathKinds[] = {LaneKind::kMxu,     LaneKind::kVpu,  LaneKind::kDmaHbm,     LaneKind::kIciTransfer,
                                   LaneKind::kBarrier, LaneKind::kHost, LaneKind::kDeviceStep, LaneKind::kOther};

std::string path_label(const CriticalPath& p) {
  if (p.step < 0) return "whole window";
  return p.program.empty() ? fmt::format("step {}", p.step) : fmt::format("step {} ({})", p.step, p.program);
}

// The paths shown: all, or the `top` longest in step order.
std::vector<const CriticalPath*> shown_paths(const TraceSummary& s, size_t top) {
  std::vector<const CriticalPath*> v;
  for (const auto& p : s.paths) v.push_back(&p);
  if (v.size() > top) {
    std::stable_sort(v.begin(), v.end(), [](auto* a, auto* b) { return a->span_ns() > b->span_ns(); });
    v.resize(top);
    std::stable_sort(v.begin(), v.end(), [](auto* a, auto* b) { return a->step < b->step; });
  }
  return v;
}

}  // namespace

std::string format_trace_summary(const TraceData& t, const TraceSummary& s, const SummaryOptions& o) {
  std::string out;
  const At at{s.window.end >= 1000000000};
  auto line = [&out](const char* k, const std::string& v) { out += fmt::format("{:<10} {}\n", k, v); };
  line("trace", fmt::format("{}{}: {} operations on {} lanes{}", t.origin, t.gzip ? " (gzip)" : "",
                            grouped(t.ops.size()), t.lanes.size(),
                            t.ignored_events ? fmt::format(" ({} events of other kinds ignored)", t.ignored_events) : ""));
  if (t.other_data.is_object()) {
    const json& od = t.other_data;
    std::string of;
    if (od.contains("tpusim_version")) of += "tpusim " + od["tpusim_version"].get<std::string>();
    if (od.contains("config_hash")) of += ", " + od["config_hash"].get<std::string>();
    if (!of.empty()) line("written by", of);
    if (od.contains("bounds") && od["bounds"].is_object()) {
      std::string b;
      for (const auto& [k, v] : od["bounds"].items()) b += fmt::format("{}{} {}", b.empty() ? "" : "; ", k, v.is_string() ? v.get<std::string>() : v.dump());
      if (!b.empty()) line("bounded", b);
    }
  }
  std::string sel;
  if (!o.lanes.empty()) sel += "lanes " + o.lanes.text();
  if (s.steps)
    sel += (sel.empty() ? "" : "; ") + (s.steps->to - s.steps->from == 1
                                            ? fmt::format("step {}", s.steps->from)
                                            : fmt::format("steps {} to {}", s.steps->from, s.steps->to - 1));
  line("window", fmt::format("{} to {} ({}){}", at(s.window.start), at(s.window.end), dur(s.window.length()),
                             sel.empty() ? "" : "; " + sel));

  // Lanes.
  size_t w = 4;
  for (const auto& l : s.lanes) w = std::max(w, t.lanes[l.lane].name.size());
  out += fmt::format("\nlanes: busy time and utilization over the window\n  {:<{}}  {:<12} {:>9} {:>12} {:>7} {:>10}\n",
                     "lane", w, "kind", "ops", "busy", "util", "bytes");
  for (const auto& l : s.lanes) {
    const TraceLane& lane = t.lanes[l.lane];
    out += fmt::format("  {:<{}}  {:<12} {:>9} {:>12} {:>6.1f}% {:>10}\n", lane.name, w, lane_kind_label(lane.kind),
                       grouped(l.ops), dur(l.busy_ns), 100 * l.utilization, l.bytes ? bytes_text(l.bytes) : "-");
  }

  // Critical paths.
  if (!s.paths.empty()) {
    out += "\ncritical path by lane kind, % of its span (heuristic: from the operation that finishes last, back\n"
           "through the operation that ends latest before each one starts; wait = gaps between them)\n";
    const auto shown = shown_paths(s, o.top);
    size_t lw = 6;
    for (auto* p : shown) lw = std::max(lw, path_label(*p).size());
    std::vector<LaneKind> kinds;  // the columns some shown path uses
    for (LaneKind k : kPathKinds)
      if (std::any_of(shown.begin(), shown.end(), [k](auto* p) { return p->by_kind_ns[size_t(k)] > 0; })) kinds.push_back(k);
    const bool steps = std::any_of(shown.begin(), shown.end(), [](auto* p) { return !p->unit_detail.empty(); });
    out += fmt::format("  {:<{}} {:>11}", "path", lw, "span");
    for (LaneKind k : kinds) out += fmt::format(" {:>12}", lane_kind_label(k));
    out += fmt::format(" {:>7}{}\n", "wait", steps ? "  unit detail" : "");
    for (auto* p : shown) {
      out += fmt::format("  {:<{}} {:>11}", path_label(*p), lw, dur(p->span_ns()));
      for (LaneKind k : kinds) out += fmt::format(" {:>12}", p->by_kind_ns[size_t(k)] ? pct(p->by_kind_ns[size_t(k)], p->span_ns()) : "-");
      out += fmt::format(" {:>7}{}\n", pct(p->wait_ns, p->span_ns()), steps ? "  " + (p->unit_detail.empty() ? "-" : p->unit_detail) : "");
    }
    if (shown.size() < s.paths.size())
      out += fmt::format("  ({} of {} steps shown, the longest; --json has all)\n", shown.size(), s.paths.size());
    // The longest path in detail: host by track, then its longest runs in time order.
    const CriticalPath* longest = shown.front();
    for (auto* p : shown)
      if (p->span_ns() > longest->span_ns()) longest = p;
    out += fmt::format("\n  {}: {} over {} operations", path_label(*longest), dur(longest->span_ns()), grouped(longest->ops));
    if (!longest->host_ns.empty()) {
      out += "; host:";
      for (const auto& [track, ns] : longest->host_ns) out += fmt::format(" {} {}", track, dur(ns));
    }
    out += "\n";
    if (longest->unit_detail == "partial")
      out += fmt::format("  ({} of device time after the last unit-level operation: the trace's detail is capped "
                         "per program, --trace-detail-ops)\n",
                         dur(longest->by_kind_ns[size_t(LaneKind::kDeviceStep)]));
    std::vector<const PathRun*> runs;
    for (const auto& r : longest->runs) runs.push_back(&r);
    std::stable_sort(runs.begin(), runs.end(), [](auto* a, auto* b) { return a->busy_ns > b->busy_ns; });
    if (runs.size() > o.top) runs.resize(o.top);
    std::stable_sort(runs.begin(), runs.end(), [](auto* a, auto* b) { return a->start_ns < b->start_ns; });
    size_t rw = 4;
    for (auto* r : runs) rw = std::max(rw, t.lanes[r->lane].name.size());
    out += fmt::format("  {:<{}} {:>16} {:>11} {:>6}  first operation\n", "lane", rw, "start", "busy", "ops");
    for (auto* r : runs)
      out += fmt::format("  {:<{}} {:>16} {:>11} {:>6}  {}\n", t.lanes[r->lane].name, rw, at(r->start_ns), dur(r->busy_ns),
                         grouped(r->ops), shorten(t.names[r->name]));
    if (runs.size() < longest->runs.size())
      out += fmt::format("  ({} longest of {} runs of consecutive operations on one lane)\n", runs.size(), longest->runs.size());
  }

  // Top operations.
  if (!s.top_ops.empty()) {
    out += fmt::format("\ntop {} operations by duration\n", s.top_ops.size());
    size_t ow = 4;
    for (uint32_t i : s.top_ops) ow = std::max(ow, t.lanes[t.ops[i].lane].name.size());
    out += fmt::format("  {:>11}  {:<{}} {:>16} {:>6}  name\n", "duration", "lane", ow, "start", "step");
    for (uint32_t i : s.top_ops) {
      const TraceOp& op = t.ops[i];
      out += fmt::format("  {:>11}  {:<{}} {:>16} {:>6}  {}\n", dur(op.dur_ns()), t.lanes[op.lane].name, ow, at(op.start_ns),
                         op.step >= 0 ? std::to_string(op.step) : "-", shorten(t.names[op.name]));
    }
  }

  // Idle time of compute lanes.
  if (!s.idle.empty()) {
    out += "\nidle time of compute lanes: what else was busy meanwhile (each idle instant goes to the first busy\n"
           "cause of: DMA/HBM, MXU weight load, ICI/transfer, barrier, other compute, host compile, host transfer,\n"
           "host tracing; else nothing)\n";
    size_t iw = 4;
    for (const auto& li : s.idle) iw = std::max(iw, t.lanes[li.lane].name.size());
    // Every core's step lane idles alike: one row for a run of equal ones.
    std::vector<std::pair<const LaneIdle*, int>> rows;
    for (const auto& li : s.idle) {
      if (!rows.empty()) {
        const LaneIdle& p = *rows.back().first;
        if (t.lanes[p.lane].kind == LaneKind::kDeviceStep && t.lanes[li.lane].kind == LaneKind::kDeviceStep &&
            p.measured_ns == li.measured_ns && p.by_cause_ns == li.by_cause_ns) {
          ++rows.back().second;
          continue;
        }
      }
      rows.push_back({&li, 1});
    }
    std::vector<std::string> names;
    for (const auto& [li, n] : rows) {
      names.push_back(t.lanes[li->lane].name + (n > 1 ? fmt::format(" (+{} alike)", n - 1) : ""));
      iw = std::max(iw, names.back().size());
    }
    out += fmt::format("  {:<{}} {:>11} {:>11} {:>6}  causes\n", "lane", iw, "measured", "idle", "idle%");
    for (size_t i = 0; i < rows.size(); ++i) {
      const LaneIdle& li = *rows[i].first;
      out += fmt::format("  {:<{}} {:>11} {:>11} {:>6}  {}\n", names[i], iw, dur(li.measured_ns), dur(li.idle_ns),
                         pct(li.idle_ns, li.measured_ns), causes_text(li.by_cause_ns, li.idle_ns));
    }
  }
  if (!s.gaps.empty()) {
    out += fmt::format("\nlongest idle gaps of compute lanes ({} of {})\n", s.gaps.size(), grouped(s.gaps_total));
    size_t gw = 4;
    std::vector<std::string> names;
    for (const auto& g : s.gaps) {
      names.push_back(t.lanes[g.lane].name +
                      (g.same_lanes > 1 ? fmt::format(" (+{} lane{})", g.same_lanes - 1, g.same_lanes > 2 ? "s" : "") : ""));
      gw = std::max(gw, names.back().size());
    }
    out += fmt::format("  {:>11}  {:<{}} {:>16}  what else was busy (likely cause first)\n", "duration", "lane", gw, "start");
    for (size_t i = 0; i < s.gaps.size(); ++i) {
      const IdleGap& g = s.gaps[i];
      out += fmt::format("  {:>11}  {:<{}} {:>16}  {}\n", dur(g.dur_ns()), names[i], gw, at(g.start_ns),
                         causes_text(g.by_cause_ns, g.dur_ns()));
    }
  }
  return out;
}

json trace_summary_json(const TraceData& t, const TraceSummary& s, const SummaryOptions& o) {
  json j;
  j["trace"] = {{"file", t.origin},
                {"gzip", t.gzip},
                {"operations", t.ops.size()},
                {"lanes", t.lanes.size()},
                {"ignored_events", t.ignored_events},
                {"other_data", t.other_data}};
  j["selection"] = {{"lanes", o.lanes.text()},
                    {"window_us", o.window.set() ? json(o.window.text()) : json()},
                    {"steps", s.steps ? json({{"from", s.steps->from}, {"to", s.steps->to}}) : json()},
                    {"top", o.top}};
  j["window_us"] = {{"from", us(s.window.start)}, {"to", us(s.window.end)}, {"length", us(s.window.length())}};
  json lanes = json::array();
  for (const auto& l : s.lanes) {
    const TraceLane& lane = t.lanes[l.lane];
    lanes.push_back({{"lane", lane.name}, {"process", lane.process}, {"track", lane.track},
                     {"kind", lane_kind_key(lane.kind)}, {"operations", l.ops}, {"busy_us", us(l.busy_ns)},
                     {"utilization", l.utilization}, {"bytes", l.bytes}});
  }
  j["lanes"] = lanes;
  json paths = json::array();
  for (const auto& p : s.paths) {
    json kinds = json::object();
    for (int k = 0; k < kLaneKinds; ++k)
      if (p.by_kind_ns[size_t(k)]) kinds[lane_kind_key(LaneKind(k))] = us(p.by_kind_ns[size_t(k)]);
    json host = json::object();
    for (const auto& [track, ns] : p.host_ns) host[track] = us(ns);
    json runs = json::array();
    for (const auto& r : p.runs)
      runs.push_back({{"lane", t.lanes[r.lane].name}, {"first_operation", t.names[r.name]}, {"operations", r.ops},
                      {"start_us", us(r.start_ns)}, {"end_us", us(r.end_ns)}, {"busy_us", us(r.busy_ns)}});
    paths.push_back({{"step", p.step >= 0 ? json(p.step) : json()}, {"program", p.program},
                     {"start_us", us(p.start_ns)}, {"end_us", us(p.end_ns)}, {"span_us", us(p.span_ns())},
                     {"operations", p.ops}, {"by_kind_us", kinds}, {"host_us", host}, {"wait_us", us(p.wait_ns)},
                     {"unit_detail", p.unit_detail}, {"runs", runs}});
  }
  j["critical_paths"] = paths;
  json top = json::array();
  for (uint32_t i : s.top_ops) {
    const TraceOp& op = t.ops[i];
    top.push_back({{"lane", t.lanes[op.lane].name}, {"name", t.names[op.name]}, {"start_us", us(op.start_ns)},
                   {"dur_us", us(op.dur_ns())}, {"step", op.step >= 0 ? json(op.step) : json()}, {"bytes", op.bytes}});
  }
  j["top_operations"] = top;
  auto causes = [](const std::array<int64_t, kGapCauses>& by) {
    json c = json::object();
    for (int k = 0; k < kGapCauses; ++k)
      if (by[size_t(k)]) c[gap_cause_key(GapCause(k))] = us(by[size_t(k)]);
    return c;
  };
  json idle = json::array();
  for (const auto& li : s.idle)
    idle.push_back({{"lane", t.lanes[li.lane].name}, {"kind", lane_kind_key(t.lanes[li.lane].kind)},
                    {"measured_us", us(li.measured_ns)}, {"idle_us", us(li.idle_ns)},
                    {"idle_fraction", li.measured_ns > 0 ? double(li.idle_ns) / double(li.measured_ns) : 0.0},
                    {"by_cause_us", causes(li.by_cause_ns)}});
  j["idle"] = idle;
  json gaps = json::array();
  for (const auto& g : s.gaps)
    gaps.push_back({{"lane", t.lanes[g.lane].name}, {"same_lanes", g.same_lanes}, {"start_us", us(g.start_ns)},
                    {"end_us", us(g.end_ns)}, {"dur_us", us(g.dur_ns())}, {"cause", gap_cause_key(g.cause)},
                    {"cause_label", gap_cause_label(g.cause)}, {"by_cause_us", causes(g.by_cause_ns)}});
  j["gaps"] = gaps;
  j["gaps_total"] = s.gaps_total;
  json labels = json::object();
  for (int k = 0; k < kGapCauses; ++k) labels[gap_cause_key(GapCause(k))] = gap_cause_label(GapCause(k));
  json kind_labels = json::object();
  for (int k = 0; k < kLaneKinds; ++k) kind_labels[lane_kind_key(LaneKind(k))] = lane_kind_label(LaneKind(k));
  j["labels"] = {{"causes", labels}, {"kinds", kind_labels}};
  j["units"] = {{"*_us", "µs (microseconds of the trace's timeline)"},
                {"*.utilization", "fraction of the window"},
                {"idle[].idle_fraction", "fraction of measured_us"},
                {"*.bytes", "bytes"},
                {"*.operations", "count"},
                {"trace.lanes", "count"},
                {"trace.ignored_events", "count"},
                {"gaps[].same_lanes", "count"},
                {"gaps_total", "count"}};
  return j;
}

}  // namespace tpusim
