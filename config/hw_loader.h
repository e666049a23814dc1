// Loading the hardware config (HwConfig) from YAML: schema-checked, overrides applied, resolved once.
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/config_error.h"
#include "config/override.h"  // Override, parse_override
#include "sim/hw/hw_config.h"

namespace tpusim {

// Loads a hardware YAML file (following `include:`), applies overrides, validates every field
// against the schema. Throws ConfigError on any bad input.
HwConfig load_hw_config(const std::string& path, const std::vector<Override>& overrides = {});
// Same, from text (used for the embedded default). `origin` names it in errors; `base_dir`
// resolves `include:` paths. When `embedded_files` is given, an `include:` path (as written, relative
// to base_dir) is looked up there first, so the embedded default needs no files on disk.
HwConfig load_hw_config_text(const std::string& yaml, const std::string& origin, const std::string& base_dir,
                             const std::vector<Override>& overrides = {},
                             const std::map<std::string, std::string>* embedded_files = nullptr);

// ---- Hardware references: `--hw`, a workload's `hw:` ---------------------------------------------
// A reference is a file path (relative to `base_dir`, "" = the working directory) when that file
// exists, else a built-in name: the stem of a shipped slice file configs/hw/NAME.yaml held in
// `embedded` (path relative to the source root -> text; the binary embeds configs/hw/**). "v3-32",
// "v3-32.yaml" and "configs/hw/v3-32.yaml" all name the built-in. An embedded slice's `include:` of
// its chip file is served from `embedded` too, so built-ins need no files on disk.
inline constexpr const char* kBuiltinHwDir = "configs/hw";
inline constexpr const char* kEmbeddedOrigin = "(embedded) ";  // origin prefix of an embedded file
std::vector<std::string> builtin_hw_names(const std::map<std::string, std::string>& embedded);
// Loads the reference; `*origin` becomes the file's path or "(embedded) configs/hw/NAME.yaml".
// Neither a file nor a built-in: ConfigError at `where` (its rule, value and suggestion filled in)
// listing the built-in names, with a did-you-mean.
// The built-in NAME (configs/hw/NAME.yaml in `embedded`, which must hold it), whatever files exist.
HwConfig load_builtin_hw(const std::string& name, const std::map<std::string, std::string>& embedded,
                         const std::vector<Override>& overrides, std::string* origin);
HwConfig load_hw_ref(const std::string& ref, const std::string& base_dir,
                     const std::map<std::string, std::string>& embedded, const std::vector<Override>& overrides,
                     std::string* origin, ConfigErrorInfo where);

// The resolved config as YAML, every key with its unit and description as a comment.
std::string dump_hw_config(const HwConfig& hw);
// Markdown reference of the hardware schema (names, types, units, ranges, defaults, docs).
std::string hw_schema_markdown();
// Validates a slice's chip file (e.g. configs/hw/chips/tpu_v3.yaml) on its own: the mapping that a
// slice file includes under `chip:`. Throws ConfigError.
ChipParams load_chip_params(const std::string& path);

}  // namespace tpusim
