// Running a planned sweep: each point a `tpusim run` child process (ProcessPool), results appended
// as points finish and rewritten sorted at the end, --resume, --shard, plots; and merging shards.
#pragma once
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "sim/engine/run_estimate.h"
#include "sweep/plan.h"
#include "sweep/plots.h"

namespace tpusim::sweep {

struct SweepRunOptions {
  std::string tpusim;            // the tpusim binary that runs the points (the running one)
  unsigned jobs = 0;             // points in parallel; 0 = available_cpus()
  std::string out_dir;           // "" = default_out_dir(name)
  bool resume = false;           // keep finished points of DIR whose key matches
  uint64_t shard_index = 0;      // --shard I/N: run points whose position % N == I
  uint64_t shard_count = 1;
  bool plots = true;
  std::string plot_script;       // text of scripts/plot_sweep.py
  bool quiet = false;            // no progress display
  // Memory for the points running at once: each of the `jobs` parallel points is given its share as
  // its own --max-memory (a point whose estimate exceeds it fails with exit 2, naming the limit and
  // the knobs). bytes 0: the points' own default.
  RunLimits max_memory;
  // The points share a program memo (workloads/loop/program_memo.h): a step program one point
  // simulated is read, not simulated again, by every other point with the same configuration apart
  // from seed, padding, epochs and steps. Same results; a fresh directory per sweep, removed at its end.
  bool program_memo = true;
  // More flags of every point's `tpusim run` (e.g. --max-time 30m).
  std::vector<std::string> point_args;
  std::FILE* progress = stderr;
  // Called about every 100 ms while points run (the Python module checks for Ctrl-C here). An
  // exception from it stops the sweep: the running points are killed, the finished ones written
  // (sorted) to the result files, and it propagates.
  std::function<void()> poll;
  // Called as often: a signal number (SIGINT, SIGTERM) that the sweep was asked to stop by, or 0.
  // Nonzero: the running points are killed with their process groups and reaped, the finished ones
  // written (sorted), and run_sweep returns with `stopped_by` set (no plots); --resume runs the rest.
  std::function<int()> stop_signal;
};

struct SweepRunSummary {
  std::string out_dir;
  size_t points = 0;     // points of this run (this shard), resumed ones included
  size_t resumed = 0;    // kept from an earlier run (--resume)
  size_t ran = 0;        // run now (invalid points included: they fail without a process)
  size_t ok = 0, failed = 0;
  unsigned jobs = 0;
  double wall_s = 0;     // of the whole command
  std::vector<std::string> failures;  // "point 3 (rows=256): exit 3: <error>", in point order
  bool plots_skipped = false;         // no plots: --no-plots, a shard, or none declared
  PlotResult plots;
  int stopped_by = 0;                 // the signal that stopped the sweep early (stop_signal), 0 if none
  size_t not_run = 0;                 // points of this run left for --resume (stopped early)
};

std::string default_out_dir(const std::string& sweep_name);

// Throws ConfigError for an unusable output directory, or one that another sweep or merge is writing
// (DIR/.tpusim-sweep.lock: sweep/out_lock.h); point failures are in the summary.
SweepRunSummary run_sweep(const SweepPlan& plan, const SweepRunOptions& options);

struct MergeSummary {
  std::string out_dir;
  size_t records = 0;       // points in the merged files
  size_t failed = 0;        // of which not ok
  size_t duplicates = 0;    // identical points found in more than one input (kept once)
  size_t expected = 0;      // points of the sweep (after constraints)
  PlotResult plots;
  bool plots_skipped = false;
};

// `tpusim sweep merge OUT DIR...`: combines the result files of shards (or partial runs) of one sweep
// into OUT, sorted by point id. Inputs from different sweeps (sweep_hash), two different results for
// one point, and an OUT that is one of the inputs (it would be overwritten while read) are a
// ConfigError.
MergeSummary merge_sweeps(const std::string& out_dir, const std::vector<std::string>& dirs, bool plots,
                          const std::string& plot_script);

}  // namespace tpusim::sweep
