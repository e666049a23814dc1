// `tpusim compare DIR_A DIR_B [...]`: the runs' report.json figures side by side, with differences
// against the first (workloads/report/run_compare.h); --json prints the same comparison as JSON.
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>

#include "app/commands.h"
#include "workloads/report/run_compare.h"

namespace tpusim::app {
namespace {

struct CompareArgs {
  std::vector<std::string> dirs;
  bool json = false;
  size_t top = 10;
};

int compare(const CompareArgs& a) {
  if (a.dirs.size() < 2)
    throw input_error("tpusim compare", "needs at least two run directories", std::to_string(a.dirs.size()),
                      "tpusim compare DIR_A DIR_B [DIR_C ...] (each the --out DIR of a `tpusim run`)");
  std::vector<nlohmann::json> reports;
  for (const std::string& d : a.dirs) reports.push_back(load_run_report(d));
  const RunComparison c = compare_reports(a.dirs, reports, a.top);
  if (a.json)
    std::cout << comparison_json(c).dump(2) << "\n";
  else
    std::cout << format_comparison(c);
  return 0;
}

}  // namespace

Subcommand add_compare_command(CLI::App& cli) {
  auto args = std::make_shared<CompareArgs>();
  CLI::App* cmd = cli.add_subcommand(
      "compare", "Print the figures of several runs side by side, with differences against the first");
  cmd->add_option("DIR", args->dirs, "The --out DIRs of `tpusim run`s (two or more; the first is the baseline)")
      ->required();
  cmd->add_flag("--json", args->json, "Print the comparison as JSON");
  cmd->add_option("--top", args->top, "Costliest kernels taken from each run's op profile (default 10)")
      ->type_name("N")
      ->check(CLI::Range(size_t{0}, size_t{1000}));
  return {cmd, [args] { return compare(*args); }};
}

}  // namespace tpusim::app
