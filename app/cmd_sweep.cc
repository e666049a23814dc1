// `tpusim sweep FILE` and `tpusim sweep merge OUT DIR...`: the command-line side of sweep/ (plan,
// run, merge); this file parses flags and prints what happened.
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <stdexcept>

#include <fmt/format.h>

#include "app/commands.h"
#include "app/embedded.h"
#include "base/config_error.h"
#include "sweep/results.h"
#include "sweep/run_sweep.h"

namespace tpusim::app {

namespace fs = std::filesystem;

namespace {

// The binary that runs the points: this one (so a sweep never mixes tpusim versions).
std::string self_path() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw std::runtime_error("cannot find the tpusim binary (/proc/self/exe): " + ec.message());
  return p.string();
}

const std::string& plot_script() {
  const auto& files = embedded_files();
  const auto it = files.find(kPlotScriptFile);
  if (it == files.end()) throw std::logic_error(std::string(kPlotScriptFile) + " was not embedded at build time");
  return it->second;
}

void parse_shard(const std::string& text, uint64_t* index, uint64_t* count) {
  const size_t slash = text.find('/');
  auto number = [](const std::string& s, uint64_t* v) {
    if (s.empty() || s.size() > 9 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) return false;
    *v = std::stoull(s);
    return true;
  };
  if (slash == std::string::npos || !number(text.substr(0, slash), index) || !number(text.substr(slash + 1), count) ||
      *count == 0 || *index >= *count)
    throw input_error("--shard", "must be I/N with 0 <= I < N (run the I-th of N slices of the points)", text,
                      "e.g. --shard 0/4; in a Slurm array: --shard $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT");
}

void print_plots(const sweep::PlotResult& plots, bool skipped, bool quiet) {
  if (skipped) return;
  if (!plots.warning.empty()) std::cerr << "warning: plots skipped: " << plots.warning << "\n";
  if (quiet || plots.files.empty()) return;
  for (size_t i = 0; i < plots.files.size(); ++i)
    std::cout << fmt::format("{:<10} {}\n", i ? "" : "plots", plots.files[i]);
}

void print_dry_run(const sweep::SweepPlan& plan) {
  std::cout << fmt::format("{:<10} {}: {} points of a {}-point grid, {} axes\n", "sweep", plan.config.name,
                           plan.points.size(), plan.grid_points, plan.config.axes.size());
  for (const auto& p : plan.points) {
    std::string line = fmt::format("{:>6}  ", p.point.id);
    for (size_t i = 0; i < plan.config.axes.size(); ++i)
      line += fmt::format("{}{}={}", i ? " " : "", plan.config.axes[i].name, p.point.values[i].display);
    if (!p.invalid.empty()) line += "  (invalid, will fail: " + p.invalid + ")";
    std::cout << line << "\n";
  }
}

// SIGINT (Ctrl-C) and SIGTERM (kill, Slurm's scancel, a CI timeout) while points run: the handler
// only records the signal; run_sweep sees it within 100 ms, kills the points' process groups, reaps
// them and writes the finished rows. The previous dispositions come back when the run ends.
volatile std::sig_atomic_t g_stop_signal = 0;

extern "C" void on_stop_signal(int sig) { g_stop_signal = sig; }

class StopSignals {
 public:
  StopSignals() {
    g_stop_signal = 0;
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
  }
  ~StopSignals() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  struct sigaction old_int_ {}, old_term_ {};
};

// A word of the resume command, quoted for a POSIX shell when it needs to be.
std::string shell_word(const std::string& w) {
  if (!w.empty() && w.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%") == std::string::npos)
    return w;
  std::string q = "'";
  for (char c : w) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// The command that finishes a stopped sweep: the same one with --resume and an explicit --out.
std::string resume_command(const SweepArgs& a, const std::string& out_dir) {
  std::string cmd = "tpusim sweep " + shell_word(a.file);
  for (const auto& s : a.sets) cmd += " --set " + shell_word(s);
  if (!a.shard.empty()) cmd += " --shard " + shell_word(a.shard);
  if (a.jobs) cmd += " --jobs " + std::to_string(a.jobs);
  if (!a.max_memory.empty()) cmd += " --max-memory " + shell_word(a.max_memory);
  if (!a.max_time.empty()) cmd += " --max-time " + shell_word(a.max_time);
  if (a.no_plots) cmd += " --no-plots";
  if (a.no_program_memo) cmd += " --no-program-memo";
  return cmd + " --out " + shell_word(out_dir) + " --resume";
}

}  // namespace

int sweep(const SweepArgs& a) {
  sweep::SweepRunOptions opt;
  if (!a.shard.empty()) parse_shard(a.shard, &opt.shard_index, &opt.shard_count);
  require_file(a.file);
  opt.max_memory = parse_memory_limit(a.max_memory, "--max-memory");  // bad text: exit 2 before planning
  if (!a.max_time.empty()) {
    RunLimits checked;
    parse_time_limit(a.max_time, "--max-time", checked);  // bad text: exit 2 before planning
    opt.point_args = {"--max-time", a.max_time};
  }
  sweep::PlanOptions po;
  po.extra_sets = a.sets;
  po.load_hw = sweep_hw_loader();
  const sweep::SweepPlan plan = sweep::plan_sweep(a.file, po);
  if (a.dry_run) {
    print_dry_run(plan);
    return 0;
  }
  opt.tpusim = self_path();
  opt.jobs = a.jobs;
  opt.out_dir = a.out_dir;
  opt.resume = a.resume;
  opt.plots = !a.no_plots;
  opt.program_memo = !a.no_program_memo;
  opt.plot_script = plot_script();
  opt.quiet = a.quiet;
  const StopSignals stop_signals;
  opt.stop_signal = [] { return int(g_stop_signal); };
  const sweep::SweepRunSummary s = sweep::run_sweep(plan, opt);

  if (!a.quiet) {
    // Throughput of the points run now (resumed ones cost nothing), over the whole command's time.
    const std::string rate = s.ran && s.wall_s > 0 ? fmt::format(", {:.1f} points/min", double(s.ran) / s.wall_s * 60) : "";
    std::cout << fmt::format("{:<10} {}: {} points ({} ok, {} failed{}) in {:.1f} s with {} jobs{}{}\n",
                             "sweep", plan.config.name, s.points, s.ok, s.failed,
                             s.resumed ? fmt::format(", {} resumed", s.resumed) : "", s.wall_s, s.jobs, rate,
                             opt.shard_count > 1 ? fmt::format(" (shard {}/{})", opt.shard_index, opt.shard_count) : "");
    std::cout << fmt::format("{:<10} {}\n{:<10} {}\n", "results", (fs::path(s.out_dir) / sweep::kResultsCsv).string(), "",
                             (fs::path(s.out_dir) / sweep::kResultsJsonl).string());
    constexpr size_t kShown = 10;
    for (size_t i = 0; i < s.failures.size() && i < kShown; ++i)
      std::cout << fmt::format("{:<10} {}\n", i ? "" : "failed", s.failures[i]);
    if (s.failures.size() > kShown) std::cout << fmt::format("{:<10} ... {} more in results.csv\n", "", s.failures.size() - kShown);
  }
  print_plots(s.plots, s.plots_skipped, a.quiet);
  if (s.stopped_by) {
    // Said even with --quiet: the run did not do what was asked.
    std::cerr << fmt::format("sweep stopped by {}: {} of {} points finished and recorded in {}; {} not run (running "
                             "points were killed and are not recorded)\nresume with: {}\n",
                             s.stopped_by == SIGINT ? "SIGINT" : s.stopped_by == SIGTERM ? "SIGTERM" : "signal " + std::to_string(s.stopped_by),
                             s.points - s.not_run, s.points, (fs::path(s.out_dir) / sweep::kResultsCsv).string(),
                             s.not_run, resume_command(a, s.out_dir));
    return 128 + s.stopped_by;  // what a shell reports for a process ended by that signal
  }
  return s.failed ? kExitSomePointsFailed : 0;
}

int sweep_merge(const MergeArgs& a) {
  if (a.dirs.empty()) throw input_error("sweep merge", "needs an output directory and at least one sweep directory",
                                        "", "e.g. tpusim sweep merge out/merged out/shard-0 out/shard-1");
  const sweep::MergeSummary m = sweep::merge_sweeps(a.out_dir, a.dirs, !a.no_plots, plot_script());
  if (!a.quiet) {
    std::cout << fmt::format("{:<10} {} points from {} directories{}\n", "merged", m.records, a.dirs.size(),
                             m.duplicates ? fmt::format(" ({} duplicates dropped)", m.duplicates) : "");
    std::cout << fmt::format("{:<10} {}\n{:<10} {}\n", "results", (fs::path(m.out_dir) / sweep::kResultsCsv).string(), "",
                             (fs::path(m.out_dir) / sweep::kResultsJsonl).string());
  }
  if (m.records < m.expected)
    std::cerr << fmt::format("warning: {} of the sweep's {} points are missing (a shard not merged or not finished?)\n",
                             m.expected - m.records, m.expected);
  print_plots(m.plots, m.plots_skipped, a.quiet);
  return m.failed ? kExitSomePointsFailed : 0;
}

}  // namespace tpusim::app
