// `tpusim run`: load configs (files or the embedded default), run the workload (a kernel or a
// training run, by `kind:`), report. run_core() is also what the Python module runs (app/run_core.h).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "app/commands.h"
#include "app/embedded.h"
#include "app/run_core.h"
#include "base/config_error.h"
#include "config/hw_loader.h"
#include "config/suggest.h"
#include "config/tree.h"
#include "sim/engine/engine.h"
#include "traces/chrome_trace.h"
#include "workloads/config/hf_arguments.h"
#include "workloads/config/maxtext_args.h"
#include "workloads/loop/hlo_module.h"
#include "workloads/loop/hlo_run.h"
#include "workloads/loop/kernel_run.h"
#include "workloads/report/hlo_report.h"
#include "workloads/report/metrics_report.h"
#include "workloads/report/report.h"
#include "workloads/report/training_report.h"
#include "workloads/loop/training_run.h"
#include "workloads/config/workload_config.h"

namespace tpusim::app {
namespace {

// Where the run's files went (after the summary, kernel and training runs alike).
std::string outputs_text(const std::string& report_path, const ChromeTraceFile* trace) {
  std::string s;
  if (!report_path.empty()) s += fmt::format("{:<10} {}\n", "report", report_path);
  if (trace) {
    s += fmt::format("{:<10} {} ({} events{}; open in ui.perfetto.dev or chrome://tracing)\n", "trace",
                     trace->path(), trace->events(),
                     trace->dropped() ? fmt::format(", {} outside --trace-lanes/--trace-window", trace->dropped()) : "");
  }
  return s;
}

namespace fs = std::filesystem;

constexpr const char* kEmbeddedPrefix = kEmbeddedOrigin;  // config/hw_loader.h
constexpr const char* kDefaultOutDir = "out";

// Stage messages on stderr, only for a person at a terminal (never in logs or pipes), and a
// training run's steps with an ETA: "epoch 1 of 3 · step 5/27 · simulating train B=4 S=128 42% ·
// ETA 1m20s". While a program is simulated the ETA is that simulation's (its instructions done so
// far against the wall time), else the run's (steps done against the wall time since the first).
class Progress {
 public:
  using Clock = std::chrono::steady_clock;
  explicit Progress(bool enabled) : enabled_(enabled), start_(Clock::now()) {}
  ~Progress() { clear(); }
  void stage(std::string_view what) {
    if (!enabled_) return;
    stage_ = what;
    show(stage_);
  }
  void update(const TrainingProgress& p) {
    if (!enabled_) return;
    const auto now = Clock::now();
    if (p.simulating != simulating_) {  // a new simulation (or its end): restart its clock
      simulating_ = p.simulating;
      sim_start_ = now;
    }
    if (now - shown_at_ < std::chrono::milliseconds(200)) return;  // at most 5 updates a second
    shown_at_ = now;
    std::string s = stage_;
    if (p.steps_total) s += fmt::format(" · step {}/{}", p.steps_done, p.steps_total);
    double eta = -1;
    if (!p.simulating.empty() && p.instructions_total) {
      const double f = double(p.instructions_done) / double(p.instructions_total);
      s += fmt::format(" · simulating {} {:.0f}%", p.simulating, 100 * f);
      if (f > 0.02) eta = seconds(now - sim_start_) * (1 - f) / f;
    } else if (p.steps_total && p.steps_done > 0) {
      eta = seconds(now - start_) * double(p.steps_total - std::min(p.steps_done, p.steps_total)) / double(p.steps_done);
    }
    if (eta >= 0 && seconds(now - start_) > 2) s += " · ETA " + duration(eta);
    show(s);
  }
  void clear() {
    if (!shown_) return;
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
    shown_ = false;
  }

 private:
  void show(std::string_view s) {
    std::fprintf(stderr, "\r\033[K%.*s...", int(s.size()), s.data());
    std::fflush(stderr);
    shown_ = true;
  }
  static double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
  static std::string duration(double s) {
    if (s < 60) return fmt::format("{:.0f}s", s);
    if (s < 3600) return fmt::format("{}m{:02d}s", int(s / 60), int(s) % 60);
    return fmt::format("{}h{:02d}m", int(s / 3600), int(s / 60) % 60);
  }

  bool enabled_;
  bool shown_ = false;
  std::string stage_, simulating_;
  Clock::time_point start_, sim_start_, shown_at_{};
};

const std::string& embedded(const char* key) {
  const auto& files = embedded_files();
  auto it = files.find(key);
  if (it == files.end()) {
    // The build embeds configs/; a missing default is a build problem, not bad input.
    throw std::logic_error(fmt::format("the default config {} was not embedded at build time", key));
  }
  return it->second;
}

// The embedded configs/hw/** for `include:`, keyed both relative to configs/hw/ (as a slice file
// writes its include) and from the root.
std::map<std::string, std::string> embedded_hw_includes() {
  const std::string base = fs::path(kDefaultHwFile).parent_path().string();
  std::map<std::string, std::string> includes;
  for (const auto& [path, text] : embedded_files()) {
    if (path.rfind(base + "/", 0) == 0) includes.emplace(path.substr(base.size() + 1), text);
    includes.emplace(path, text);
  }
  return includes;
}

}  // namespace

HwConfig load_hw(const RunArgs& a, const std::vector<Override>& overrides, std::string* origin,
                 const WorkloadConfig* workload) {
  // Precedence: --hw, then the workload's `hw:` (relative to the workload file), then the default.
  if (!a.hw_file.empty()) return load_hw_ref(a.hw_file, "", embedded_files(), overrides, origin, {"--hw", "", 0, "", "", ""});
  if (workload && !workload->hw.empty())
    return load_hw_ref(workload->hw, workload->hw_dir, embedded_files(), overrides, origin,
                       {workload->hw_origin, "hw", workload->hw_line, "", "", ""});
  (void)embedded(kDefaultHwFile);  // a default missing from the build is a logic error, not bad input
  return load_builtin_hw(config::file_stem(kDefaultHwFile), embedded_files(), overrides, origin);
}

std::function<HwConfig(const std::string&, const WorkloadConfig&, const std::vector<Override>&, std::string*)> sweep_hw_loader() {
  return [](const std::string& ref, const WorkloadConfig& w, const std::vector<Override>& overrides, std::string* origin) {
    RunArgs a;
    a.hw_file = ref;
    return load_hw(a, overrides, origin, &w);
  };
}

void check_workload_hw(const WorkloadConfig& workload) {
  if (workload.hw.empty()) return;
  std::string origin;
  const HwConfig hw = load_hw(RunArgs{}, {}, &origin, &workload);
  check_num_processes(hw, workload);
  check_kernel_placement(hw, workload);
  check_kernel_shape(hw, workload);
}

WorkloadConfig load_workload(const RunArgs& a, const std::vector<Override>& overrides, std::string* origin) {
  if (!a.workload_file.empty()) {
    *origin = a.workload_file;
    return load_workload_config(a.workload_file, overrides, a.training_args_file, a.maxtext_args);
  }
  if (!a.maxtext_args.empty()) {  // MaxText's defaults, not the embedded BERT run, under its arguments
    *origin = "--maxtext-args";
    return load_workload_config_text(maxtext_base_workload(), *origin, overrides, a.training_args_file, a.maxtext_args);
  }
  *origin = std::string(kEmbeddedPrefix) + kDefaultWorkloadFile;
  WorkloadConfig w = load_workload_config_text(embedded(kDefaultWorkloadFile), *origin, overrides, a.training_args_file);
  return w;
}

// "30m", "8GiB": a number and one of `units` (its factor), > 0 and at most `max`; nullopt otherwise.
static std::optional<double> parse_quantity(const std::string& t, const std::map<std::string, double>& units, double max) {
  size_t end = 0;
  double v = 0;
  try {
    v = std::stod(t, &end);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  const auto u = units.find(t.substr(end));
  if (end == 0 || u == units.end() || !(v > 0) || !std::isfinite(v) || v * u->second > max) return std::nullopt;
  return v * u->second;
}

RunLimits run_limits(const RunArgs& a) {
  RunLimits l = parse_memory_limit(a.max_memory, "--max-memory");
  parse_time_limit(a.max_time, "--max-time", l);
  return l;
}

void parse_time_limit(const std::string& t, const std::string& flag, RunLimits& limits) {
  if (t.empty()) {
    limits.seconds = kDefaultMaxTimeSeconds;
    limits.time_origin = fmt::format("the default, {:.0f} min per simulation", kDefaultMaxTimeSeconds / 60);
    return;
  }
  if (t == "none") {
    limits.seconds = 0;
    limits.time_origin = flag + " none";
    return;
  }
  static const std::map<std::string, double> units = {{"", 1}, {"s", 1}, {"m", 60}, {"min", 60}, {"h", 3600}};
  const std::optional<double> seconds = parse_quantity(t, units, 1e9);
  if (!seconds)
    throw input_error(flag, "must be a positive duration: a number and a unit (s, m or min, h), or none", t,
                      "e.g. " + flag + " 30m, " + flag + " 900s or " + flag + " none");
  limits.seconds = *seconds;
  limits.time_origin = flag + " " + t;
}

RunLimits parse_memory_limit(const std::string& t, const std::string& flag) {
  if (t.empty()) {
    const uint64_t ram = physical_memory_bytes();
    return {ram / 2, "the default, half of the machine's " + format_bytes(ram) + " of RAM", 0, {}};
  }
  // SIZE: a number with an optional unit, B, kB/MB/GB/TB (powers of 1000) or KiB/MiB/GiB/TiB and
  // K/M/G/T (powers of 1024).
  static const std::map<std::string, double> units = {
      {"", 1}, {"B", 1}, {"kB", 1e3}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"K", 1024.0},
      {"KiB", 1024.0}, {"M", 1048576.0}, {"MiB", 1048576.0}, {"G", 1073741824.0}, {"GiB", 1073741824.0},
      {"T", 1099511627776.0}, {"TiB", 1099511627776.0}};
  const std::optional<double> bytes = parse_quantity(t, units, 1e18);
  if (!bytes)
    throw input_error(flag, "must be a positive size: a number and a unit (B, MB, GB, MiB, GiB, ...)", t,
                      "e.g. " + flag + " 8GiB or " + flag + " 500MB");
  return {uint64_t(*bytes), flag + " " + t, 0, {}};
}

void check_engine(const std::string& engine) {
  std::vector<std::string> names = engine_names();
  if (std::find(names.begin(), names.end(), engine) != names.end()) return;
  auto near = config::closest(engine, names);
  throw input_error("--engine", "is not a known engine (known: " + config::join(names) + ")", engine,
                    near ? "did you mean '" + *near + "'?" : "");
}

// Fails before simulating when the output directory cannot be made (bad --out).
void make_out_dir(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    const std::string why = ec ? ec.message() : "not a directory";
    throw input_error("--out", "cannot be used as the output directory (" + why + ")", dir);
  }
}

// Dataset length tables: the source tree's configs/datasets/ when present (a user may add tables
// there), else the copies embedded in the binary (so the default run works from any directory).
data::LengthTables dataset_tables() {
  if (fs::is_directory(data::default_datasets_dir())) return data::load_length_tables(data::default_datasets_dir());
  data::LengthTables all;
  for (const auto& [path, text] : embedded_files()) {
    if (path.rfind("configs/datasets/", 0) != 0 || !path.ends_with(".json")) continue;
    for (auto& [k, v] : data::parse_length_tables(text, std::string(kEmbeddedPrefix) + path)) all.emplace(k, std::move(v));
  }
  return all;
}

namespace {

// Writes the run's trace file (if any); a file that cannot be written is bad --out input.
void close_trace(const ChromeTraceFile* trace, const std::string& out_dir) {
  if (!trace) return;
  try {
    trace->close();
  } catch (const std::runtime_error& e) {
    throw input_error("--out", e.what(), out_dir);
  }
}

// --trace-steps A:B: steps [A, B), A < B.
TrainingTraceOptions parse_trace_steps(const std::string& text) {
  TrainingTraceOptions t;
  const size_t colon = text.find(':');
  auto number = [&](std::string_view part, uint64_t* v) {
    if (part.empty() || part.size() > 18 || !std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return false;
    *v = std::stoull(std::string(part));
    return true;
  };
  const std::string_view all(text);
  if (colon == std::string::npos || !number(all.substr(0, colon), &t.from) || !number(all.substr(colon + 1), &t.to) ||
      t.from >= t.to)
    throw input_error("--trace-steps", "must be A:B with step numbers A < B (steps A to B-1 are traced)", text,
                      "e.g. --trace-steps 0:5");
  t.range_set = true;
  return t;
}

// A training or HLO run's trace: --trace-steps (which needs --trace) selects its steps.
std::unique_ptr<ChromeTraceFile> open_step_trace(const RunArgs& a, const std::string& out_dir, const RunContext& ctx,
                                                 TrainingTraceOptions& steps) {
  if (!a.trace_steps.empty()) {
    if (!a.trace) throw input_error("--trace-steps", "needs --trace");
    steps = parse_trace_steps(a.trace_steps);
  }
  return open_run_trace(a, out_dir, config_hash(ctx), &steps);
}

// The report (built when asked for or written) and the trace, into `out_dir` when given; returns
// the report's path ("" without --out).
std::string write_outputs(const std::string& out_dir, bool want_report, Progress& progress, ChromeTraceFile* trace,
                          RunOutput& out, const std::function<nlohmann::json()>& make_report) {
  std::string report_path;
  if (want_report || !out_dir.empty()) out.report = make_report();
  if (!out_dir.empty()) {
    progress.stage("writing report");
    close_trace(trace, out_dir);
    report_path = write_report(out_dir, out.report);
  }
  progress.clear();
  return report_path;
}

void run_training_workload(const RunArgs& a, const HwConfig& hw, const WorkloadConfig& workload, const std::string& out_dir,
                           std::chrono::steady_clock::time_point t0, bool want_report, RunOutput& out) {
  RunContext& ctx = out.ctx;
  Progress progress(!a.quiet && ::isatty(STDERR_FILENO));
  TrainingRunOptions opts;
  opts.engine = a.engine.empty() ? kDefaultTrainingEngine : a.engine;
  opts.full_sim = a.full_sim;
  opts.program_memo_dir = a.program_memo;
  opts.tables = dataset_tables();
  opts.on_stage = [&progress](std::string_view stage) { progress.stage(stage); };
  opts.on_progress = [&progress](const TrainingProgress& p) { progress.update(p); };
  opts.limits = run_limits(a);
  std::unique_ptr<ChromeTraceFile> trace = open_step_trace(a, out_dir, ctx, opts.trace_steps);
  opts.trace = trace.get();
  const TrainingRunResult result = run_training(hw, workload, opts);
  ctx.total_wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string report_path = write_outputs(out_dir, want_report, progress, trace.get(), out,
                                                [&] { return make_training_report(hw, workload, result, ctx); });
  if (a.quiet) return;
  out.text = format_training_summary(hw, workload, result, ctx);
  // Trainer's debug: tpu_metrics_debug prints torch_xla's metrics report when training ends.
  if (workload.training().tpu_metrics_debug)
    out.text += "\ntorch_xla metrics (debug: tpu_metrics_debug)\n" +
                torch_xla_metrics_report(out.report.is_null() ? make_training_report(hw, workload, result, ctx) : out.report);
  out.text += outputs_text(report_path, trace.get());
}

void run_hlo_workload(const RunArgs& a, const HwConfig& hw, const WorkloadConfig& workload, const std::string& out_dir,
                      std::chrono::steady_clock::time_point t0, bool want_report, RunOutput& out) {
  RunContext& ctx = out.ctx;
  Progress progress(!a.quiet && ::isatty(STDERR_FILENO));
  HloRunOptions opts;
  opts.engine = a.engine.empty() ? kDefaultTrainingEngine : a.engine;
  opts.on_stage = [&progress](std::string_view stage) { progress.stage(stage); };
  opts.on_progress = [&progress](const TrainingProgress& p) { progress.update(p); };
  opts.limits = run_limits(a);
  std::unique_ptr<ChromeTraceFile> trace = open_step_trace(a, out_dir, ctx, opts.trace_steps);
  opts.trace = trace.get();
  const HloRunResult result = run_hlo(hw, workload, opts);
  ctx.total_wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string report_path = write_outputs(out_dir, want_report, progress, trace.get(), out,
                                                [&] { return make_hlo_report(hw, workload, result, ctx); });
  if (a.quiet) return;
  out.text = format_hlo_summary(hw, workload, result, ctx) + outputs_text(report_path, trace.get());
}

// A config given as text (the Python module's dicts and embedded names).
HwConfig load_hw_text(const ConfigText& c, const std::vector<Override>& overrides, std::string* origin) {
  *origin = c.origin;
  if (!c.embedded_includes) return load_hw_config_text(c.text, c.origin, c.base_dir, overrides);
  const std::map<std::string, std::string> includes = embedded_hw_includes();
  return load_hw_config_text(c.text, c.origin, c.base_dir, overrides, &includes);
}

WorkloadConfig load_workload_text(const ConfigText& c, const std::vector<Override>& overrides, std::string* origin,
                                  const std::string& training_args, const std::string& maxtext_args) {
  *origin = c.origin;
  return load_workload_config_text(c.text, c.origin, overrides, training_args, maxtext_args);
}

}  // namespace

RunOutput run_core(const RunArgs& a, const RunSources& sources, bool want_report) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<Override> all;
  for (const auto& s : a.sets) all.push_back(parse_override(s));
  SplitOverrides split = split_overrides(all);

  RunOutput out;
  RunContext& ctx = out.ctx;
  WorkloadConfig workload = sources.workload
                                ? load_workload_text(*sources.workload, split.workload, &ctx.workload_file, a.training_args_file,
                                                     a.maxtext_args)
                                : load_workload(a, split.workload, &ctx.workload_file);
  HwConfig hw = sources.hw ? load_hw_text(*sources.hw, split.hw, &ctx.hw_file) : load_hw(a, split.hw, &ctx.hw_file, &workload);
  check_num_processes(hw, workload);
  check_kernel_placement(hw, workload);
  check_kernel_shape(hw, workload);
  if (!a.engine.empty()) check_engine(a.engine);
  ctx.hw_dump = dump_hw_config(hw);
  ctx.workload_dump = dump_workload_config(workload);
  ctx.contents = hlo_module_digest(workload);

  if (a.dump_config) {
    out.text = "# Resolved hardware config, from " + ctx.hw_file + "\n" + ctx.hw_dump +
               (ctx.hw_dump.ends_with("\n") ? "" : "\n") + "---\n" + "# Resolved workload config, from " +
               ctx.workload_file + "\n" + ctx.workload_dump + (ctx.workload_dump.ends_with("\n") ? "" : "\n");
    return out;
  }

  // --trace without --out still needs a place for trace.json: ./out/ (ignored by git).
  const std::string out_dir = !a.out_dir.empty() ? a.out_dir : (a.trace ? kDefaultOutDir : "");
  if (!out_dir.empty()) make_out_dir(out_dir);

  if (workload.kind() == WorkloadKind::kTraining) {
    run_training_workload(a, hw, workload, out_dir, t0, want_report, out);
    return out;
  }
  if (workload.kind() == WorkloadKind::kHlo) {
    if (a.full_sim) throw input_error("--full-sim", "applies to training workloads only (an hlo run simulates its one program once)");
    run_hlo_workload(a, hw, workload, out_dir, t0, want_report, out);
    return out;
  }
  if (a.full_sim) throw input_error("--full-sim", "applies to training workloads only");
  if (!a.trace_steps.empty()) throw input_error("--trace-steps", "applies to training and hlo workloads only");

  std::unique_ptr<ChromeTraceFile> trace = open_run_trace(a, out_dir, config_hash(ctx.hw_dump, ctx.workload_dump), nullptr);

  Progress progress(!a.quiet && ::isatty(STDERR_FILENO));
  KernelRunOptions opts;
  opts.engine = a.engine.empty() ? kDefaultKernelEngine : a.engine;
  opts.trace = trace.get();
  opts.on_stage = [&progress](std::string_view stage) { progress.stage(stage); };
  opts.on_progress = [&progress](const TrainingProgress& p) { progress.update(p); };
  opts.limits = run_limits(a);
  KernelRunResult result = run_kernel(hw, workload, opts);

  std::string report_path;
  if (!out_dir.empty()) {
    progress.stage("writing report");
    close_trace(trace.get(), out_dir);
  }
  ctx.total_wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (want_report || !out_dir.empty()) out.report = make_report(hw, workload, result, ctx);
  if (!out_dir.empty()) report_path = write_report(out_dir, out.report);
  progress.clear();

  if (a.quiet) return out;
  out.text = format_summary(hw, workload, result, ctx) + outputs_text(report_path, trace.get());
  return out;
}

int run(const RunArgs& a) {
  std::cout << run_core(a, {}, false).text;
  return 0;
}

}  // namespace tpusim::app
