// The embedded configs by name and the exit-code rule (app/run_core.h); run_core() itself is in
// cmd_run.cc, next to the run's stages.
#include "app/run_core.h"

#include <yaml-cpp/exceptions.h>

#include <filesystem>

#include "app/embedded.h"
#include "base/config_error.h"
#include "sim/base/sim_error.h"

namespace tpusim::app {

namespace fs = std::filesystem;

namespace {

// configs/hw/ holds the slices (chips/ only their chip files); configs/workloads/ the workloads.
std::string embedded_dir(const std::string& kind) {
  if (kind == "hw") return "configs/hw/";
  if (kind == "workload") return "configs/workloads/";
  throw std::logic_error("embedded configs: unknown kind " + kind);
}

}  // namespace

std::vector<std::string> embedded_config_names(const std::string& kind) {
  const std::string dir = embedded_dir(kind);
  std::vector<std::string> names;  // sorted: embedded_files() is a std::map
  for (const auto& [path, text] : embedded_files()) {
    if (path.rfind(dir, 0) != 0 || !path.ends_with(".yaml")) continue;
    const std::string rest = path.substr(dir.size());
    if (rest.find('/') == std::string::npos) names.push_back(rest.substr(0, rest.size() - 5));
  }
  return names;
}

std::optional<ConfigText> embedded_config(const std::string& kind, const std::string& name) {
  const std::string path = embedded_dir(kind) + name + ".yaml";
  const auto& files = embedded_files();
  const auto it = name.find('/') == std::string::npos ? files.find(path) : files.end();
  if (it == files.end()) return std::nullopt;
  ConfigText c;
  c.text = it->second;
  c.origin = "(embedded) " + path;  // as `tpusim run` names its embedded default
  c.base_dir = fs::path(path).parent_path().string();
  c.embedded_includes = kind == "hw";
  return c;
}

Failure describe_failure(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const ConfigError& e) {
    return {2, std::string("error: ") + e.what()};
  } catch (const YAML::Exception& e) {
    // Loaders report YAML errors as ConfigError with the file name; this is the safety net.
    return {2, std::string("error: YAML: ") + e.what()};
  } catch (const SimError& e) {
    return {3, std::string("error: ") + e.what()};
  } catch (const std::exception& e) {
    return {1, std::string("internal error: ") + e.what()};
  } catch (...) {
    return {1, "internal error: unknown exception"};
  }
}

}  // namespace tpusim::app
