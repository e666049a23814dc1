// The `tpusim` subcommands. Each returns the process exit code and throws ConfigError (exit 2),
// SimError (exit 3) or anything else (exit 1, "internal error"); main() maps them.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/config_error.h"
#include "config/override.h"
#include "sim/engine/run_estimate.h"
#include "sim/hw/hw_config.h"
#include "workloads/data/dataset.h"
#include "workloads/config/workload_config.h"

namespace CLI {
class App;
}

namespace tpusim {
class ChromeTraceFile;
struct TrainingTraceOptions;
}  // namespace tpusim

namespace tpusim::app {

struct RunArgs {
  std::string hw_file;        // empty: the embedded default
  std::string workload_file;  // empty: the embedded default
  std::string training_args_file;  // --training-args: TrainingArguments/Accelerate file over the workload
  std::string maxtext_args;        // --maxtext-args: MaxText key=value arguments (a file or inline)
  std::vector<std::string> sets;
  std::string out_dir;        // empty: no report.json (unless --trace, see run())
  bool trace = false;
  std::string trace_steps;    // training: --trace-steps A:B, steps [A, B) traced in detail; empty: default
  std::string trace_lanes;    // --trace-lanes GLOB,...: keep only these lanes; empty: all (cmd_trace.cc)
  std::string trace_window;   // --trace-window A:B: keep operations overlapping it (µs); empty: all
  bool trace_gzip = false;    // --trace-gzip: DIR/trace.json.gz
  std::string trace_detail_ops;  // training: --trace-detail-ops N, unit operations per program; empty: default
  std::string engine;         // empty: kDefaultKernelEngine or kDefaultTrainingEngine, by workload kind
  bool full_sim = false;      // training: simulate every step (no replay of identical executions)
  std::string program_memo;   // training: a program memo directory shared with other runs (sweep points)
  bool dump_config = false;
  bool quiet = false;
  std::string max_memory;     // --max-memory SIZE ("8GiB", "500MB"); empty: half the machine's RAM
  std::string max_time;       // --max-time DURATION ("30m", "900s", "none"); empty: kDefaultMaxTimeSeconds
};
int run(const RunArgs& args);
// A simulation estimated to take longer is refused unless --max-time allows it: a full-pod step on
// the SystemC engine (~8 min here) is a choice to make, not a default to wait for.
inline constexpr double kDefaultMaxTimeSeconds = 300;
// The run's limits (sim/engine/run_estimate.h): memory from --max-memory, else half of the
// machine's physical RAM; time from --max-time, else kDefaultMaxTimeSeconds per simulation.
// ConfigError for a SIZE or DURATION that is not positive.
RunLimits run_limits(const RunArgs& args);
// A DURATION flag (`--max-time 30m`): a number with an optional unit s, m/min or h (none: seconds),
// or `none` for no limit; empty: the default. Bad text is exit 2 naming `flag`. Sets `seconds` and
// `time_origin` of `limits`.
void parse_time_limit(const std::string& text, const std::string& flag, RunLimits& limits);
// A SIZE flag (`--max-memory 8GiB`): a number and a unit (B, kB/MB/GB/TB, K/KiB/M/MiB/G/GiB/T/TiB);
// empty: the default, half of the machine's RAM. Bad text is exit 2 naming `flag`.
RunLimits parse_memory_limit(const std::string& text, const std::string& flag);

// Engines used without --engine. A training run defaults to the analytical engine: it simulates
// each distinct step program (8 core streams of a BERT step) in well under a second, which keeps the
// default 3-epoch run interactive; `--engine systemc` adds HBM contention (see docs/training.md).
inline constexpr const char* kDefaultKernelEngine = "systemc";
inline constexpr const char* kDefaultTrainingEngine = "analytical";

int validate(const std::vector<std::string>& files);

// Config loading shared by the commands (cmd_run.cc): the files named in `a`, or the defaults
// embedded in the binary; `origin` receives what was loaded (for reports). The hardware is --hw,
// else the workload's `hw:` (when `workload` is given), else the embedded default; --hw and `hw:`
// take a file or a built-in name (config/hw_loader.h).
HwConfig load_hw(const RunArgs& a, const std::vector<Override>& overrides, std::string* origin,
                 const WorkloadConfig* workload = nullptr);
// load_hw as a sweep plan calls it (sweep::PlanOptions::load_hw): REF is the point's --hw ("" = none).
std::function<HwConfig(const std::string&, const WorkloadConfig&, const std::vector<Override>&, std::string*)> sweep_hw_loader();
// The hardware a workload names with `hw:`, checked (tpusim validate) with the workload against it
// (num_processes, a kernel's chip and core); nothing when it names none.
void check_workload_hw(const WorkloadConfig& workload);
WorkloadConfig load_workload(const RunArgs& a, const std::vector<Override>& overrides, std::string* origin);
// Dataset length tables: configs/datasets/ of the source tree when present, else the embedded copies.
data::LengthTables dataset_tables();

// `tpusim advise`: ranked padding / precision / batch settings for a training workload (cmd_advise.cc).
int advise(const RunArgs& args);

// A subcommand defined in its own file: its CLI11 node and what runs when it was given.
struct Subcommand {
  CLI::App* app = nullptr;
  std::function<int()> run;
};
Subcommand add_trace_command(CLI::App& cli);   // tpusim trace summarize (cmd_trace.cc)
Subcommand add_report_command(CLI::App& cli);  // tpusim report (cmd_report.cc)
Subcommand add_compare_command(CLI::App& cli);  // tpusim compare (cmd_compare.cc)
Subcommand add_metrics_command(CLI::App& cli);  // tpusim metrics (cmd_metrics.cc)
Subcommand add_models_command(CLI::App& cli);   // tpusim models (cmd_models.cc)
Subcommand add_hlo_stats_command(CLI::App& cli);  // tpusim hlo-stats (cmd_hlo_stats.cc)
Subcommand add_export_hlo_command(CLI::App& cli);  // tpusim export-hlo (cmd_export_hlo.cc)

// DIR/report.json of a `tpusim run --out DIR`, parsed. Throws ConfigError naming DIR or the file:
// no such directory, no report.json, not JSON, not a tpusim report (cmd_report.cc).
nlohmann::json load_run_report(const std::string& dir);

// `tpusim run`'s trace bounds: --trace-lanes, --trace-window, --trace-gzip, --trace-detail-ops
// (cmd_trace_run.cc).
void add_trace_run_options(CLI::App& run_cmd, RunArgs& args);
// The run's trace file with its bounds, or null without --trace. Throws ConfigError for bounds given
// without --trace or bad values. Removes a stale trace of the other form (trace.json vs
// trace.json.gz) from `out_dir`, so that DIR holds one trace, this run's. `config_hash` goes into the
// trace's otherData; `training` also sets the detail cap and the window's steps in `training_opts`.
std::unique_ptr<ChromeTraceFile> open_run_trace(const RunArgs& args, const std::string& out_dir,
                                                const std::string& config_hash, TrainingTraceOptions* training_opts);

struct SweepArgs {
  std::string file;                // the sweep YAML
  unsigned jobs = 0;               // 0: the CPUs this process may use
  std::string out_dir;             // empty: out/sweeps/NAME
  bool resume = false;
  std::string shard;               // "I/N"; empty: all points
  std::vector<std::string> sets;   // applied to every point
  bool no_plots = false;
  bool no_program_memo = false;  // every point compiles and simulates its own programs
  bool dry_run = false;            // list the points and exit
  bool quiet = false;
  std::string max_memory;          // --max-memory for all running points together; empty: half of RAM
  std::string max_time;            // --max-time, passed to every point; empty: the points' default
};
// Exit codes: 0 every point ok; 4 at least one point failed (recorded in the results); 2 bad input.
int sweep(const SweepArgs& args);
inline constexpr int kExitSomePointsFailed = 4;

struct MergeArgs {
  std::string out_dir;
  std::vector<std::string> dirs;
  bool no_plots = false;
  bool quiet = false;
};
int sweep_merge(const MergeArgs& args);

// Bad input named by `where` (a file or a flag): "where: value 'v' rule; suggestion".
ConfigError input_error(std::string where, std::string rule, std::string value = "", std::string suggestion = "");

// Throws ConfigError naming `path` if it does not exist or is not a regular file.
void require_file(const std::string& path);

}  // namespace tpusim::app
