#include "workloads/report/run_compare.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>
#include <string_view>

#include <fmt/format.h>

#include "sim/analysis/op_profile.h"
#include "workloads/report/report_fields.h"

namespace tpusim {
namespace {

using nlohmann::json;

enum Kinds : unsigned { kTraining = 1, kKernel = 2, kBoth = 3 };

// The sections in print order, with their titles, and the rows of each by their compare name in the
// field catalogue (workloads/report/report_fields.h), which gives their pointer, unit and kinds.
struct Section {
  const char* key;
  const char* title;
  std::vector<const char*> rows;
};

const std::vector<Section>& sections() {
  static const std::vector<Section> s = {
      {"time", "time",
       {"total time", "steady step time", "steady throughput", "tokens/s per chip", "USD per million tokens",
        "end-to-end throughput", "device time", "device cycles"}},
      {"compiles", "compiles (busiest process)", {"compiles", "compile time", "warm-up"}},
      {"breakdown", "where the time went", {"compile", "warm-up", "host", "device compute", "all-reduce", "evaluation"}},
      {"memory", "memory (per device, at the peak)",
       {"peak HBM per device", "parameters", "gathered parameters", "gradients", "optimizer state", "activations",
        "HBM bytes moved"}},
      {"utilization", "utilization",
       {"MFU", "MFU (6ND)", "MXU utilization", "all-reduce share", "collective share", "padding waste", "achieved TFLOP/s",
        "achieved HBM GB/s", "HBM bandwidth util.", "roofline fraction"}},
  };
  return s;
}
constexpr const char* kKernelsTitle =
    "costliest kernels: time per execution (training: main train program; layers as one row)";

// A row of figures: where report.json has it, in which unit, and for which kinds of run (a kind: hlo
// report counts as a training one).
struct Figure {
  const char* section;
  const char* name;
  std::string unit;
  unsigned kinds = 0;
  const char* pointer;
};

// A cycle count is shown as a count: a whole number without a unit.
std::string compare_unit(const char* unit) { return std::string_view(unit) == "cycles" ? "count" : unit; }

// The rows in print order, from the catalogue; fields of several kinds with one name are one row.
// A name in sections() without a field, or a field's compare name missing there, is a bug caught by
// the first comparison (run_compare_test.cc).
const std::vector<Figure>& figures() {
  static const std::vector<Figure> f = [] {
    std::vector<Figure> rows;
    size_t matched = 0, named = 0;
    for (const ReportField& field : report_fields()) named += *field.compare.name != 0;
    for (const Section& s : sections())
      for (const char* name : s.rows) {
        Figure row{s.key, name, "", 0, ""};
        for (const ReportField& field : report_fields()) {
          if (std::string_view(field.compare.section) != s.key || std::string_view(field.compare.name) != name) continue;
          if (row.kinds && std::string_view(row.pointer) != field.path)
            throw std::logic_error(fmt::format("compare row '{}' names two report paths", name));
          row.unit = compare_unit(field.unit);
          row.pointer = field.path;
          row.kinds |= (field.in(kTrainingReport) ? unsigned(kTraining) : 0u) | (field.in(kKernelReport) ? unsigned(kKernel) : 0u);
          ++matched;
        }
        if (!row.kinds) throw std::logic_error(fmt::format("compare row '{}: {}' has no report field", s.key, name));
        rows.push_back(row);
      }
    if (matched != named) throw std::logic_error("a report field's compare name is not among the compare rows");
    return rows;
  }();
  return f;
}

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
  for (const Figure& f : figures()) {
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
  std::map<std::string, std::string> titles = {{"kernels", kKernelsTitle}};
  for (const Section& s : sections()) titles[s.key] = s.title;
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
        auto it = titles.find(section);
        o += (it == titles.end() ? section : it->second) + "\n";
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
