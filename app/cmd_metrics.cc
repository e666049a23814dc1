// `tpusim metrics DIR`: DIR/report.json's metrics in the text layout of torch_xla's
// metrics_report() (workloads/metrics_report.h).
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>

#include "app/commands.h"
#include "workloads/metrics_report.h"

namespace tpusim::app {

Subcommand add_metrics_command(CLI::App& cli) {
  auto dir = std::make_shared<std::string>();
  CLI::App* cmd = cli.add_subcommand(
      "metrics", "Print DIR/report.json's metrics as torch_xla's metrics_report() prints them");
  cmd->add_option("DIR", *dir, "The --out DIR of a `tpusim run`")->required();
  return {cmd, [dir] {
            std::cout << torch_xla_metrics_report(load_run_report(*dir));
            return 0;
          }};
}

}  // namespace tpusim::app
