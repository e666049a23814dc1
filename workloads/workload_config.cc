// Workload configs. The `kind:` key selects a schema from a registry (only `kernel` so far); each
// kind's schema is declared once below and drives parsing, dumping and the Markdown reference.
#include "workloads/workload_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <functional>

#include "config/hw_schema.h"
#include "config/schema.h"
#include "config/suggest.h"
#include "config/tree.h"
#include "models/kernel_specs.h"

namespace tpusim {

using config::CheckContext;
using config::Schema;

namespace {

std::vector<std::string> kernel_names() {
  std::vector<std::string> names;
  for (const auto& k : models::kernel_specs()) names.push_back(k.name);
  return names;
}

const models::KernelSpec* find_kernel(const std::string& name) {
  for (const auto& k : models::kernel_specs())
    if (k.name == name) return &k;
  return nullptr;
}

std::string kernel_list_doc() {
  std::string s;
  for (const auto& k : models::kernel_specs())
    s += fmt::format("{}`{}` ({}: {})", s.empty() ? "" : "; ", k.name, config::join(k.shape_keys), k.doc);
  return s;
}

const Schema<WorkloadConfig>& kernel_schema() {
  static const Schema<WorkloadConfig> s = [] {
    Schema<WorkloadConfig> s("Workload, kind: kernel", "Runs one kernel once, on one TensorCore of the slice.");
    s.field(&WorkloadConfig::kind, "kind").one_of({"kernel"}).doc("workload kind (selects this schema)");
    s.field(&WorkloadConfig::name, "name").default_value("", "file stem").doc("workload name, shown in reports");
    s.field(&WorkloadConfig::kernel, &KernelWorkload::kernel, "kernel").one_of(kernel_names()).doc("which kernel to build");
    s.field(&WorkloadConfig::kernel, &KernelWorkload::shape, "shape")
        .min(1)
        .doc("the kernel's dimensions: exactly the shape keys of `kernel`")
        .details("Per kernel: " + kernel_list_doc());
    s.field(&WorkloadConfig::kernel, &KernelWorkload::dtype, "dtype")
        .one_of({"f32", "bf16"})
        .default_value("f32")
        .doc("element type of the tensors in HBM");
    s.field(&WorkloadConfig::kernel, &KernelWorkload::precision, "precision")
        .one_of({"default", "high", "highest"})
        .default_value("default")
        .doc("fp32 matmul precision: bf16 passes per MXU product, default 1, high 3, highest 6")
        .source("PyTorch/XLA torch_xla.backends docs");
    s.field(&WorkloadConfig::kernel, &KernelWorkload::chip, "chip")
        .default_value(0)
        .doc("index of the chip that runs it (< the slice's chips)");
    s.field(&WorkloadConfig::kernel, &KernelWorkload::core, "core")
        .default_value(0)
        .doc("index of the TensorCore on that chip (< chip.cores)");
    s.check([](const WorkloadConfig& w, const CheckContext& c) {
      const models::KernelSpec* spec = find_kernel(w.kernel.kernel);
      const std::string takes = fmt::format("kernel '{}' takes {}", spec->name, config::join(spec->shape_keys));
      for (const auto& [key, v] : w.kernel.shape) {
        if (std::find(spec->shape_keys.begin(), spec->shape_keys.end(), key) == spec->shape_keys.end())
          c.fail("shape." + key, "unknown shape key; " + takes, config::suggest(key, spec->shape_keys, "valid keys"));
      }
      for (const auto& key : spec->shape_keys)
        if (!w.kernel.shape.count(key)) c.fail_missing("shape", "missing shape key '" + key + "'; " + takes);
    });
    return s;
  }();
  return s;
}

// The registry of workload kinds: name -> schema. A new kind adds one entry here.
struct WorkloadKind {
  std::string name;
  std::function<const Schema<WorkloadConfig>&()> schema;
};

const std::vector<WorkloadKind>& kinds() {
  static const std::vector<WorkloadKind> k = {{"kernel", kernel_schema}};
  return k;
}

std::vector<std::string> kind_names() {
  std::vector<std::string> n;
  for (const auto& k : kinds()) n.push_back(k.name);
  return n;
}

const Schema<WorkloadConfig>& schema_of_kind(const config::Node& root, const std::vector<Override>& overrides) {
  if (!root.is_map()) throw ConfigError({root.file, "", root.line, "", "the document must be a mapping with a 'kind:' key", ""});
  const config::Node* kind_node = root.find("kind");
  std::string kind;
  const config::Node* at = kind_node;
  for (const auto& ov : overrides)
    if (ov.path == "kind") kind = ov.value;  // `--set kind=...` decides which schema checks the others
  if (kind.empty() && kind_node && kind_node->kind == config::Node::Kind::Scalar) kind = kind_node->scalar;
  if (kind.empty())
    throw ConfigError({root.file, "kind", root.line, "", "missing required key (workload kind; known: " + config::join(kind_names()) + ")", ""});
  for (const auto& k : kinds())
    if (k.name == kind) return k.schema();
  const auto c = config::closest(kind, kind_names());
  throw ConfigError({at ? at->file : "--set", "kind", at ? at->line : 0, "",
                     "unknown kind '" + kind + "'; known: " + config::join(kind_names()),
                     c ? "did you mean '" + *c + "'?" : ""});
}

WorkloadConfig finish(config::Node root, const std::string& origin, const std::vector<Override>& overrides) {
  const Schema<WorkloadConfig>& schema = schema_of_kind(root, overrides);
  config::apply_overrides(root, schema, overrides);
  WorkloadConfig w = schema.parse(root);
  if (w.name.empty()) w.name = config::file_stem(origin);
  return w;
}

}  // namespace

WorkloadConfig load_workload_config(const std::string& path, const std::vector<Override>& overrides) {
  const std::string text = config::read_file(path, config::missing_file_hint(path, "workloads"));
  config::Node root = config::parse_yaml(text, path);
  config::resolve_includes(root, std::filesystem::path(path).parent_path().string());
  return finish(std::move(root), path, overrides);
}

WorkloadConfig load_workload_config_text(const std::string& yaml, const std::string& origin,
                                         const std::vector<Override>& overrides) {
  return finish(config::parse_yaml(yaml, origin), origin, overrides);
}

std::string dump_workload_config(const WorkloadConfig& w) {
  for (const auto& k : kinds())
    if (k.name == w.kind) return "# Resolved workload config: every key, with its meaning.\n" + k.schema().dump(w);
  throw ConfigError({"", "kind", 0, w.kind, "unknown kind; known: " + config::join(kind_names()), ""});
}

std::string workload_schema_markdown() {
  std::string md;
  for (const auto& k : kinds()) md += k.schema().markdown();
  return md;
}

SplitOverrides split_overrides(const std::vector<Override>& all) {
  SplitOverrides out;
  for (const Override& ov : all) {
    auto strip = [&](size_t n) {
      Override o = ov;
      o.path = ov.path.substr(n);
      return o;
    };
    if (ov.path.rfind("hw.", 0) == 0) {
      out.hw.push_back(strip(3));
      continue;
    }
    if (ov.path.rfind("workload.", 0) == 0) {
      out.workload.push_back(strip(9));
      continue;
    }
    const bool in_hw = hw_schema().has_path(ov.path);
    bool in_wl = false;
    for (const auto& k : kinds()) in_wl = in_wl || k.schema().has_path(ov.path);
    if (in_hw && in_wl)
      throw ConfigError({ov.origin, ov.path, 0, "", "is a key of both the hardware and the workload config",
                         "prefix it: hw." + ov.path + " or workload." + ov.path});
    if (in_hw) {
      out.hw.push_back(ov);
    } else if (in_wl) {
      out.workload.push_back(ov);
    } else {
      // A known first key with a bad rest: that schema explains the rest, with its own "did you mean".
      const std::string first = ov.path.substr(0, ov.path.find('.'));
      if (hw_schema().find(first)) hw_schema().resolve_path(ov.path, ov.origin);
      for (const auto& k : kinds())
        if (k.schema().find(first)) k.schema().resolve_path(ov.path, ov.origin);
      // An unknown first key: suggest across both configs, prefixed so that the fix is unambiguous.
      std::vector<std::string> bare, prefixed;
      for (const auto& key : hw_schema().keys()) bare.push_back(key), prefixed.push_back("hw." + key);
      for (const auto& k : kinds())
        for (const auto& key : k.schema().keys()) bare.push_back(key), prefixed.push_back("workload." + key);
      const auto c = config::closest(first, bare);
      const std::string hint = c ? "did you mean '" + prefixed[std::find(bare.begin(), bare.end(), *c) - bare.begin()] + "'?"
                                 : "valid keys: " + config::join(prefixed);
      throw ConfigError({ov.origin, ov.path, 0, "", "is not a key of the hardware or the workload config", hint});
    }
  }
  return out;
}

}  // namespace tpusim
