// `tpusim run`'s bounded traces: --trace-lanes, --trace-window, --trace-gzip, --trace-detail-ops.
// Kept apart from cmd_run.cc, which only asks open_run_trace() for the file.
#include <charconv>
#include <filesystem>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "traces/chrome_trace.h"
#include "traces/trace_error.h"
#include "traces/trace_filter.h"
#include "workloads/loop/training_trace.h"

namespace tpusim::app {

namespace fs = std::filesystem;

void add_trace_run_options(CLI::App& run_cmd, RunArgs& ra) {
  run_cmd.add_option("--trace-lanes", ra.trace_lanes,
                     "Keep only these lanes in the trace: comma-separated globs over track, process or "
                     "process.track, e.g. 'core0.*,host*'")
      ->type_name("GLOB,...");
  run_cmd.add_option("--trace-window", ra.trace_window,
                     "Keep only operations overlapping this time window of the run, in µs (units ns/us/ms/s "
                     "allowed, an end may be empty), e.g. 18s:18.5s; training: traces the steps in it")
      ->type_name("A:B");
  run_cmd.add_flag("--trace-gzip", ra.trace_gzip, "Write the trace gzip-compressed, to DIR/trace.json.gz");
  run_cmd.add_option("--trace-detail-ops", ra.trace_detail_ops,
                     fmt::format("Training: unit-level (MXU/VPU/DMA/...) operations kept per program, after "
                                 "--trace-lanes/--trace-window (default {}; 0: all)",
                                 TrainingTraceOptions::kDefaultDetailOps))
      ->type_name("N");
}

std::unique_ptr<ChromeTraceFile> open_run_trace(const RunArgs& a, const std::string& out_dir,
                                                const std::string& config_hash, TrainingTraceOptions* training) {
  const std::pair<const char*, bool> bounds[] = {{"--trace-lanes", !a.trace_lanes.empty()},
                                                 {"--trace-window", !a.trace_window.empty()},
                                                 {"--trace-gzip", a.trace_gzip},
                                                 {"--trace-detail-ops", !a.trace_detail_ops.empty()}};
  for (const auto& [flag, given] : bounds)
    if (given && !a.trace) throw input_error(flag, "needs --trace");
  if (!a.trace) return nullptr;
  if (!a.trace_detail_ops.empty() && !training)
    throw input_error("--trace-detail-ops", "applies to training workloads only (a kernel's trace is complete)");

  TraceFileOptions opts;
  opts.gzip = a.trace_gzip;
  nlohmann::json bounded = nlohmann::json::object();
  try {
    if (!a.trace_lanes.empty()) {
      opts.filter.lanes = parse_lane_patterns(a.trace_lanes, "--trace-lanes");
      bounded["lanes"] = opts.filter.lanes.text();
    }
    if (!a.trace_window.empty()) {
      opts.filter.window = parse_time_window(a.trace_window, "--trace-window");
      bounded["window_us"] = opts.filter.window.text();
    }
  } catch (const TraceError& e) {
    throw input_error(e.where(), e.rule(), e.value(), e.suggestion());
  }
  uint64_t detail_ops = TrainingTraceOptions::kDefaultDetailOps;
  if (!a.trace_detail_ops.empty()) {
    const std::string& s = a.trace_detail_ops;
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), detail_ops);
    if (ec != std::errc() || ptr != s.data() + s.size())
      throw input_error("--trace-detail-ops", "must be a whole number of operations (0: no cap)", s,
                        "e.g. --trace-detail-ops 100000");
  }
  if (training) {
    bounded["detail_ops_per_program"] = detail_ops;
    if (training->range_set) bounded["steps"] = fmt::format("{}:{}", training->from, training->to);
  }

  const std::string name = a.trace_gzip ? "trace.json.gz" : "trace.json";
  const std::string other = a.trace_gzip ? "trace.json" : "trace.json.gz";
  // A trace of the other form left by an earlier run would be mistaken for this run's.
  std::error_code ec;
  fs::remove(fs::path(out_dir) / other, ec);

  auto file = std::make_unique<ChromeTraceFile>((fs::path(out_dir) / name).string(), opts);
  if (training) {
    training->filter = &file->options().filter;
    training->detail_ops = detail_ops;
  }
  nlohmann::json od = {{"tpusim_version", TPUSIM_VERSION}, {"config_hash", config_hash}};
  if (!bounded.empty()) od["bounds"] = bounded;
  file->set_other_data(od.dump());
  return file;
}

}  // namespace tpusim::app
