#include "config/hw_loader.h"

#include <filesystem>

#include "config/hw_schema.h"
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
  const std::string text = config::read_file(path, config::missing_file_hint(path, "hw"));
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

ChipParams load_chip_params(const std::string& path) {
  const std::string text = config::read_file(path, config::missing_file_hint(path, "hw/chips"));
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
