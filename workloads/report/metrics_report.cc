#include "workloads/report/metrics_report.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

#include <fmt/format.h>

namespace tpusim {
namespace {

using nlohmann::json;
using Samples = std::vector<std::pair<double, uint64_t>>;

// torch_xla's default percentiles (XLA_METRICS_PERCENTILES "0.01:0.05:0.1:0.2:0.5:0.8:0.9:0.95:0.99").
constexpr double kPercentiles[] = {0.01, 0.05, 0.1, 0.2, 0.5, 0.8, 0.9, 0.95, 0.99};

// A metric as report.json holds it (workloads/report/training_report.cc metric_json): the samples and
// their unit ("s" or "bytes"); `first_s`/`last_s`: simulated times of the first and last sample
// when known (for ValueRate and Rate), else equal.
struct Metric {
  std::string unit = "s";
  Samples samples;
  uint64_t count = 0;
  double total = 0;
  double first_s = 0, last_s = 0;
};

std::string repr(const Metric& m, double v) { return m.unit == "bytes" ? xla_bytes(v) : xla_duration(v); }

// torch_xla's EmitMetricInfo: ValueRate and Rate over the time between the first and the last
// sample (left out when that is 0), percentiles over the sorted samples. torch_xla keeps the last
// XLA_METRICS_SAMPLES (1024) samples for rates and percentiles; here every sample of the run counts.
std::string emit_metric(const std::string& name, const Metric& m) {
  std::string o = fmt::format("Metric: {}\n  TotalSamples: {}\n  Accumulator: {}\n", name, m.count, repr(m, m.total));
  const double span = m.last_s - m.first_s;
  if (span > 0) {
    o += fmt::format("  ValueRate: {} / second\n", repr(m, m.total / span));
    o += fmt::format("  Rate: {:g} / second\n", double(m.count) / span);
  }
  o += "  Percentiles: ";
  for (size_t i = 0; i < std::size(kPercentiles); ++i)
    o += fmt::format("{}{:g}%={}", i ? "; " : "", kPercentiles[i] * 100.0, repr(m, xla_percentile(m.samples, kPercentiles[i])));
  return o + "\n";
}

std::string emit_counter(const std::string& name, uint64_t v) { return fmt::format("Counter: {}\n  Value: {}\n", name, v); }

// metrics.NAME of report.json: {count, total_U, samples_U: [[v, n], ...]}; nullopt when absent or
// without samples (a report of an older tpusim has only its percentiles).
std::optional<Metric> read_metric(const json& metrics, const char* name) {
  auto it = metrics.find(name);
  if (it == metrics.end() || !it->is_object()) return std::nullopt;
  Metric m;
  m.unit = it->contains("samples_bytes") ? "bytes" : "s";
  auto s = it->find("samples_" + m.unit);
  if (s == it->end() || !s->is_array()) return std::nullopt;
  for (const json& p : *s) {
    if (!p.is_array() || p.size() != 2 || !p[0].is_number() || !p[1].is_number_unsigned()) continue;
    m.samples.emplace_back(p[0].get<double>(), p[1].get<uint64_t>());
    m.count += m.samples.back().second;
    m.total += m.samples.back().first * double(m.samples.back().second);
  }
  if (m.count == 0) return std::nullopt;
  return m;
}

// The simulated times of a metric's first and last sample, from steps[]: an execution ends with its
// step (end_s); a compile finishes when its step starts on the device (start_s). Unknown for the
// transfers (left at 0: no rates).
void sample_span(const json& steps, const std::string& name, Metric* m) {
  bool first = true;
  for (const json& s : steps) {
    double t = 0;
    if (name == "ExecuteTime") t = s.value("end_s", 0.0);
    else if (name == "CompileTime" && s.value("compile", "") == "compiled") t = s.value("start_s", 0.0);
    else continue;
    if (first) m->first_s = t;
    m->last_s = t;
    first = false;
  }
}

}  // namespace

std::string xla_duration(double seconds) {
  // MetricFnTime: parts d, h, m, s (2 digits), ms (3), us (7 wide, 3 decimals), from the first
  // non-zero part on; the us part always. torch_xla prints the whole parts with precision 0 (which
  // rounds, so 1.9 ms can show as "002ms900.000us"); they are whole nanoseconds truncated here.
  int64_t ns = std::llround(std::max(0.0, seconds) * 1e9);
  struct Part {
    const char* suffix;
    int64_t ns;
  };
  static constexpr Part kParts[] = {{"d", 86400'000'000'000}, {"h", 3600'000'000'000}, {"m", 60'000'000'000},
                                    {"s", 1'000'000'000},      {"ms", 1'000'000}};
  std::string o;
  for (const Part& p : kParts) {
    const int64_t whole = ns / p.ns;
    if (whole == 0 && o.empty()) continue;
    o += fmt::format("{:0{}}{}", whole, p.ns == 1'000'000 ? 3 : 2, p.suffix);
    ns -= whole * p.ns;
  }
  return o + fmt::format("{:07.3f}us", double(ns) / 1e3);
}

std::string xla_bytes(double bytes) {
  // MetricFnBytes: B, KB, MB, GB, TB, PB, dividing by 1024 while >= 1024; two decimals.
  static const char* kSuffix[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  size_t i = 0;
  for (; i + 1 < std::size(kSuffix) && bytes >= 1024.0; ++i) bytes /= 1024.0;
  return fmt::format("{:.2f}{}", bytes, kSuffix[i]);
}

double xla_percentile(const Samples& samples, double p) {
  uint64_t n = 0;
  for (const auto& [v, c] : samples) n += c;
  if (n == 0) return 0;
  uint64_t index = std::min<uint64_t>(uint64_t(p * double(n)), n - 1);  // size_t index = p * size
  for (const auto& [v, c] : samples) {
    if (index < c) return v;
    index -= c;
  }
  return samples.back().first;
}

std::string torch_xla_metrics_report(const json& report) {
  const json& metrics = report.contains("metrics") && report["metrics"].is_object() ? report["metrics"] : json::object();
  std::string o;
  if (report.contains("workload") && report["workload"].value("kind", "") == "kernel") {
    // One program execution: its device time.
    Metric m;
    const double t = report.contains("summary") ? report["summary"].value("device_time_s", 0.0) : 0.0;
    m.samples = {{t, 1}};
    m.count = 1;
    m.total = t;
    return emit_metric("ExecuteTime", m);
  }
  // metrics_report() prints the lazy-tensor core's arena (torch::lazy: compile-cache and step
  // counters, aten:: CPU fallbacks) before the runtime's (torch_xla::runtime: compile, execute and
  // transfer metrics); each arena its metrics then its counters, by name.
  std::map<std::string, uint64_t> lazy_counters;
  for (const auto& [name, v] : metrics.items())
    if (v.is_number_unsigned() && v.get<uint64_t>() > 0) lazy_counters[name] = v.get<uint64_t>();
  for (const auto& [name, v] : lazy_counters) o += emit_counter(name, v);
  const json steps = report.contains("steps") && report["steps"].is_array() ? report["steps"] : json::array();
  for (const char* name : {"CompileTime", "ExecuteTime", "InboundData", "OutboundData", "TransferFromDeviceTime",
                           "TransferToDeviceTime"}) {
    std::optional<Metric> m = read_metric(metrics, name);
    if (!m) continue;
    sample_span(steps, name, &*m);
    o += emit_metric(name, *m);
  }
  return o;
}

}  // namespace tpusim
