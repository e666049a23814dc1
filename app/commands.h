// The `tpusim` subcommands. Each returns the process exit code and throws ConfigError (exit 2),
// SimError (exit 3) or anything else (exit 1, "internal error"); main() maps them.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "config/config_error.h"

namespace tpusim::app {

struct RunArgs {
  std::string hw_file;        // empty: the embedded default
  std::string workload_file;  // empty: the embedded default
  std::vector<std::string> sets;
  std::string out_dir;        // empty: no report.json (unless --trace, see run())
  bool trace = false;
  std::string trace_steps;    // training: --trace-steps A:B, steps [A, B) traced in detail; empty: default
  std::string engine;         // empty: kDefaultKernelEngine or kDefaultTrainingEngine, by workload kind
  bool full_sim = false;      // training: simulate every step (no replay of identical executions)
  bool dump_config = false;
  bool quiet = false;
};
int run(const RunArgs& args);

// Engines used without --engine. A training run defaults to the analytical engine: it simulates
// each distinct step program (8 core streams of a BERT step) in well under a second, which keeps the
// default 3-epoch run interactive; `--engine systemc` adds HBM contention (see docs/training.md).
inline constexpr const char* kDefaultKernelEngine = "systemc";
inline constexpr const char* kDefaultTrainingEngine = "analytical";

int validate(const std::vector<std::string>& files);

struct SweepArgs {
  std::string file;                // the sweep YAML
  unsigned jobs = 0;               // 0: the CPUs this process may use
  std::string out_dir;             // empty: out/sweeps/NAME
  bool resume = false;
  std::string shard;               // "I/N"; empty: all points
  std::vector<std::string> sets;   // applied to every point
  bool no_plots = false;
  bool dry_run = false;            // list the points and exit
  bool quiet = false;
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
