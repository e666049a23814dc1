// Registry of HBM variants (STYLE rule 3): the only place that lists them.
#include <functional>
#include <utility>

#include "base/config_error.h"
#include "sim/hbm/hbm.h"
#include "sim/hbm/simple_hbm.h"

namespace tpusim {
namespace {

using Factory = std::function<std::unique_ptr<Hbm>(sc_core::sc_module_name)>;

const std::vector<std::pair<std::string, Factory>>& registry() {
  static const std::vector<std::pair<std::string, Factory>> kImpls = {
      {"simple", [](sc_core::sc_module_name n) { return std::unique_ptr<Hbm>(new SimpleHbm(n)); }},
  };
  return kImpls;
}

}  // namespace

std::vector<std::string> hbm_impl_names() {
  std::vector<std::string> names;
  for (const auto& [name, factory] : registry()) names.push_back(name);
  return names;
}

void check_hbm_impl(const std::string& impl) {
  for (const auto& [name, factory] : registry())
    if (name == impl) return;
  std::string known;
  for (const auto& n : hbm_impl_names()) known += (known.empty() ? "" : ", ") + n;
  throw ConfigError({"", "chip.hbm.impl", 0, impl, "unknown HBM model; known models: " + known, ""});
}

std::unique_ptr<Hbm> make_hbm(const std::string& impl, sc_core::sc_module_name name) {
  check_hbm_impl(impl);
  for (const auto& [n, factory] : registry())
    if (n == impl) return factory(name);
  return nullptr;  // unreachable: check_hbm_impl threw
}

}  // namespace tpusim
