// Bad input: a config file, a --set override or a command-line flag. Maps to exit code 2.
// The message names the file, the YAML path (and line), the offending value, the rule it breaks and,
// where one exists, a suggestion ("did you mean ...").
#pragma once
#include <stdexcept>
#include <string>

namespace tpusim {

struct ConfigErrorInfo {
  std::string file;        // "configs/hw/v3-8.yaml", or "--set" for overrides, "" if none
  std::string yaml_path;   // "chip.core.mxu.count"
  int line = 0;            // 1-based; 0 if unknown
  std::string value;       // the offending value as written
  std::string rule;        // "must be an integer in [1, 16]"
  std::string suggestion;  // "did you mean 'bandwidth_gbyte_per_s'?"
};

class ConfigError : public std::runtime_error {
 public:
  explicit ConfigError(ConfigErrorInfo info) : std::runtime_error(format(info)), info_(std::move(info)) {}
  const ConfigErrorInfo& info() const { return info_; }

  // "configs/hw/v3-8.yaml:12: chip.core.mxu.count: value '0' must be an integer in [1, 16]; did you mean ...?"
  static std::string format(const ConfigErrorInfo& i) {
    // Built with append(): GCC 12 warns falsely (-Wrestrict) on chained operator+ of temporaries here.
    std::string s;
    if (!i.file.empty()) {
      s.append(i.file);
      if (i.line > 0) s.append(":").append(std::to_string(i.line));
      s.append(": ");
    }
    if (!i.yaml_path.empty()) s.append(i.yaml_path).append(": ");
    if (!i.value.empty()) s.append("value '").append(i.value).append("' ");
    s.append(i.rule);
    if (!i.suggestion.empty()) s.append("; ").append(i.suggestion);
    return s;
  }

 private:
  ConfigErrorInfo info_;
};

}  // namespace tpusim
