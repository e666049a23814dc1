// tpusim: command line. Parses flags with CLI11 and maps errors to exit codes:
//   0 ok; 2 bad input (ConfigError, YAML syntax, flags); 3 the workload failed on the simulated
//   hardware (SimError); 1 anything else ("internal error"). Never a stack trace. The rule is
//   describe_failure() (app/run_core.h), shared with the Python module.
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "app/commands.h"
#include "app/embedded.h"
#include "base/config_error.h"
#include "sim/base/sim_error.h"
#include "app/run_core.h"

namespace tpusim::app {
namespace {

// "TPU v2, v3 and v4": the generations of the chip files shipped (and embedded) with this binary.
std::string shipped_generations() {
  std::vector<std::string> g;
  const std::string dir = "configs/hw/chips/tpu_", ext = ".yaml";
  for (const auto& [path, text] : embedded_files())
    if (path.starts_with(dir) && path.ends_with(ext)) g.push_back(path.substr(dir.size(), path.size() - dir.size() - ext.size()));
  std::string s = "TPU";
  for (size_t i = 0; i < g.size(); ++i) s += (i == 0 ? " " : i + 1 == g.size() ? " and " : ", ") + g[i];
  return s;
}

// An option naming a file or directory must name one: `--out ''` wrote nothing and exited 0.
CLI::Validator non_empty_path() {
  return CLI::Validator([](std::string& v) { return v.empty() ? std::string("must not be empty") : std::string(); }, "PATH");
}

int dispatch(int argc, char** argv) {
  CLI::App cli{"tpusim " TPUSIM_VERSION " — a cycle-approximate simulator of Google " + shipped_generations(), "tpusim"};
  cli.require_subcommand(0, 1);
  bool version = false;
  cli.add_flag("--version", version, "Print the version and exit");

  RunArgs ra;
  CLI::App* run_cmd = cli.add_subcommand(
      "run", "Run one simulation (default: BERT-base fine-tuning on GLUE MRPC on a TPU v3-8, embedded in the binary)");
  run_cmd->add_option("--hw", ra.hw_file, "Hardware YAML or built-in name such as v3-32 (default: the workload's hw:, else v3-8)")
      ->type_name("FILE|NAME");
  run_cmd->add_option("--workload", ra.workload_file,
                      "Workload YAML (default: embedded configs/workloads/bert_base_mrpc_v3-8.yaml)")
      ->type_name("FILE");
  run_cmd->add_option("--training-args", ra.training_args_file,
                      "Training: a Hugging Face TrainingArguments JSON/YAML (e.g. training_args.json) or an Accelerate "
                      "config file, applied on top of the workload (its settings override the workload's)")
      ->type_name("FILE");
  run_cmd->add_option("--maxtext-args", ra.maxtext_args,
                      "Training: MaxText's train.py arguments, inline ('model_name=llama3.1-8b per_device_batch_size=1 "
                      "max_target_length=8192 ...') or a file of them (or base.yml-style key: value lines); without "
                      "--workload they start from MaxText's defaults (docs/config-workload.md)")
      ->type_name("ARGS|FILE");
  run_cmd->add_option("--set", ra.sets, "Override a config key: PATH=VALUE, PATH prefixed hw. or workload. "
                                        "where ambiguous (repeatable)")
      ->allow_extra_args(false)
      ->type_name("PATH=VALUE");
  run_cmd->add_option("--out", ra.out_dir, "Write DIR/report.json (and DIR/trace.json with --trace)")
      ->type_name("DIR")
      ->check(non_empty_path());
  run_cmd->add_flag("--trace", ra.trace, "Write a Chrome/Perfetto trace to DIR/trace.json (DIR defaults to out/)");
  run_cmd->add_option("--trace-steps", ra.trace_steps,
                      "Training: trace steps [A, B) (step slices, engine detail); default: the first 5 steps and "
                      "each program's first execution")
      ->type_name("A:B");
  add_trace_run_options(*run_cmd, ra);
  run_cmd->add_option("--engine", ra.engine, "Engine: systemc (detailed, contention; default for kernels) or analytical (fast; default for training)")
      ->type_name("NAME");
  run_cmd->add_option("--program-memo", ra.program_memo,
                      "Training: a directory of step programs simulated by other runs of the same configuration (apart from "
                      "seed, padding, epochs and steps), read instead of compiling and simulating them again, and where this "
                      "run stores its own; `tpusim sweep` gives its points one (same figures, faster)")
      ->type_name("DIR");
  run_cmd->add_flag("--full-sim", ra.full_sim,
                    "Training: simulate every step instead of replaying identical executions, and every core instead of one per class of symmetric replicas (same figures, slower)");
  run_cmd->add_flag("--dump-config", ra.dump_config, "Print the resolved hardware and workload YAML and exit");
  run_cmd->add_flag("-q,--quiet", ra.quiet, "Print nothing on success");
  run_cmd->add_option("--max-memory", ra.max_memory,
                      "Refuse (exit 2) a simulation whose estimated peak memory exceeds SIZE, e.g. 8GiB or 500MB "
                      "(default: half of the machine's RAM)")
      ->type_name("SIZE");
  run_cmd->add_option("--max-time", ra.max_time,
                      "Refuse (exit 2) a simulation estimated to take longer than DURATION, e.g. 30m, 900s, or none "
                      "(default: 5m per simulation)")
      ->type_name("DURATION");

  std::vector<std::string> files;
  CLI::App* validate_cmd = cli.add_subcommand("validate", "Check config files without simulating");
  validate_cmd->add_option("FILE", files, "Hardware or workload YAML files (a top-level kind: means workload)")
      ->required();

  RunArgs aa;
  CLI::App* advise_cmd = cli.add_subcommand(
      "advise", "Rank padding, precision and batch-size settings of a training workload by simulated time to train");
  advise_cmd->add_option("--hw", aa.hw_file, "Hardware YAML or built-in name such as v3-32 (default: the workload's hw:, else v3-8)")->type_name("FILE|NAME");
  advise_cmd->add_option("--workload", aa.workload_file,
                         "Training workload YAML (default: embedded configs/workloads/bert_base_mrpc_v3-8.yaml)")
      ->type_name("FILE");
  advise_cmd->add_option("--set", aa.sets, "Override a config key before advising: PATH=VALUE (repeatable)")
      ->type_name("PATH=VALUE");
  advise_cmd->add_option("--out", aa.out_dir, "Also write DIR/advice.json")->type_name("DIR")->check(non_empty_path());
  advise_cmd->add_flag("-q,--quiet", aa.quiet, "Print nothing on success");
  advise_cmd->add_option("--max-memory", aa.max_memory,
                         "Refuse (exit 2) a simulation whose estimated peak memory exceeds SIZE (default: half of RAM)")
      ->type_name("SIZE");
  advise_cmd->add_option("--max-time", aa.max_time,
                         "Refuse (exit 2) a simulation estimated to take longer than DURATION (default: 5m)")
      ->type_name("DURATION");

  SweepArgs sa;
  CLI::App* sweep_cmd = cli.add_subcommand(
      "sweep", "Run a performance-exploration sweep: the points of a sweep YAML in parallel, one `tpusim run` "
               "process each (docs/sweeps.md). Exit 0: every point ok; 4: some failed (see results.csv)");
  sweep_cmd->add_option("FILE", sa.file, "Sweep YAML (configs/sweeps/)");
  sweep_cmd->add_option("-j,--jobs", sa.jobs, "Points run in parallel (default: the CPUs this process may use)")
      ->type_name("N")
      ->check(CLI::Range(1, 4096));  // 0 used to mean the default, silently
  sweep_cmd->add_option("--out", sa.out_dir, "Output directory (default: out/sweeps/NAME)")->type_name("DIR")
      ->check(non_empty_path());
  sweep_cmd->add_flag("--resume", sa.resume, "Keep the points DIR already has for the same configuration; run the rest");
  sweep_cmd->add_option("--shard", sa.shard, "Run the I-th of N deterministic slices of the points (combine with "
                                             "'tpusim sweep merge')")
      ->type_name("I/N");
  sweep_cmd->add_option("--set", sa.sets, "Override a config key in every point: PATH=VALUE (repeatable)")
      ->allow_extra_args(false)
      ->type_name("PATH=VALUE");
  sweep_cmd->add_flag("--no-plots", sa.no_plots, "Do not draw the plots");
  sweep_cmd->add_flag("--no-program-memo", sa.no_program_memo,
                      "Every point compiles and simulates its own programs (by default a program one point simulated is "
                      "read by the points whose configuration differs only in seed, padding, epochs or steps: same results)");
  sweep_cmd->add_option("--max-memory", sa.max_memory,
                        "Memory for all the points running at once, e.g. 16GiB (default: half of the machine's RAM); "
                        "each of the --jobs points gets its share as its own --max-memory")
      ->type_name("SIZE");
  sweep_cmd->add_option("--max-time", sa.max_time, "--max-time of every point (default: 5m per simulation)")
      ->type_name("DURATION");
  sweep_cmd->add_flag("--dry-run", sa.dry_run, "List the points (and invalid ones) and exit");
  sweep_cmd->add_flag("-q,--quiet", sa.quiet, "No progress and no summary (warnings and errors still go to stderr)");
  MergeArgs ma;
  CLI::App* merge_cmd = sweep_cmd->add_subcommand(
      "merge", "Combine the outputs of shards (or partial runs) of one sweep into OUT, sorted by point id");
  merge_cmd->add_option("OUT", ma.out_dir, "Output directory")->required();
  merge_cmd->add_option("DIR", ma.dirs, "Sweep output directories to combine")->required();
  merge_cmd->add_flag("--no-plots", ma.no_plots, "Do not draw the plots");
  merge_cmd->add_flag("-q,--quiet", ma.quiet, "No summary");
  const Subcommand trace_cmd = add_trace_command(cli);
  const Subcommand report_cmd = add_report_command(cli);
  const Subcommand compare_cmd = add_compare_command(cli);
  const Subcommand metrics_cmd = add_metrics_command(cli);
  const Subcommand models_cmd = add_models_command(cli);
  const Subcommand hlo_stats_cmd = add_hlo_stats_command(cli);
  const Subcommand export_hlo_cmd = add_export_hlo_command(cli);

  try {
    cli.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help
    return cli.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "error: " << e.what() << "\n(run 'tpusim --help' for usage)\n";
    return 2;
  }
  if (version) {
    std::cout << "tpusim " << TPUSIM_VERSION << "\n";
    return 0;
  }
  if (run_cmd->parsed()) return run(ra);
  if (validate_cmd->parsed()) return validate(files);
  if (advise_cmd->parsed()) return advise(aa);
  if (merge_cmd->parsed()) return sweep_merge(ma);
  if (sweep_cmd->parsed()) {
    if (sa.file.empty()) {
      std::cerr << "error: sweep: a sweep file is required (tpusim sweep FILE, or tpusim sweep merge OUT DIR...)\n";
      return 2;
    }
    return sweep(sa);
  }
  for (const Subcommand* c : {&trace_cmd, &report_cmd, &compare_cmd, &metrics_cmd, &models_cmd, &hlo_stats_cmd, &export_hlo_cmd})
    if (c->app->parsed()) return c->run();
  std::cout << cli.help();
  std::cerr << "error: a command is required: run, validate, sweep, advise, trace, report, compare, metrics, models, hlo-stats or export-hlo\n";
  return 2;
}

}  // namespace
}  // namespace tpusim::app

int main(int argc, char** argv) {
  try {
    return tpusim::app::dispatch(argc, argv);
  } catch (...) {
    const tpusim::app::Failure f = tpusim::app::describe_failure(std::current_exception());
    std::cerr << f.message << "\n";
    return f.exit_code;
  }
}
