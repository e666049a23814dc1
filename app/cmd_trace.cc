// `tpusim trace summarize TRACE`: per-lane busy time, critical paths, top operations and idle gaps
// of a trace written by `tpusim run --trace` (traces/trace_summary.h).
#include <charconv>
#include <filesystem>
#include <iostream>

#include <CLI/CLI.hpp>

#include "app/commands.h"
#include "traces/trace_error.h"
#include "traces/trace_filter.h"
#include "traces/trace_reader.h"
#include "traces/trace_summary.h"

namespace tpusim::app {
namespace {

namespace fs = std::filesystem;

struct SummarizeArgs {
  std::string trace;
  std::string top = "10";
  std::string window, steps, lanes;
  bool json = false;
};

// A directory stands for the trace in it (what `run --out DIR --trace` wrote).
std::string trace_path(const std::string& given) {
  std::error_code ec;
  if (!fs::is_directory(given, ec)) return given;
  for (const char* name : {"trace.json", "trace.json.gz"}) {
    const fs::path p = fs::path(given) / name;
    if (fs::is_regular_file(p, ec)) return p.string();
  }
  throw input_error(given, "is a directory without trace.json or trace.json.gz", "",
                    "write one with `tpusim run --out " + given + " --trace`");
}

int summarize(const SummarizeArgs& a) {
  SummaryOptions o;
  {
    size_t top = 0;
    const std::string& s = a.top;
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), top);
    if (ec != std::errc() || ptr != s.data() + s.size() || top == 0 || top > 100000)
      throw input_error("--top", "must be a whole number from 1 to 100000", s, "e.g. --top 20");
    o.top = top;
  }
  try {
    if (!a.window.empty()) o.window = parse_time_window(a.window, "--window");
    if (!a.steps.empty()) o.steps = parse_step_range(a.steps, "--steps");
    if (!a.lanes.empty()) o.lanes = parse_lane_patterns(a.lanes, "--lanes");
    const TraceData t = read_trace_file(trace_path(a.trace));
    const TraceSummary s = summarize_trace(t, o);
    if (a.json) std::cout << trace_summary_json(t, s, o).dump(2) << "\n";
    else std::cout << format_trace_summary(t, s, o);
  } catch (const TraceError& e) {
    throw input_error(e.where(), e.rule(), e.value(), e.suggestion());
  }
  return 0;
}

}  // namespace

Subcommand add_trace_command(CLI::App& cli) {
  auto args = std::make_shared<SummarizeArgs>();
  CLI::App* trace = cli.add_subcommand("trace", "Analyse a trace written by `tpusim run --trace`");
  trace->require_subcommand(0, 1);
  CLI::App* sum = trace->add_subcommand(
      "summarize", "Per-lane busy time and utilization, critical path by lane kind, longest operations and idle gaps "
                   "of compute lanes with their likely cause (trace.json or trace.json.gz)");
  sum->add_option("TRACE", args->trace, "Trace file (plain or gzip), or the --out DIR holding it")->required();
  sum->add_option("--top", args->top, "Rows of the longest operations, gaps and critical-path steps (default 10)")
      ->type_name("N");
  sum->add_option("--window", args->window,
                  "Analyse only this time window, in µs of the trace (units ns/us/ms/s allowed, an end may be empty)")
      ->type_name("A:B");
  sum->add_option("--steps", args->steps, "Training traces: analyse only steps A to B-1 (args.step)")
      ->type_name("A:B");
  sum->add_option("--lanes", args->lanes,
                  "Analyse only these lanes: comma-separated globs over track, process or process.track")
      ->type_name("GLOB,...");
  sum->add_flag("--json", args->json, "Print JSON (times in µs) instead of tables");
  return {trace, [args, sum] {
            if (!sum->parsed())
              throw input_error("tpusim trace", "needs a command: summarize", "", "e.g. tpusim trace summarize out/trace.json");
            return summarize(*args);
          }};
}

}  // namespace tpusim::app
