#include "config/override.h"

#include <cctype>

#include "base/config_error.h"

namespace tpusim {

Override parse_override(std::string_view arg) {
  const std::string a(arg);
  auto bad = [&](const std::string& why) {
    return ConfigError({"--set", "", 0, a, "expected PATH=VALUE" + why, "e.g. --set chip.core.mxu.count=4"});
  };
  const size_t eq = a.find('=');
  if (eq == std::string::npos) throw bad(" (no '=')");
  const std::string path = a.substr(0, eq);
  if (path.empty()) throw bad(" (the path is empty)");
  bool part_empty = true;
  for (char c : path) {
    if (c == '.') {
      if (part_empty) throw bad(" (empty key in the path)");
      part_empty = true;
    } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-') {
      part_empty = false;
    } else {
      throw bad(std::string(" (a path is keys joined by '.', found '") + c + "')");
    }
  }
  if (part_empty) throw bad(" (empty key in the path)");
  return Override{path, a.substr(eq + 1), "--set"};
}

}  // namespace tpusim
