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
  std::string engine = "systemc";
  bool dump_config = false;
  bool quiet = false;
};
int run(const RunArgs& args);

int validate(const std::vector<std::string>& files);

// Bad input named by `where` (a file or a flag): "where: value 'v' rule; suggestion".
ConfigError input_error(std::string where, std::string rule, std::string value = "", std::string suggestion = "");

// Throws ConfigError naming `path` if it does not exist or is not a regular file.
void require_file(const std::string& path);

}  // namespace tpusim::app
