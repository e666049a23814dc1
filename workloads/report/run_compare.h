// `tpusim compare`: the figures of several runs' report.json side by side, each against the first.
// The rows are chosen from what the runs share: a training run's summary (times, compiles, warm-up,
// memory, the time breakdown, MFU) and a kernel run's (device time, throughput, utilizations), and
// both kinds' op profiles (the costliest kernels, a layer's copies as one row, matched by name).
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tpusim {

struct CompareRow {
  std::string section;  // "time", "compiles", "memory", "breakdown", "utilization", "kernels", ...
  std::string name;     // "total time"
  std::string unit;     // of `values`: "s", "bytes", "fraction", "count", "examples/s", "TFLOP/s", ...
  std::vector<std::optional<double>> values;  // per run; nullopt: that run has no such figure
  // Against the first run: value - first, and that over |first| (nullopt without both, or first 0).
  std::optional<double> diff(size_t run) const;
  std::optional<double> rel_diff(size_t run) const;
};

struct RunComparison {
  std::vector<std::string> labels;  // per run: its directory as given
  std::vector<std::string> kinds;   // "training" or "kernel"
  std::vector<std::string> names;   // workload names
  std::vector<std::string> notes;   // e.g. what a kernel run and a training run share
  std::vector<CompareRow> rows;
};

// `reports[i]` is the parsed report.json of run `labels[i]` (at least two); `top`: the costliest
// kernels of each run's profile taken into the union that the kernel rows show.
RunComparison compare_reports(const std::vector<std::string>& labels, const std::vector<nlohmann::json>& reports,
                              size_t top = 10);

// The comparison as JSON: {runs: [{dir, kind, workload}], notes, rows: [{section, name, unit,
// values, diff, rel_diff}]} (base units; null where a run has no figure).
nlohmann::json comparison_json(const RunComparison& c);

// As a table for a 100-column terminal: per row a display unit (s / ms / µs, GiB / MiB, %), the
// first run's value, then each other run's value, difference and relative difference; more than
// three runs are printed in blocks of two others, the first run repeated in each.
std::string format_comparison(const RunComparison& c);

}  // namespace tpusim
