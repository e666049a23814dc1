// A `--set path.to.key=value` override of one config key (hardware or workload).
#pragma once
#include <string>
#include <string_view>

namespace tpusim {

// One `--set path.to.key=value` override. `path` is relative to the config it targets.
struct Override {
  std::string path;
  std::string value;
  std::string origin = "--set";  // shown as the "file" in errors
};

// Parses "a.b.c=value". Throws ConfigError when malformed.
Override parse_override(std::string_view arg);

}  // namespace tpusim
