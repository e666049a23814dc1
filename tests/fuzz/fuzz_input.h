// The input of the config fuzz targets: a YAML document, then optionally a line `#@set` followed by
// `--set` overrides, one PATH=VALUE a line. `#@set` is a YAML comment, so a shipped config file is a
// valid input as it is (the seed corpus), and the fuzzer mutates documents and overrides together.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "config/override.h"

namespace tpusim::fuzz {

inline constexpr std::string_view kSetSeparator = "\n#@set\n";

struct ConfigInput {
  std::string yaml;
  std::vector<std::string> set_lines;  // as written after the separator (empty lines dropped)
};

inline ConfigInput split_input(const uint8_t* data, size_t size) {
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  ConfigInput in;
  const size_t sep = all.find(kSetSeparator);
  in.yaml = std::string(all.substr(0, sep == std::string_view::npos ? all.size() : sep + 1));
  if (sep == std::string_view::npos) return in;
  std::string_view rest = all.substr(sep + kSetSeparator.size());
  while (!rest.empty()) {
    const size_t nl = rest.find('\n');
    const std::string_view line = rest.substr(0, nl);
    if (!line.empty()) in.set_lines.emplace_back(line);
    if (nl == std::string_view::npos) break;
    rest.remove_prefix(nl + 1);
  }
  return in;
}

// parse_override of every line, as `tpusim run --set` does (a malformed one throws ConfigError).
inline std::vector<Override> parse_overrides(const std::vector<std::string>& lines) {
  std::vector<Override> out;
  for (const auto& l : lines) out.push_back(parse_override(l));
  return out;
}

// An allowed error, printed when TPUSIM_FUZZ_VERBOSE is set (to see what a seed or a crash input
// ends in; libFuzzer runs stay quiet).
inline void note(const std::exception& e) {
  static const bool verbose = std::getenv("TPUSIM_FUZZ_VERBOSE") != nullptr;
  if (verbose) std::cerr << "allowed error: " << e.what() << "\n";
}

}  // namespace tpusim::fuzz
