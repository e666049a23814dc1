// A torch_xla-style metrics report of a run's report.json: the text layout of
// torch_xla.debug.metrics.metrics_report() (torch_xla/csrc/runtime/metrics.cc and
// torch/csrc/lazy/core/metrics.cpp), from the samples make_training_report() writes under `metrics`.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace tpusim {

// The whole report: "Metric: NAME" blocks (TotalSamples, Accumulator, ValueRate, Rate, Percentiles)
// and "Counter: NAME" blocks (Value). A kernel run's report gives its one ExecuteTime sample.
// Metrics without samples and zero counters are left out, as torch_xla creates them on first use.
std::string torch_xla_metrics_report(const nlohmann::json& report);

// torch_xla's value representations (metrics.cc MetricFnTime / MetricFnBytes): a duration
// "02m11s390ms123.456us", "431ms297.123us", "000.120us"; bytes "1.08GB" (binary multiples, two
// decimals).
std::string xla_duration(double seconds);
std::string xla_bytes(double bytes);

// The sample torch_xla prints as percentile `p` (0..1) of `samples` ([value, count] pairs,
// ascending): the value at index floor(p x n) of the n sorted samples. 0 when empty.
double xla_percentile(const std::vector<std::pair<double, uint64_t>>& samples, double p);

}  // namespace tpusim
