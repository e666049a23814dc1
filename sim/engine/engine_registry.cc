// Registry of engines (STYLE rule 3): the only place that lists them.
#include <functional>
#include <utility>

#include "base/config_error.h"
#include "sim/engine/analytical_engine.h"
#include "sim/engine/engine.h"
#include "sim/engine/systemc_engine.h"

namespace tpusim {
namespace {

using Factory = std::unique_ptr<Engine> (*)(const HwConfig&);

const std::vector<std::pair<std::string, Factory>>& registry() {
  static const std::vector<std::pair<std::string, Factory>> kEngines = {
      {"analytical", &make_analytical_engine},
      {"systemc", &make_systemc_engine},
  };
  return kEngines;
}

}  // namespace

std::vector<uint32_t> Engine::simulated_cores(const isa::Program& program, bool) {
  std::vector<uint32_t> all(program.cores.size());
  for (uint32_t c = 0; c < all.size(); ++c) all[c] = c;
  return all;
}

std::vector<std::string> engine_names() {
  std::vector<std::string> names;
  for (const auto& [name, factory] : registry()) names.push_back(name);
  return names;
}

std::unique_ptr<Engine> make_engine(std::string_view name, const HwConfig& hw) {
  for (const auto& [n, factory] : registry())
    if (n == name) return factory(hw);
  std::string known;
  for (const auto& n : engine_names()) known += (known.empty() ? "" : ", ") + n;
  throw ConfigError({"", "engine", 0, std::string(name), "unknown engine; known engines: " + known, ""});
}

}  // namespace tpusim
