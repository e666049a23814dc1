#include "workloads/report/run_compare.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "sim/analysis/op_profile.h"

namespace tpusim {
namespace {

using nlohmann::json;

enum Kinds : unsigned { kTraining = 1, kKernel = 2, kBoth = 3 };

// A figure of report.json (docs/training.md "Report", README "Reports") at `pointer`.
struct Figure {
  const char* section;
  const char* name;
  const char* unit;
  unsigned kinds;
  const char* pointer;
};

constexpr Figure kFigures[] = {
    {"time", "total time", "s", kTraining, "/summary/total_time_s"},
    {"time", "steady step time", "s", kTraining, "/summary/steady_step_time_s"},
    {"time", "steady throughput", "examples/s", kTraining, "/summary/steady_examples_per_s"},
    {"time", "end-to-end throughput", "examples/s", kTraining, "/summary/examples_per_s"},
    {"time", "device time", "s", kKernel, "/summary/device_time_s"},
    {"time", "device cycles", "count", kKernel, "/summary/device_cycles"},
    {"compiles", "compiles", "count", kTraining, "/summary/compiles"},
    {"compiles", "compile time", "s", kTraining, "/summary/compile_time_s"},
    {"compiles", "warm-up", "s", kTraining, "/summary/warmup_time_s"},
    {"breakdown", "compile", "s", kTraining, "/summary/breakdown_s/compile"},
    {"breakdown", "warm-up", "s", kTraining, "/summary/breakdown_s/warmup"},
    {"breakdown", "host", "s", kTraining, "/summary/breakdown_s/host"},
    {"breakdown", "device compute", "s", kTraining, "/summary/breakdown_s/device"},
    {"breakdown", "all-reduce", "s", kTraining, "/summary/breakdown_s/allreduce"},
    {"breakdown", "evaluation", "s", kTraining, "/summary/breakdown_s/eval"},
    {"memory", "peak HBM per device", "bytes", kTraining, "/summary/peak_hbm_bytes"},
    {"memory", "parameters", "bytes", kTraining, "/summary/memory/parameter_bytes"},
    {"memory", "gathered parameters", "bytes", kTraining, "/summary/memory/gathered_parameter_bytes"},
    {"memory", "gradients", "bytes", kTraining, "/summary/memory/gradient_bytes"},
    {"memory", "optimizer state", "bytes", kTraining, "/summary/memory/optimizer_state_bytes"},
    {"memory", "activations", "bytes", kTraining, "/summary/memory/activation_bytes"},
    {"memory", "HBM bytes moved", "bytes", kKernel, "/summary/hbm_bytes"},
    {"utilization", "MFU", "fraction", kTraining, "/summary/mfu"},
    {"utilization", "MXU utilization", "fraction", kBoth, "/summary/mxu_utilization"},
    {"utilization", "all-reduce share", "fraction", kTraining, "/summary/allreduce_share"},
    {"utilization", "collective share", "fraction", kTraining, "/summary/collective_share"},
    {"utilization", "padding waste", "fraction", kTraining, "/summary/padding_waste"},
    {"utilization", "achieved TFLOP/s", "TFLOP/s", kKernel, "/summary/achieved_tflop_per_s"},
    {"utilization", "achieved HBM GB/s", "GB/s", kKernel, "/summary/achieved_hbm_gbyte_per_s"},
    {"utilization", "HBM bandwidth util.", "fraction", kKernel, "/summary/hbm_bandwidth_utilization"},
    {"utilization", "roofline fraction", "fraction", kKernel, "/summary/ideal_bound_fraction"},
};

unsigned kind_of(const json& r) {
  return r.contains("workload") && r["workload"].value("kind", "") == "kernel" ? kKernel : kTraining;
}

std::optional<double> number_at(const json& r, const char* pointer) {
  const json::json_pointer p(pointer);
  if (!r.contains(p)) return std::nullopt;
  const json& v = r.at(p);
  if (!v.is_number()) return std::nullopt;
  return v.get<double>();
}

// The op profile the comparison shows: a kernel run's, or a training run's main train program's
// (the `train` program run most often, as the run summary picks it).
const json* profile_of(const json& r) {
  if (kind_of(r) == kKernel) return r.contains("op_profile") && r["op_profile"].is_array() ? &r["op_profile"] : nullptr;
  if (!r.contains("programs") || !r["programs"].is_array()) return nullptr;
  const json* best = nullptr;
  std::pair<bool, uint64_t> best_rank{};
  for (const json& p : r["programs"]) {
    if (!p.contains("op_profile") || !p["op_profile"].is_array() || p["op_profile"].empty()) continue;
    const std::pair<bool, uint64_t> rank{p.value("graph", "") == "train", p.value("executions", uint64_t{0})};
    if (!best || rank > best_rank) {
      best = &p["op_profile"];
      best_rank = rank;
    }
  }
  return best;
}

// Time per execution by kernel, a layer's copies as one row (op_group_name), costliest first.
std::vector<std::pair<std::string, double>> grouped_kernels(const json* profile) {
  std::map<std::string, double> by_name;
  if (profile)
    for (const json& e : *profile)
      if (e.is_object() && e.contains("name") && e["name"].is_string())
        by_name[op_group_name(e["name"].get<std::string>())] += e.value("time_s", 0.0);
  std::vector<std::pair<std::string, double>> v(by_name.begin(), by_name.end());
  std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return v;
}

// A display unit for a row: the scale its values are divided by, and the name shown.
struct Display {
  double scale = 1;
  std::string unit;
  bool points = false;  // a fraction shown in %: differences in percentage points
};

// `m`: the largest magnitude the unit must show (a row's, or its section's for the kernel rows, so
// that they read in one unit).
Display display(const CompareRow& r, double m) {
  if (r.unit == "s") {
    if (m >= 1) return {1, "s"};
    if (m >= 1e-3) return {1e-3, "ms"};
    return {1e-6, "µs"};
  }
  if (r.unit == "bytes") {
    if (m >= double(1ull << 30)) return {double(1ull << 30), "GiB"};
    if (m >= double(1ull << 20)) return {double(1ull << 20), "MiB"};
    return {1024, "KiB"};
  }
  if (r.unit == "fraction") return {0.01, "%", true};
  return {1, r.unit};
}

std::string num(double v, bool integral) {
  if (integral || v == 0) return fmt::format("{:.0f}", v);
  const double a = std::abs(v);
  if (a >= 1e5) return fmt::format("{:.0f}", v);
  if (a >= 100) return fmt::format("{:.1f}", v);
  if (a >= 10) return fmt::format("{:.2f}", v);
  if (a >= 1) return fmt::format("{:.3f}", v);
  return fmt::format("{:.4f}", v);
}

constexpr size_t kLabel = 26, kValue = 11, kDiff = 10, kPct = 7;
// The first run and two others fit 100 columns: 26 + 12 + 2 x 31.
constexpr size_t kRunsPerBlock = 2;

}  // namespace

std::optional<double> CompareRow::diff(size_t run) const {
  if (run >= values.size() || !values[run] || !values[0]) return std::nullopt;
  return *values[run] - *values[0];
}

std::optional<double> CompareRow::rel_diff(size_t run) const {
  const auto d = diff(run);
  if (!d || *values[0] == 0) return std::nullopt;
  return *d / std::abs(*values[0]);
}

RunComparison compare_reports(const std::vector<std::string>& labels, const std::vector<json>& reports, size_t top) {
  RunComparison c;
  c.labels = labels;
  unsigned present = 0;
  for (const json& r : reports) {
    const unsigned k = kind_of(r);
    present |= k;
    // A kind: hlo report has the training report's figures (hlo_report.h) and is compared as one.
    const std::string kind = r.contains("workload") ? r["workload"].value("kind", "") : "";
    c.kinds.push_back(k == kKernel ? "kernel" : kind == "hlo" ? "hlo" : "training");
    c.names.push_back(r.contains("workload") ? r["workload"].value("name", "") : "");
  }
  if (present == kBoth)
    c.notes.push_back("kernel and training runs: only the figures they share are compared (MXU utilization; the "
                      "kernels' time per execution of the kernel's program and of the training run's main train program)");
  for (const Figure& f : kFigures) {
    if ((f.kinds & present) != present) continue;
    CompareRow row{f.section, f.name, f.unit, {}};
    bool any = false;  // a row of zeros or of nothing says nothing
    for (const json& r : reports) {
      row.values.push_back(number_at(r, f.pointer));
      any = any || (row.values.back() && *row.values.back() != 0);
    }
    if (any) c.rows.push_back(std::move(row));
  }
  // Kernels: the union of every run's `top` costliest, in the first run's order, then the others'.
  std::vector<std::vector<std::pair<std::string, double>>> kernels;
  for (const json& r : reports) kernels.push_back(grouped_kernels(profile_of(r)));
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (const auto& k : kernels)
    for (size_t i = 0; i < std::min(top, k.size()); ++i)
      if (seen.insert(k[i].first).second) names.push_back(k[i].first);
  for (const std::string& n : names) {
    CompareRow row{"kernels", n, "s", {}};
    for (const auto& k : kernels) {
      auto it = std::find_if(k.begin(), k.end(), [&](const auto& e) { return e.first == n; });
      row.values.push_back(it == k.end() ? std::nullopt : std::optional<double>(it->second));
    }
    c.rows.push_back(std::move(row));
  }
  return c;
}

json comparison_json(const RunComparison& c) {
  json runs = json::array();
  for (size_t i = 0; i < c.labels.size(); ++i)
    runs.push_back({{"dir", c.labels[i]}, {"kind", c.kinds[i]}, {"workload", c.names[i]}});
  auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  json rows = json::array();
  for (const CompareRow& r : c.rows) {
    json values = json::array(), diff = json::array(), rel = json::array();
    for (size_t i = 0; i < r.values.size(); ++i) {
      values.push_back(opt(r.values[i]));
      diff.push_back(i ? opt(r.diff(i)) : json(nullptr));
      rel.push_back(i ? opt(r.rel_diff(i)) : json(nullptr));
    }
    rows.push_back({{"section", r.section}, {"name", r.name}, {"unit", r.unit}, {"values", values}, {"diff", diff},
                    {"rel_diff", rel}});
  }
  return {{"runs", runs}, {"notes", c.notes}, {"rows", rows}};
}

std::string format_comparison(const RunComparison& c) {
  static const std::map<std::string, std::string> kSections = {
      {"time", "time"},
      {"compiles", "compiles (busiest process)"},
      {"breakdown", "where the time went"},
      {"memory", "memory (per device, at the peak)"},
      {"utilization", "utilization"},
      {"kernels", "costliest kernels: time per execution (training: main train program; layers as one row)"}};
  std::string o = "runs\n";
  for (size_t i = 0; i < c.labels.size(); ++i)
    o += fmt::format("  {}  {}  ({}, {})\n", char('A' + std::min<size_t>(i, 25)), c.labels[i], c.names[i], c.kinds[i]);
  for (const std::string& n : c.notes) o += "note: " + n + "\n";
  auto col = [](size_t i) { return std::string(1, char('A' + std::min<size_t>(i, 25))); };
  for (size_t from = 1; from < std::max<size_t>(c.labels.size(), 2); from += kRunsPerBlock) {
    const size_t to = std::min(c.labels.size(), from + kRunsPerBlock);
    o += fmt::format("\n{:<{}} {:>{}}", "", kLabel, col(0), kValue);
    for (size_t i = from; i < to; ++i)
      o += fmt::format(" {:>{}} {:>{}} {:>{}}", col(i), kValue, col(i) + "-A", kDiff, "%", kPct);
    o += "\n";
    std::string section;
    for (const CompareRow& r : c.rows) {
      if (r.section != section) {
        section = r.section;
        auto it = kSections.find(section);
        o += (it == kSections.end() ? section : it->second) + "\n";
      }
      double m = 0;
      for (const CompareRow& x : c.rows)
        if (&x == &r || (r.section == "kernels" && x.section == "kernels"))
          for (const auto& v : x.values)
            if (v) m = std::max(m, std::abs(*v));
      const Display d = display(r, m);
      const bool integral = r.unit == "count";
      // Appended piecewise: `"  " + name + ...` trips GCC 12's -Wrestrict false positive.
      std::string label = "  ";
      label += r.name;
      if (!d.unit.empty() && d.unit != "count") label += fmt::format(" ({})", d.unit);
      if (label.size() > kLabel) {  // long kernel names get a line of their own
        o += label + "\n";
        label.clear();
      }
      auto value = [&](const std::optional<double>& v) { return v ? num(*v / d.scale, integral) : "-"; };
      o += fmt::format("{:<{}} {:>{}}", label, kLabel, value(r.values[0]), kValue);
      for (size_t i = from; i < to; ++i) {
        const auto df = r.diff(i), rel = r.rel_diff(i);
        o += fmt::format(" {:>{}} {:>{}} {:>{}}", value(r.values[i]), kValue,
                         df ? fmt::format("{}{}{}", *df >= 0 ? "+" : "", num(*df / d.scale, integral), d.points ? "pp" : "")
                            : "-",
                         kDiff,
                         rel ? fmt::format("{:+.1f}%", 100 * *rel) : "-", kPct);
      }
      o += "\n";
    }
  }
  return o;
}

}  // namespace tpusim
