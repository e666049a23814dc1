// The one run path behind `tpusim run` (app/cmd_run.cc) and `tpusim.run()` (python/): load the
// configs, simulate, build report.json's tree and the text the command prints. The CLI prints the
// text; the Python module returns the report. Also the exit-code rule of both (ConfigError 2,
// SimError 3, anything else 1) with the message the CLI prints.
#pragma once
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "workloads/report/report.h"

namespace tpusim::app {

// A config given as YAML (or JSON) text instead of a file: `origin` names it in errors and in the
// report's provenance (e.g. "<workload dict>" or "(embedded) configs/hw/v4-8.yaml"). `include:`
// paths resolve against `base_dir`, after the embedded copies when `embedded_includes` is set.
struct ConfigText {
  std::string text;
  std::string origin;
  std::string base_dir = ".";
  bool embedded_includes = false;
};

// Replaces RunArgs::hw_file / workload_file (and the embedded defaults) when set.
struct RunSources {
  std::optional<ConfigText> hw;
  std::optional<ConfigText> workload;
};

struct RunOutput {
  RunContext ctx;
  nlohmann::json report;  // report.json's tree: built when `want_report` or args.out_dir; else null
  std::string text;       // what `tpusim run` prints on stdout ("" with --quiet, unless --dump-config)
};

// Everything of `tpusim run` except printing. Throws like the commands (see commands.h).
RunOutput run_core(const RunArgs& args, const RunSources& sources, bool want_report);

// The embedded shipped configs (app/embedded.h) by name: "hw" names are configs/hw/NAME.yaml (slices,
// not chips/), "workload" names configs/workloads/NAME.yaml.
std::vector<std::string> embedded_config_names(const std::string& kind);
// The embedded config NAME of `kind` as ConfigText, or nullopt if there is none.
std::optional<ConfigText> embedded_config(const std::string& kind, const std::string& name);

// How a command's exception ends the process: the exit code and the line printed on stderr (without
// the newline), e.g. {2, "error: w.yaml: ..."}. main() and the Python module both use it.
struct Failure {
  int exit_code = 1;
  std::string message;
};
Failure describe_failure(std::exception_ptr e);

}  // namespace tpusim::app
