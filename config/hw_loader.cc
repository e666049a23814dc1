#include "config/hw_loader.h"

#include <algorithm>
#include <filesystem>
#include <mutex>
#include <optional>

#include "config/hw_schema.h"
#include "config/suggest.h"
#include "config/tree.h"

namespace tpusim {

namespace {

HwConfig finish(config::Node root, const std::string& origin, const std::vector<Override>& overrides) {
  config::apply_overrides(root, hw_schema(), overrides);
  HwConfig hw = hw_schema().parse(root);
  if (hw.name.empty()) hw.name = config::file_stem(origin);
  return hw;
}

}  // namespace

HwConfig load_hw_config(const std::string& path, const std::vector<Override>& overrides) {
  const std::string text = config::read_config_file(path, "hw");
  config::Node root = config::parse_yaml(text, path);
  config::resolve_includes(root, std::filesystem::path(path).parent_path().string());
  return finish(std::move(root), path, overrides);
}

HwConfig load_hw_config_text(const std::string& yaml, const std::string& origin, const std::string& base_dir,
                             const std::vector<Override>& overrides,
                             const std::map<std::string, std::string>* embedded_files) {
  config::Node root = config::parse_yaml(yaml, origin);
  config::resolve_includes(root, base_dir, embedded_files);
  return finish(std::move(root), origin, overrides);
}

std::vector<std::string> builtin_hw_names(const std::map<std::string, std::string>& embedded) {
  const std::string dir = std::string(kBuiltinHwDir) + "/";
  std::vector<std::string> names;
  for (const auto& [path, text] : embedded) {
    // Slice files only: configs/hw/NAME.yaml, not the chip files in configs/hw/chips/.
    if (path.rfind(dir, 0) != 0 || !path.ends_with(".yaml")) continue;
    const std::string rest = path.substr(dir.size());
    if (rest.find('/') == std::string::npos) names.push_back(rest.substr(0, rest.size() - 5));
  }
  std::sort(names.begin(), names.end());
  return names;
}

namespace {

// The last built-in loads: a notebook or a sweep loads the same name with the same overrides again,
// and parsing, including and checking a slice and its chip costs a tenth of an in-process kernel
// run. Keyed by the embedded map (its address: the binary's files do not change while it runs; and
// the slice file's text, in case another map took the address), the name and the overrides.
class BuiltinCache {
 public:
  std::optional<HwConfig> find(const void* embedded, const std::string& text, const std::string& name,
                               const std::vector<Override>& overrides) {
    const std::lock_guard lock(mu_);
    for (const Kept& k : kept_)
      if (k.embedded == embedded && k.name == name && same(k.overrides, overrides) && k.text == text) return k.hw;
    return std::nullopt;
  }
  void keep(const void* embedded, const std::string& text, const std::string& name,
            const std::vector<Override>& overrides, const HwConfig& hw) {
    const std::lock_guard lock(mu_);
    if (kept_.size() == kEntries) kept_.erase(kept_.begin());
    kept_.push_back({embedded, text, name, overrides, hw});
  }

 private:
  static bool same(const std::vector<Override>& a, const std::vector<Override>& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const Override& x, const Override& y) {
      return x.path == y.path && x.value == y.value && x.origin == y.origin;
    });
  }
  static constexpr size_t kEntries = 8;
  struct Kept {
    const void* embedded;
    std::string text, name;
    std::vector<Override> overrides;
    HwConfig hw;
  };
  std::mutex mu_;
  std::vector<Kept> kept_;
};

}  // namespace

HwConfig load_builtin_hw(const std::string& name, const std::map<std::string, std::string>& embedded,
                         const std::vector<Override>& overrides, std::string* origin) {
  static BuiltinCache cache;
  const std::string dir = std::string(kBuiltinHwDir) + "/";
  const std::string key = dir + name + ".yaml";
  // `include:` paths in a slice file are relative to configs/hw/, the base directory given here: they
  // resolve to the embedded files' keys (configs/hw/chips/...).
  *origin = kEmbeddedOrigin + key;
  const std::string& text = embedded.at(key);
  if (std::optional<HwConfig> hit = cache.find(&embedded, text, name, overrides)) return std::move(*hit);
  HwConfig hw = load_hw_config_text(text, *origin, kBuiltinHwDir, overrides, &embedded);
  cache.keep(&embedded, text, name, overrides, hw);
  return hw;
}

HwConfig load_hw_ref(const std::string& ref, const std::string& base_dir,
                     const std::map<std::string, std::string>& embedded, const std::vector<Override>& overrides,
                     std::string* origin, ConfigErrorInfo where) {
  namespace fs = std::filesystem;
  const fs::path written(ref);
  const std::string path =
      (written.is_absolute() || base_dir.empty()) ? ref : (fs::path(base_dir) / written).lexically_normal().string();
  std::error_code ec;
  if (!ref.empty() && fs::is_regular_file(path, ec)) {
    *origin = path;
    return load_hw_config(path, overrides);
  }
  const std::vector<std::string> names = builtin_hw_names(embedded);
  std::string name = ref;
  if (const std::string dir = std::string(kBuiltinHwDir) + "/"; name.rfind(dir, 0) == 0) name = name.substr(dir.size());
  if (name.ends_with(".yaml")) name.resize(name.size() - 5);
  if (std::find(names.begin(), names.end(), name) != names.end()) return load_builtin_hw(name, embedded, overrides, origin);
  if (const std::optional<RuleSlice> rule = slice_by_rule(name))  // a public slice without a file of its own
    if (const auto t = embedded.find(std::string(kBuiltinHwDir) + "/" + rule->template_name + ".yaml"); t != embedded.end())
      if (const std::optional<std::string> text = rule_slice_yaml(name, *rule, t->second)) {
        *origin = std::string(kGeneratedOrigin) + kBuiltinHwDir + "/" + name + ".yaml";
        return load_hw_config_text(*text, *origin, kBuiltinHwDir, overrides, &embedded);
      }
  where.value = ref;
  if (fs::exists(path, ec))  // a directory or a device: say what it is (read_file's rule)
    config::read_file(path);
  where.rule = "is neither a hardware file (no file '" + path + "') nor a built-in hardware name";
  std::vector<std::string> known = names;
  for (std::string& n : rule_slice_names()) known.push_back(std::move(n));
  const auto near = config::closest(name, known);
  where.suggestion = (near ? "did you mean '" + *near + "'? " : std::string()) + "built-in: " + config::join(names) +
                     "; by rule (config/slice_rules.h): v5litepod-N and v6e-N (N = 1, 4, 8, ..., 256 chips), v5p-N (N = 8, 16, "
                     "24, ..., 12288 TensorCores)";
  if (ref.find('/') != std::string::npos || ref.ends_with(".yaml")) {
    const std::string files = config::missing_file_hint(path, "hw");
    if (!files.empty()) where.suggestion += "; " + files;
  }
  throw ConfigError(where);
}

ChipParams load_chip_params(const std::string& path) {
  const std::string text = config::read_config_file(path, "hw/chips");
  config::Node root = config::parse_yaml(text, path);
  config::resolve_includes(root, std::filesystem::path(path).parent_path().string());
  ChipParams chip;
  chip_schema().parse_into(chip, root, "chip");
  return chip;
}

std::string dump_hw_config(const HwConfig& hw) {
  return "# Resolved hardware config (tpusim " TPUSIM_VERSION "): every key, with its unit and meaning.\n" +
         hw_schema().dump(hw);
}

std::string hw_schema_markdown() { return hw_schema().markdown(); }

}  // namespace tpusim
