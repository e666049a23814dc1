// Workload configs. The `kind:` key selects a schema from a registry (`kernel`, `training`, `hlo`);
// each kind's schema is declared once — below (kernel), in training_schema.cc, in
// hlo_workload_schema.cc — and drives parsing, dumping and the Markdown reference.
#include "workloads/config/workload_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <functional>

#include "config/hw_schema.h"
#include "config/schema.h"
#include "config/suggest.h"
#include "config/tree.h"
#include "models/families.h"
#include "models/kernel_specs.h"
#include "workloads/data/batching.h"
#include "workloads/data/dataset.h"
#include "workloads/data/dataset_file.h"
#include "workloads/config/hf_arguments.h"
#include "workloads/config/maxtext_args.h"
#include "workloads/config/workload_schemas.h"
#include "workloads/config/xla_constructs.h"

namespace tpusim {

using config::CheckContext;
using config::Schema;

const NameTable<WorkloadKind>& enum_names(WorkloadKind) {
  static const NameTable<WorkloadKind> t = {
      {WorkloadKind::kKernel, "kernel"}, {WorkloadKind::kTraining, "training"}, {WorkloadKind::kHlo, "hlo"}};
  return t;
}

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
    s.tag("kind", "kernel", "workload kind (selects this schema)");
    s.field(&WorkloadConfig::name, "name").default_value("", "file stem").doc("workload name, shown in reports");
    s.field(&WorkloadConfig::spec, &KernelWorkload::kernel, "kernel").one_of(kernel_names()).doc("which kernel to build");
    s.field(&WorkloadConfig::spec, &KernelWorkload::shape, "shape")
        .min(1)
        .doc("the kernel's dimensions: exactly the shape keys of `kernel`")
        .details("Per kernel: " + kernel_list_doc());
    s.field(&WorkloadConfig::spec, &KernelWorkload::dtype, "dtype")
        .one_of({models::dtype_name(models::DType::kF32), models::dtype_name(models::DType::kBF16)})
        .default_value(models::DType::kF32)
        .doc("element type of the tensors in HBM");
    s.field(&WorkloadConfig::spec, &KernelWorkload::precision, "precision")
        .default_value(models::DotPrecision::kDefault)
        .doc("fp32 matmul precision: bf16 passes per MXU product, default 1, high 3, highest 6")
        .source("PyTorch/XLA torch_xla.backends docs");
    s.field(&WorkloadConfig::spec, &KernelWorkload::chip, "chip")
        .default_value(0)
        .doc("index of the chip that runs it (< the slice's chips)");
    s.field(&WorkloadConfig::spec, &KernelWorkload::core, "core")
        .default_value(0)
        .doc("index of the TensorCore on that chip (< chip.cores)");
    s.check([](const WorkloadConfig& w, const CheckContext& c) {
      const models::KernelSpec* spec = find_kernel(w.kernel().kernel);
      const std::string takes = fmt::format("kernel '{}' takes {}", spec->name, config::join(spec->shape_keys));
      for (const auto& [key, v] : w.kernel().shape) {
        if (std::find(spec->shape_keys.begin(), spec->shape_keys.end(), key) == spec->shape_keys.end())
          c.fail("shape." + key, "unknown shape key; " + takes, config::suggest(key, spec->shape_keys, "valid keys"));
      }
      for (const auto& key : spec->shape_keys)
        if (!w.kernel().shape.count(key)) c.fail_missing("shape", "missing shape key '" + key + "'; " + takes);
    });
    return s;
  }();
  return s;
}


// The registry of workload kinds: kind -> schema, in WorkloadKind's order (the variant's). A new
// kind adds an enum value, a name, an alternative of WorkloadConfig::spec and one entry here.
struct KindSchema {
  WorkloadKind kind;
  const Schema<WorkloadConfig>& (*schema)();
  std::string name() const { return enum_name(kind); }
};

const std::vector<KindSchema>& kinds() {
  static const std::vector<KindSchema> k = {
      {WorkloadKind::kKernel, kernel_schema}, {WorkloadKind::kTraining, training_schema}, {WorkloadKind::kHlo, hlo_workload_schema}};
  return k;
}

std::vector<std::string> kind_names() { return names_of(enum_names(WorkloadKind{})); }

// A config of `kind`, every other key at its type's default: what the kind's schema parses into.
WorkloadConfig empty_of_kind(WorkloadKind kind) {
  WorkloadConfig w;
  switch (kind) {
    case WorkloadKind::kKernel: w.spec.emplace<KernelWorkload>(); break;
    case WorkloadKind::kTraining: w.spec.emplace<TrainingWorkload>(); break;
    case WorkloadKind::kHlo: w.spec.emplace<HloWorkload>(); break;
  }
  return w;
}

const KindSchema& schema_of_kind(const config::Node& root, const std::vector<Override>& overrides) {
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
    if (k.name() == kind) return k;
  const auto c = config::closest(kind, kind_names());
  throw ConfigError({at ? at->file : "--set", "kind", at ? at->line : 0, "",
                     "unknown kind '" + kind + "'; known: " + config::join(kind_names()),
                     c ? "did you mean '" + *c + "'?" : ""});
}

constexpr const char* kHwKeyDoc =
    "hardware the workload was written for: a path (relative to the workload file) or a built-in name such as "
    "`v3-32`; `tpusim run --hw` and a sweep's `hw` win over it (docs/config-hw.md)";

// `hw:` is read here, before the kind's schema sees the document (it belongs to every kind).
void take_hw(config::Node& root, WorkloadConfig& w, const std::string& base_dir) {
  const config::Node* n = root.find("hw");
  if (!n) return;
  if (n->kind != config::Node::Kind::Scalar || n->scalar.empty())
    throw ConfigError({n->file, "hw", n->line, n->text(), "must be a hardware file path or a built-in name", "e.g. hw: v3-8"});
  w.hw = n->scalar;
  w.hw_dir = base_dir;
  w.hw_origin = n->file;
  w.hw_line = n->line;
  root.erase("hw");
}

// The seq2seq pair form of a split, `train: {source: X, target: Y}`, as the flat keys `train: X`,
// `train_target: Y` (the schema's fields); anything else in the map is reported at its YAML path.
void flatten_pairs(config::Node& dataset) {
  for (const char* split : {"train", "eval"}) {
    config::Node* n = dataset.find(split);
    if (!n || !n->is_map()) continue;
    const config::Node* src = n->find("source");
    const config::Node* tgt = n->find("target");
    for (const auto& e : n->entries)
      if (e.key != "source" && e.key != "target")
        throw ConfigError({e.value.file, std::string("dataset.") + split + "." + e.key, e.line, e.key,
                           "a source/target pair takes the keys source and target",
                           config::suggest(e.key, {"source", "target"}, "keys")});
    if (!src || !tgt || src->kind != config::Node::Kind::Scalar || tgt->kind != config::Node::Kind::Scalar)
      throw ConfigError({n->file, std::string("dataset.") + split + (src ? ".target" : ".source"), n->line, "",
                         "a source/target pair needs both source and target dataset references",
                         "e.g. " + std::string(split) + ": {source: fixed:512, target: fixed:128}"});
    config::Node target = *tgt;
    const int line = n->line;
    config::Node source = *src;
    *n = source;
    dataset.entries.push_back({std::string(split) + "_target", line, target});
  }
}

// A dataset file written in the workload file is relative to its directory; one from --set stays
// relative to the working directory. A missing file is reported here, where the key's line is known.
void resolve_dataset_paths(config::Node& root, const std::string& origin, const std::string& base_dir) {
  config::Node* d = root.find("dataset");
  if (!d || !d->is_map()) return;
  for (const char* split : {"train", "eval", "train_target", "eval_target"}) {
    config::Node* n = d->find(split);
    if (!n || n->kind != config::Node::Kind::Scalar || !data::is_file_ref(n->scalar)) continue;
    if (!base_dir.empty() && n->file == origin) n->scalar = data::resolve_file_ref(n->scalar, base_dir);
    data::require_length_file(data::split_file_ref(n->scalar), {n->file, std::string("dataset.") + split, n->line});
  }
}

// An error the schema found in a key that a Hugging Face name wrote names the key as the user wrote it.
// (A key that --set replaced afterwards is --set's, named as --set named it.)
[[noreturn]] void rethrow_as_written(const ConfigError& e, const HfRewrite& hf, const config::Node& root) {
  ConfigErrorInfo i = e.info();
  const std::string& p = i.yaml_path;
  const size_t end = std::min(p.find('.'), p.find('['));
  const std::string key = p.substr(0, end);
  const config::Node* n = root.find(key);
  if (auto it = hf.written_as.find(key); it != hf.written_as.end() && it->second.front() != key && n && n->file == i.file) {
    const std::string& as = it->second.front();
    i.yaml_path = as + (end == std::string::npos ? "" : p.substr(end));
    i.rule += " (as tpusim's " + key + ")";
    throw ConfigError(i);
  }
  throw;
}

WorkloadConfig finish(config::Node root, const std::string& origin, const std::vector<Override>& overrides,
                      const std::string& training_args, const std::string& maxtext_args, const std::string& base_dir = {}) {
  const KindSchema& kind = schema_of_kind(root, overrides);
  const Schema<WorkloadConfig>& schema = kind.schema();
  // `hw:` belongs to every kind and is not a schema key: taken out before anything checks the keys.
  WorkloadConfig hw_ref;
  take_hw(root, hw_ref, base_dir);
  // Hugging Face / Accelerate names become tpusim's keys before --set and the schema see the tree.
  HfRewrite hf;
  const bool training = kind.kind == WorkloadKind::kTraining;
  if (!training_args.empty()) {
    if (!training) throw ConfigError({"--training-args", "", 0, training_args, "applies to workloads of kind: training only", ""});
    const std::string text = config::read_file(training_args, "pass the path of a training_args.json or an Accelerate config file");
    apply_training_args(root, config::parse_yaml(text, training_args), schema.keys());
  }
  std::vector<std::string> maxtext_ignored;
  if (!maxtext_args.empty()) {
    if (!training) throw ConfigError({"--maxtext-args", "", 0, maxtext_args, "applies to workloads of kind: training only", ""});
    std::string from;
    const std::string text = read_maxtext_args(maxtext_args, &from);
    maxtext_ignored = apply_maxtext_args(root, text, from);
  }
  if (training) hf = rewrite_hf_arguments(root, schema.keys());
  // `dataset.train: {source: X, target: Y}` (the seq2seq pair form) is `train: X` with `train_target: Y`.
  if (config::Node* d = root.find("dataset"); d && d->is_map()) flatten_pairs(*d);
  config::apply_overrides(root, schema, overrides);
  resolve_dataset_paths(root, origin, base_dir);
  // kind: hlo: a module path written in the workload file is relative to its directory.
  if (config::Node* m = root.find("module"); m && kind.kind == WorkloadKind::kHlo && m->kind == config::Node::Kind::Scalar &&
                                             !base_dir.empty() && m->file == origin && !m->scalar.empty() &&
                                             !std::filesystem::path(m->scalar).is_absolute())
    m->scalar = (std::filesystem::path(base_dir) / m->scalar).lexically_normal().string();
  // `model: {layers: 4, ...}` (the inline form) is `model: custom` with that model_config.
  if (config::Node* m = root.find("model"); m && m->is_map() && !root.find("model_config")) {
    config::Node section = *m;
    m->kind = config::Node::Kind::Scalar;
    m->scalar = "custom";
    m->entries.clear();
    root.entries.push_back({"model_config", section.line, section});
  }
  // `padding: {multiple_of: 32}` (the YAML map form) is the string form `multiple_of:32`.
  if (config::Node* p = root.find("padding"); p && p->is_map() && p->entries.size() == 1 &&
                                               p->entries[0].key == "multiple_of" &&
                                               p->entries[0].value.kind == config::Node::Kind::Scalar) {
    config::Node flat = *p;
    flat.kind = config::Node::Kind::Scalar;
    flat.scalar = "multiple_of:" + p->entries[0].value.scalar;
    flat.entries.clear();
    *p = flat;
  }
  WorkloadConfig w = empty_of_kind(kind.kind);
  try {
    schema.parse_into(w, root, "");
  } catch (const ConfigError& e) {
    rethrow_as_written(e, hf, root);
  }
  if (auto* t = std::get_if<TrainingWorkload>(&w.spec)) {
    t->ignored_keys = hf.ignored_keys;
    t->ignored_keys.insert(t->ignored_keys.end(), maxtext_ignored.begin(), maxtext_ignored.end());
    if (const config::Node* n = root.find("num_processes")) t->num_processes_file = n->file, t->num_processes_line = n->line;
    for (const std::string path : {"dataset.train", "dataset.eval", "dataset.train_target", "dataset.eval_target",
                                    "compile_cache.persistent_dir", "epochs", "steps"}) {
      const config::Node* n = &root;
      for (size_t from = 0; n && from <= path.size();) {
        const size_t dot = std::min(path.find('.', from), path.size());
        n = n->is_map() ? n->find(path.substr(from, dot - from)) : nullptr;
        from = dot + 1;
      }
      if (n) t->origins[path] = {n->file, n->line};
    }
    if (t->eval_per_device_batch_size == 0) t->eval_per_device_batch_size = t->per_device_batch_size;
  }
  if (auto* k = std::get_if<KernelWorkload>(&w.spec)) {
    if (const config::Node* n = root.find("chip")) k->chip_file = n->file, k->chip_line = n->line;
    if (const config::Node* n = root.find("core")) k->core_file = n->file, k->core_line = n->line;
    if (const config::Node* sh = root.find("shape"); sh && sh->is_map())
      for (const auto& [key, v] : k->shape)
        if (const config::Node* n = sh->find(key)) k->shape_origins[key] = {n->file, n->line};
  }
  if (auto* h = std::get_if<HloWorkload>(&w.spec)) {
    if (const config::Node* n = root.find("module")) h->module_origin = {n->file, n->line};
    if (const config::Node* n = root.find("module_name")) h->module_name_origin = {n->file, n->line};
    if (const config::Node* n = root.find("replicas")) h->replicas_origin = {n->file, n->line};
  }
  w.hw = hw_ref.hw, w.hw_dir = hw_ref.hw_dir, w.hw_origin = hw_ref.hw_origin, w.hw_line = hw_ref.hw_line;
  if (w.name.empty()) w.name = config::file_stem(origin);
  return w;
}

}  // namespace

WorkloadConfig load_workload_config(const std::string& path, const std::vector<Override>& overrides,
                                    const std::string& training_args, const std::string& maxtext_args) {
  const std::string text = config::read_config_file(path, "workloads");
  config::Node root = config::parse_yaml(text, path);
  const std::string dir = std::filesystem::path(path).parent_path().string();
  config::resolve_includes(root, dir);
  return finish(std::move(root), path, overrides, training_args, maxtext_args, dir.empty() ? "." : dir);
}

WorkloadConfig load_workload_config_text(const std::string& yaml, const std::string& origin,
                                         const std::vector<Override>& overrides, const std::string& training_args,
                                         const std::string& maxtext_args) {
  return finish(config::parse_yaml(yaml, origin), origin, overrides, training_args, maxtext_args);
}

std::string dump_workload_config(const WorkloadConfig& w) {
  return "# Resolved workload config: every key, with its meaning.\n" + kinds()[size_t(w.kind())].schema().dump(w);
}

std::vector<std::string> training_workload_keys() { return training_schema().keys(); }

std::string workload_schema_markdown() {
  std::string md = "### Every kind\n\n| Key | Type | Unit | Default | Allowed | Description |\n|---|---|---|---|---|---|\n"
                   "| `hw` | string |  | *none* |  | " + std::string(kHwKeyDoc) + " |\n\n";
  for (const auto& k : kinds()) md += k.schema().markdown();
  return md + hf_arguments_markdown() + maxtext_arguments_markdown();
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

void check_override_path(const Override& ov) {
  const SplitOverrides split = split_overrides({ov});  // an unknown unprefixed path throws here
  if (!split.hw.empty()) {
    hw_schema().resolve_path(split.hw[0].path, ov.origin);
    return;
  }
  const std::string& path = split.workload[0].path;
  for (const auto& k : kinds())
    if (k.schema().has_path(path)) return;
  // A kind that knows the first key explains the rest; otherwise suggest across every kind's keys.
  const std::string first = path.substr(0, path.find('.'));
  for (const auto& k : kinds())
    if (k.schema().find(first)) k.schema().resolve_path(path, ov.origin);
  std::vector<std::string> keys;
  for (const auto& k : kinds())
    for (const auto& key : k.schema().keys())
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
  throw ConfigError({ov.origin, ov.path, 0, "", "is not a key of the workload config", config::suggest(first, keys)});
}

}  // namespace tpusim
