// `tpusim metrics DIR`: DIR/report.json's metrics in the text layout of torch_xla's
// metrics_report() (workloads/report/metrics_report.h).
#include <iostream>
#include <memory>

#include <CLI/CLI.hpp>

#include "app/commands.h"
#include "workloads/report/metrics_report.h"

namespace tpusim::app {

Subcommand add_metrics_command(CLI::App& cli) {
  auto dir = std::make_shared<std::string>();
  CLI::App* cmd = cli.add_subcommand(
      "metrics", "Print DIR/report.json's metrics as torch_xla's metrics_report() prints them");
  cmd->add_option("DIR", *dir, "The --out DIR of a `tpusim run`")->required();
  return {cmd, [dir] {
            const nlohmann::json rep = load_run_report(*dir);
            // A report of an older tpusim has percentiles but not the samples the report is made of.
            if (rep.contains("metrics") && rep["metrics"].is_object())
              for (const auto& [name, m] : rep["metrics"].items())
                if (m.is_object() && m.value("count", 0) > 0 && !m.contains("samples_s") && !m.contains("samples_bytes"))
                  std::cerr << "warning: " << *dir << "/report.json: metric " << name
                            << " has no samples (an older tpusim wrote it); not printed. Rerun the run to get them\n";
            std::cout << torch_xla_metrics_report(rep);
            return 0;
          }};
}

}  // namespace tpusim::app
