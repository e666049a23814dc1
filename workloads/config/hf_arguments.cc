// The Hugging Face / Accelerate names of a training workload (hf_arguments.h). Field lists: the
// `transformers.TrainingArguments` dataclass (v4.4x, src/transformers/training_args.py) and the keys
// `accelerate config` writes to default_config.yaml (accelerate/commands/config/config_args.py);
// both public. Each row says what the name becomes and why.
#include "workloads/config/hf_arguments.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <functional>

#include "base/config_error.h"
#include "config/suggest.h"

namespace tpusim {

using config::Entry;
using config::Node;

namespace {

// What every row does with the value it was given (nulls never reach it: null is "unset").
class Rewriter;
using Handler = std::function<void(Rewriter&, const Entry&)>;

struct Row {
  HfKey key;
  Handler handle;          // empty: by kind (Ignored: listed; Unsupported: exit 2 unless off)
  std::string suggestion;  // Unsupported: what to write instead
};

bool is_null(const Node& n) { return n.kind == Node::Kind::Null; }

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// A Trainer/Accelerate "off" value: false, "", "no", "none", 0, [] or {}.
bool is_off(const Node& n) {
  switch (n.kind) {
    case Node::Kind::Null: return true;
    case Node::Kind::Sequence: return n.items.empty();
    case Node::Kind::Map: return n.entries.empty();
    case Node::Kind::Scalar: {
      const std::string s = lower(n.scalar);
      return s.empty() || s == "false" || s == "no" || s == "none" || s == "0";
    }
  }
  return true;
}

std::optional<bool> as_bool(const Node& n) {
  if (n.kind != Node::Kind::Scalar) return std::nullopt;
  const std::string s = lower(n.scalar);
  if (s == "true" || s == "yes") return true;
  if (s == "false" || s == "no") return false;
  return std::nullopt;
}

std::optional<double> as_number(const Node& n) {
  if (n.kind != Node::Kind::Scalar || n.scalar.empty()) return std::nullopt;
  const char* first = n.scalar.data();
  const char* last = first + n.scalar.size();
  if (*first == '+') ++first;
  double v = 0;
  auto [p, ec] = std::from_chars(first, last, v);
  if (ec != std::errc() || p != last || !std::isfinite(v)) return std::nullopt;
  return v;
}

// How two values compare for "an alias and its tpusim key say different things": bools and numbers
// by value ("True" == "true", "3.0" == "3"), anything else as flow text.
std::string canonical(const Node& n) {
  if (auto b = as_bool(n)) return *b ? "true" : "false";
  if (auto x = as_number(n)) return fmt::format("{}", *x);
  return n.flow();
}

Node scalar_at(std::string text, const Node& at) {
  Node n;
  n.kind = Node::Kind::Scalar;
  n.scalar = std::move(text);
  n.file = at.file;
  n.line = at.line;
  return n;
}

// Trainer's option strings: "full_shard auto_wrap" or ["full_shard", "auto_wrap"] -> the words.
std::vector<std::string> option_words(const Node& n) {
  std::vector<std::string> out;
  auto split = [&](const std::string& s) {
    size_t i = 0;
    while (i < s.size()) {
      while (i < s.size() && (std::isspace(static_cast<unsigned char>(s[i])) || s[i] == ',')) ++i;
      size_t j = i;
      while (j < s.size() && !std::isspace(static_cast<unsigned char>(s[j])) && s[j] != ',') ++j;
      if (j > i) out.push_back(s.substr(i, j - i));
      i = j;
    }
  };
  if (n.kind == Node::Kind::Scalar) split(n.scalar);
  for (const Node& item : n.items)
    if (item.kind == Node::Kind::Scalar) split(item.scalar);
  return out;
}

const std::vector<Row>& rows();

class Rewriter {
 public:
  Rewriter(const Node& in, const std::vector<std::string>& native) : in_(in), native_(native) {}

  const Node* get(std::string_view key) const {
    const Node* n = in_.find(key);
    return n && !is_null(*n) ? n : nullptr;
  }

  // Writes tpusim key `native` = `value` on behalf of `as` (the name the user wrote, at `at`).
  void put(const std::string& native, Node value, const std::string& as, const Node& at) {
    value.file = at.file;
    value.line = at.line;
    for (auto& [k, src] : written_) {
      if (k != native) continue;
      const Node& old = *out_.find(native);
      if (canonical(old) == canonical(value)) {
        add_source(native, as);
        return;
      }
      const std::string where = src.file.empty() ? "" : fmt::format(" ({}:{})", src.file, src.line);
      throw ConfigError({at.file, as, at.line, at.text(),
                         fmt::format("sets {} = {}, but '{}'{} sets it to {}", native, value.text(), src.as, where, old.text()),
                         fmt::format("keep one of '{}' and '{}'", as, src.as)});
    }
    written_.push_back({native, Source{as, at.file, at.line}});
    add_source(native, as);
    out_.entries.push_back(Entry{native, at.line, std::move(value)});
  }
  void ignore(const std::string& name) { result_.ignored_keys.push_back(name); }
  [[noreturn]] void fail(const std::string& as, const Node& at, const std::string& rule, const std::string& suggestion = {}) {
    throw ConfigError({at.file, as, at.line, at.text(), rule, suggestion});
  }

  // An integer-valued HF number (Trainer types several as float: 3.0 epochs, 500.0 steps).
  long long integer(const Entry& e, const std::string& rule, const std::string& suggestion) {
    const auto x = as_number(e.value);
    if (!x || *x != std::floor(*x) || std::fabs(*x) > 1e15) fail(e.key, e.value, rule, suggestion);
    return static_cast<long long>(*x);
  }

  HfRewrite run(Node& root) {
    out_.kind = Node::Kind::Map;
    out_.file = root.file;
    out_.line = root.line;
    for (const Entry& e : root.entries) {
      const Row* row = nullptr;
      for (const Row& r : rows())
        if (r.key.name == e.key) row = &r;
      if (!row) {
        if (std::find(native_.begin(), native_.end(), e.key) == native_.end()) unknown(e);
        put(e.key, e.value, e.key, e.value);
        continue;
      }
      if (is_null(e.value)) continue;  // JSON null / YAML ~: unset
      if (row->handle) {
        row->handle(*this, e);
      } else if (row->key.kind == HfKeyKind::Unsupported && !is_off(e.value)) {
        fail(e.key, e.value, row->key.rule, row->suggestion);
      } else {
        ignore(e.key);
      }
    }
    // Keys the user wrote directly keep their own line; the rebuilt map replaces the old one.
    root.entries = std::move(out_.entries);
    std::sort(result_.ignored_keys.begin(), result_.ignored_keys.end());
    result_.ignored_keys.erase(std::unique(result_.ignored_keys.begin(), result_.ignored_keys.end()), result_.ignored_keys.end());
    return std::move(result_);
  }

 private:
  struct Source {
    std::string as, file;
    int line = 0;
  };
  void add_source(const std::string& native, const std::string& as) {
    auto& v = result_.written_as[native];
    if (std::find(v.begin(), v.end(), as) == v.end()) v.push_back(as);
  }
  [[noreturn]] void unknown(const Entry& e) {
    std::map<std::string, std::string> aliases;
    for (const Row& r : rows())
      aliases[r.key.name] = r.key.kind == HfKeyKind::Alias && r.key.target != r.key.name
                                ? r.key.origin + "'s name for " + r.key.target
                                : r.key.origin + " name";
    throw ConfigError({e.value.file, e.key, e.line, "", "unknown key at the top level",
                       config::suggest_with_aliases(e.key, native_, aliases)});
  }

  const Node& in_;
  const std::vector<std::string>& native_;
  Node out_;
  std::vector<std::pair<std::string, Source>> written_;
  HfRewrite result_;
};

// ---- handlers ----------------------------------------------------------------------------------

Handler rename(std::string native) {
  return [native](Rewriter& r, const Entry& e) { r.put(native, e.value, e.key, e.value); };
}

// A step count Trainer also accepts as a ratio of the total (a float < 1), which tpusim cannot resolve
// before the run.
Handler step_count(std::string native) {
  return [native](Rewriter& r, const Entry& e) {
    const long long v = r.integer(e, "must be a whole number of steps (a ratio of the total steps, a float < 1, "
                                     "is not supported)", "write the number of steps");
    if (v < 0) r.fail(e.key, e.value, "must be >= 0");
    r.put(native, scalar_at(std::to_string(v), e.value), e.key, e.value);
  };
}

// Trainer `bf16: true` makes Accelerate run with mixed_precision "bf16" (TrainingArguments sets
// ACCELERATE_MIXED_PRECISION); on a TPU Accelerate's AcceleratorState then sets XLA_USE_BF16=1, or
// XLA_DOWNCAST_BF16=1 when downcast_bf16 is set (accelerate/state.py; the Accelerate TPU docs).
// That is tpusim's `bf16` / `bf16_downcast` (docs/training.md, "Precision").
std::string bf16_precision(const Rewriter& r) {
  const Node* d = r.get("downcast_bf16");
  return d && !is_off(*d) ? "bf16_downcast" : "bf16";
}

bool bf16_requested(const Rewriter& r) {
  const Node* b = r.get("bf16");
  const Node* m = r.get("mixed_precision");
  return (b && as_bool(*b).value_or(false)) || (m && lower(m->scalar) == "bf16");
}

void handle_bf16(Rewriter& r, const Entry& e) {
  const auto b = as_bool(e.value);
  if (!b) r.fail(e.key, e.value, "must be true or false");
  if (*b) r.put("precision", scalar_at(bf16_precision(r), e.value), e.key, e.value);
}

void handle_mixed_precision(Rewriter& r, const Entry& e) {
  const std::string v = lower(e.value.scalar);
  if (e.value.kind == Node::Kind::Scalar && (v == "no" || v == "false" || v == "fp32")) {
    r.put("precision", scalar_at("fp32", e.value), e.key, e.value);
  } else if (e.value.kind == Node::Kind::Scalar && v == "bf16") {
    r.put("precision", scalar_at(bf16_precision(r), e.value), e.key, e.value);
  } else if (v == "fp16" || v == "fp8") {
    r.fail(e.key, e.value, "is not supported on TPU (the TPU's MXU and Accelerate's TPU path use bfloat16)",
           "use mixed_precision: bf16");
  } else {
    r.fail(e.key, e.value, "must be one of: no, fp32, bf16", "use mixed_precision: bf16 on TPU");
  }
}

void handle_downcast(Rewriter& r, const Entry& e) {
  if (is_off(e.value)) return r.ignore(e.key);
  // Accelerate sets XLA_DOWNCAST_BF16 only together with mixed precision bf16 (accelerate/state.py).
  if (!bf16_requested(r))
    r.fail(e.key, e.value, "takes effect only with mixed_precision: bf16 (or Trainer bf16: true): Accelerate "
           "sets XLA_DOWNCAST_BF16 only then", "add mixed_precision: bf16");
}

// gradient_checkpointing: true: each decoder (or encoder) layer recomputed from its input in the
// backward (transformers' per-layer torch.utils.checkpoint): remat_policy full.
void handle_gradient_checkpointing(Rewriter& r, const Entry& e) {
  const auto b = as_bool(e.value);
  if (!b) r.fail(e.key, e.value, "must be true or false");
  if (*b) r.put("remat_policy", scalar_at("full", e.value), e.key, e.value);
}

void handle_bf16_full_eval(Rewriter& r, const Entry& e) {
  const auto b = as_bool(e.value);
  if (!b) r.fail(e.key, e.value, "must be true or false");
  if (*b) r.put("eval_precision", scalar_at("bf16", e.value), e.key, e.value);
}

void handle_epochs(Rewriter& r, const Entry& e) {
  // Trainer: "max_steps: if set to a positive number, ... overrides num_train_epochs".
  if (const Node* m = r.get("max_steps"); m && as_number(*m).value_or(-1) > 0) return r.ignore(e.key);
  const long long v = r.integer(e, "must be a whole number of epochs (tpusim runs whole epochs)",
                                "use max_steps (optimizer steps) to stop inside an epoch");
  r.put("epochs", scalar_at(std::to_string(v), e.value), e.key, e.value);
}

// The schema's upper bound of `epochs`: with max_steps, Trainer runs as many epochs as the steps
// need (num_train_epochs = ceil(max_steps / steps per epoch)); tpusim's run stops at the step cap.
constexpr long long kEpochsUntilStepCap = 1 << 20;

void handle_max_steps(Rewriter& r, const Entry& e) {
  const long long v = r.integer(e, "must be an integer (-1: no cap)", "");
  if (v <= 0) return;  // Trainer: only a positive number caps the run
  // Trainer counts optimizer steps, tpusim's `steps` training micro-steps: one optimizer step is
  // gradient_accumulation_steps micro-steps.
  long long accumulation = 1;
  if (const Node* g = r.get("gradient_accumulation_steps")) accumulation = std::max<long long>(1, std::llround(as_number(*g).value_or(1)));
  r.put("steps", scalar_at(std::to_string(v * accumulation), e.value), e.key, e.value);
  if (!r.get("epochs")) r.put("epochs", scalar_at(std::to_string(kEpochsUntilStepCap), e.value), e.key, e.value);
}

void handle_padding(Rewriter& r, const Entry& e) {
  const long long v = r.integer(e, "must be an integer >= 1", "");
  if (v < 1) r.fail(e.key, e.value, "must be an integer >= 1");
  r.put("padding", scalar_at("multiple_of:" + std::to_string(v), e.value), e.key, e.value);
}

struct OptimName {
  const char* hf;
  const char* tpusim;
};
// Trainer `optim` values (transformers OptimizerNames) and Accelerate/DeepSpeed LAMB spellings.
constexpr OptimName kOptims[] = {
    {"adamw_torch", "adamw"},   {"adamw_hf", "adamw"},  {"adamw_torch_fused", "adamw"}, {"adamw_torch_xla", "adamw"},
    {"adamw_apex_fused", "adamw"}, {"adafactor", "adafactor"}, {"sgd", "sgd"},          {"lamb", "lamb"},
    {"Lamb", "lamb"},           {"FusedLamb", "lamb"},  {"fused_lamb", "lamb"},
};

void handle_optim(Rewriter& r, const Entry& e) {
  for (const auto& o : kOptims)
    if (e.value.kind == Node::Kind::Scalar && e.value.scalar == o.hf) return r.put("optimizer", scalar_at(o.tpusim, e.value), e.key, e.value);
  std::vector<std::string> names;
  for (const auto& o : kOptims) names.push_back(o.hf);
  const auto near = config::closest(e.value.scalar, names);
  r.fail(e.key, e.value, "is not an optimizer tpusim models; supported: " + config::join(names),
         near ? "did you mean '" + *near + "'?" : "");
}

void handle_adafactor(Rewriter& r, const Entry& e) {
  const auto b = as_bool(e.value);
  if (!b) r.fail(e.key, e.value, "must be true or false");
  if (*b) r.put("optimizer", scalar_at("adafactor", e.value), e.key, e.value);
}

// A mapping written inline or as the path of a JSON/YAML file (Trainer takes both for fsdp_config and
// accelerator_config), relative to the file that names it.
Node mapping_or_file(Rewriter& r, const Entry& e) {
  if (e.value.is_map()) return e.value;
  if (e.value.kind != Node::Kind::Scalar) r.fail(e.key, e.value, "must be a mapping or the path of a JSON file");
  std::filesystem::path p(e.value.scalar);
  if (p.is_relative() && !e.value.file.empty() && e.value.file != "--set")
    p = std::filesystem::path(e.value.file).parent_path() / p;
  Node m;
  try {
    m = config::parse_yaml(config::read_file(p.string()), p.string());
  } catch (const ConfigError& err) {
    r.fail(e.key, e.value, std::string("names a file that cannot be read: ") + err.what(), "write the mapping inline");
  }
  if (!m.is_map()) r.fail(e.key, e.value, "names a file that does not hold a mapping");
  return m;
}

bool fsdp_on(const Rewriter& r) {
  const Node* f = r.get("fsdp");
  if (!f) return false;
  if (auto b = as_bool(*f)) return *b;
  return !option_words(*f).empty();
}

// Trainer fsdp + fsdp_config on TPU: XlaFullyShardedDataParallel. fsdp_config keys other than xla,
// the wrap policy and the checkpointing (the GPU wrapper's knobs, checkpoint formats, the
// xla_fsdp_settings kwargs) change nothing tpusim models and are listed as ignored.
void handle_fsdp(Rewriter& r, const Entry& e) {
  if (!fsdp_on(r)) return;  // "" / [] / false: off
  for (const std::string& w : option_words(e.value)) {
    if (w == "true" || w == "True" || w == "full_shard" || w == "auto_wrap") continue;
    r.fail(e.key, e.value, "option '" + w + "' is not modelled: tpusim's FSDP is torch_xla's full sharding "
           "(options full_shard, auto_wrap)", "use fsdp: \"full_shard auto_wrap\"");
  }
  Node cfg;
  cfg.kind = Node::Kind::Map;
  const Entry* cfg_entry = nullptr;
  Entry cfg_holder;
  if (const Node* c = r.get("fsdp_config")) {
    cfg_holder = Entry{"fsdp_config", c->line, *c};
    cfg = mapping_or_file(r, cfg_holder);
    cfg_entry = &cfg_holder;
  }
  // Trainer strips an "fsdp_" prefix from fsdp_config keys (Accelerate-style names).
  auto key_of = [](const std::string& k) { return k.rfind("fsdp_", 0) == 0 ? k.substr(5) : k; };
  const Node* xla = nullptr;
  for (const Entry& x : cfg.entries)
    if (key_of(x.key) == "xla") xla = &x.value;
  if (!xla || !as_bool(*xla).value_or(false)) {
    const Node& at = cfg_entry ? (xla ? *xla : cfg_entry->value) : e.value;
    r.fail(cfg_entry ? "fsdp_config.xla" : e.key, at,
           "FSDP on a TPU needs fsdp_config.xla: true (Trainer wraps the model in torch_xla's "
           "XlaFullyShardedDataParallel only then)", "add fsdp_config: {xla: true}");
  }
  r.put("sharding", scalar_at("fsdp", e.value), e.key, e.value);
  // The deprecated top-level spellings, which Trainer copies into fsdp_config.
  if (const Node* m = r.get("fsdp_min_num_params"); m && !is_off(*m)) r.put("fsdp_min_num_params", *m, "fsdp_min_num_params", *m);
  if (const Node* t = r.get("fsdp_transformer_layer_cls_to_wrap"); t && !is_off(*t)) {
    Node list = *t;
    if (t->kind == Node::Kind::Scalar) list = Node{Node::Kind::Sequence, "", {*t}, {}, t->file, t->line};
    r.put("fsdp_wrap_layer_classes", list, "fsdp_transformer_layer_cls_to_wrap", *t);
  }
  for (const Entry& x : cfg.entries) {
    const std::string k = key_of(x.key), as = "fsdp_config." + x.key;
    if (is_null(x.value) || k == "xla") continue;
    if (k == "xla_fsdp_grad_ckpt") {
      r.put("fsdp_grad_ckpt", x.value, as, x.value);
    } else if (k == "min_num_params") {
      if (!is_off(x.value)) r.put("fsdp_min_num_params", x.value, as, x.value);  // 0: Trainer's "no size policy"
    } else if (k == "transformer_layer_cls_to_wrap") {
      Node list = x.value;
      if (x.value.kind == Node::Kind::Scalar) list = Node{Node::Kind::Sequence, "", {x.value}, {}, x.value.file, x.value.line};
      r.put("fsdp_wrap_layer_classes", list, as, x.value);
    } else if (k == "xla_fsdp_v2") {
      if (!is_off(x.value)) r.put("spmd", x.value, as, x.value);  // FSDPv2: torch_xla's SPMD mode, fsdp over the mesh
    } else {
      r.ignore(as);
    }
  }
}

// fsdp_config and the deprecated top-level FSDP keys: read by handle_fsdp when FSDP is on.
void handle_fsdp_part(Rewriter& r, const Entry& e) {
  // Without Trainer's `fsdp` key, `fsdp_min_num_params` is tpusim's own key of that name (it goes with
  // sharding: fsdp, and the schema checks it); with it, Trainer's deprecated spelling, read by handle_fsdp.
  if (e.key == "fsdp_min_num_params" && !r.get("fsdp")) return r.put(e.key, e.value, e.key, e.value);
  if (!fsdp_on(r) && !is_off(e.value)) r.ignore(e.key);
}

void handle_accelerator_config(Rewriter& r, const Entry& e) {
  const Node m = mapping_or_file(r, e);
  for (const Entry& x : m.entries) {
    if (is_null(x.value)) continue;
    if (x.key == "split_batches" || x.key == "even_batches") r.put(x.key, x.value, "accelerator_config." + x.key, x.value);
    else r.ignore("accelerator_config." + x.key);
  }
}

// Trainer `debug` is a string or a list of DebugOption; Accelerate's `debug` is a bool.
void handle_debug(Rewriter& r, const Entry& e) {
  if (const auto b = as_bool(e.value)) {
    if (*b)
      r.fail(e.key, e.value, "Accelerate's debug mode checks tensor shapes on every process before each collective "
             "(extra host work and syncs), which tpusim does not model", "use debug: false");
    return r.ignore(e.key);
  }
  bool other = false;
  for (const std::string& w : option_words(e.value)) {
    if (w == "tpu_metrics_debug") r.put("tpu_metrics_debug", scalar_at("true", e.value), e.key, e.value);
    else other = true;  // underflow_overflow: a numerics check, listed as ignored
  }
  if (other) r.ignore(e.key);
}

std::string strategy(const Rewriter& r, const char* key) {
  const Node* n = r.get(key);
  return n && n->kind == Node::Kind::Scalar ? lower(n->scalar) : "";
}

// logging_strategy "no": no loss syncs (logging_steps 0). "epoch": one sync per epoch, where the run
// already waits for the device (the epoch's last step and the evaluation): no per-step syncs, also
// logging_steps 0. "steps": every logging_steps optimizer steps (logging_steps' own row).
void handle_logging_strategy(Rewriter& r, const Entry& e) {
  const std::string s = lower(e.value.scalar);
  if (s == "no" || s == "epoch") return r.put("logging_steps", scalar_at("0", e.value), e.key, e.value);
  if (s != "steps") r.fail(e.key, e.value, "must be one of: no, steps, epoch");
}

void handle_logging_steps(Rewriter& r, const Entry& e) {
  const std::string s = strategy(r, "logging_strategy");
  if (s == "no" || s == "epoch") return r.ignore(e.key);  // the strategy decides
  step_count("logging_steps")(r, e);
}

void handle_eval_strategy(Rewriter& r, const Entry& e) {
  r.put("eval_strategy", scalar_at(lower(e.value.scalar), e.value), e.key, e.value);
  // Trainer: eval_steps "will default to the same value as logging_steps if not set".
  if (lower(e.value.scalar) == "steps" && !r.get("eval_steps"))
    if (const Node* l = r.get("logging_steps"); l && strategy(r, "logging_strategy") != "no")
      step_count("eval_steps")(r, Entry{"logging_steps", l->line, *l});
}

void handle_distributed_type(Rewriter& r, const Entry& e) {
  const std::string s = lower(e.value.scalar);
  if (s == "xla" || s == "tpu") return r.ignore(e.key);  // what tpusim models
  r.fail(e.key, e.value, "is not a TPU setup: tpusim models Accelerate's XLA (TPU) backend", "use distributed_type: XLA");
}

void handle_dynamo(Rewriter& r, const Entry& e) {
  const Node* b = e.value.find("dynamo_backend");
  if (b && !is_off(*b)) r.fail(e.key + ".dynamo_backend", *b, "torch.compile (TorchDynamo) is not modelled", "use dynamo_backend: NO");
  r.ignore(e.key);
}

Row alias(std::string name, std::string target, std::string rule, std::string origin, Handler h) {
  return Row{HfKey{std::move(name), HfKeyKind::Alias, std::move(target), std::move(rule), std::move(origin)}, std::move(h), {}};
}
Row ignored(std::string name, std::string why, std::string origin = "Trainer") {
  return Row{HfKey{std::move(name), HfKeyKind::Ignored, "", std::move(why), std::move(origin)}, {}, {}};
}
Row unsupported(std::string name, std::string why, std::string suggestion, std::string origin = "Trainer") {
  return Row{HfKey{std::move(name), HfKeyKind::Unsupported, "", std::move(why), std::move(origin)}, {}, std::move(suggestion)};
}

const std::vector<Row>& rows() {
  static const std::vector<Row> r = [] {
    const std::string T = "Trainer", A = "Accelerate", TA = "Trainer, Accelerate";
    const std::string no_time = "no effect on simulated time";
    const std::string io = "output, logging or checkpoint files: " + no_time;
    const std::string hub = "Hugging Face Hub upload: " + no_time;
    const std::string math = "optimizer or loss arithmetic, not its cost: " + no_time;
    const std::string launch = "launcher / cluster plumbing: " + no_time;
    const std::string gpu = "a GPU / CPU-process setting, unused on TPU";
    std::vector<Row> v = {
        // Aliases.
        alias("per_device_train_batch_size", "per_device_batch_size", "renamed", T, rename("per_device_batch_size")),
        alias("per_gpu_train_batch_size", "per_device_batch_size", "renamed (Trainer's deprecated name)", T, rename("per_device_batch_size")),
        alias("per_device_eval_batch_size", "eval_per_device_batch_size", "renamed", T, rename("eval_per_device_batch_size")),
        alias("per_gpu_eval_batch_size", "eval_per_device_batch_size", "renamed (Trainer's deprecated name)", T, rename("eval_per_device_batch_size")),
        alias("gradient_accumulation_steps", "gradient_accumulation_steps", "same name", T, rename("gradient_accumulation_steps")),
        alias("num_train_epochs", "epochs", "a whole number (3.0 is 3; a fraction is an error: use max_steps); ignored "
              "when max_steps > 0, as in Trainer", T, handle_epochs),
        alias("max_steps", "steps, epochs", "Trainer counts optimizer steps: steps = max_steps x gradient_accumulation_steps; "
              "-1 (or any value <= 0) is no cap; a cap also lifts the epoch limit (epochs: 1048576, the run ends at the "
              "cap) unless `epochs` is written", T, handle_max_steps),
        alias("bf16", "precision", "true: `bf16` (Accelerate mixed_precision bf16 = XLA_USE_BF16=1 on TPU), "
              "`bf16_downcast` with downcast_bf16; false: nothing", T, handle_bf16),
        alias("mixed_precision", "precision", "`bf16` -> `bf16` (or `bf16_downcast` with downcast_bf16), `no`/`fp32` -> "
              "`fp32`; `fp16`/`fp8` is an error (not on TPU)", A, handle_mixed_precision),
        alias("downcast_bf16", "precision", "yes/true with bf16: `bf16_downcast` (XLA_DOWNCAST_BF16=1); without bf16 "
              "an error (Accelerate ignores it)", A, handle_downcast),
        alias("bf16_full_eval", "eval_precision", "true: `bf16`", T, handle_bf16_full_eval),
        alias("gradient_checkpointing", "remat_policy", "true: `full` (each layer recomputed from its input)", T,
              handle_gradient_checkpointing),
        alias("dataloader_drop_last", "drop_last", "renamed", T, rename("drop_last")),
        alias("max_source_length", "max_length", "renamed (run_summarization / run_translation's source truncation)",
              "run_summarization", rename("max_length")),
        alias("pad_to_multiple_of", "padding", "N: `multiple_of:N` (DataCollatorWithPadding)", "DataCollator", handle_padding),
        alias("optim", "optimizer", "adamw_torch, adamw_hf, adamw_torch_fused, adamw_torch_xla, adamw_apex_fused: "
              "`adamw`; adafactor: `adafactor`; sgd: `sgd`; lamb, Lamb, FusedLamb, fused_lamb: `lamb`; others an error", T, handle_optim),
        alias("adafactor", "optimizer", "true: `adafactor` (Trainer's deprecated flag)", T, handle_adafactor),
        alias("fsdp", "sharding, fsdp_grad_ckpt, fsdp_min_num_params, fsdp_wrap_layer_classes, spmd",
              "full_shard / auto_wrap (a string, words separated by spaces, or a list) with fsdp_config.xla: true -> "
              "`sharding: fsdp`; without xla an error; \"\" / [] off. From fsdp_config (inline or a JSON file; "
              "an `fsdp_` prefix is dropped): xla_fsdp_grad_ckpt -> fsdp_grad_ckpt, min_num_params -> "
              "fsdp_min_num_params, transformer_layer_cls_to_wrap -> fsdp_wrap_layer_classes, xla_fsdp_v2 -> `spmd` "
              "(FSDPv2: torch_xla's SPMD mode); other fsdp_config keys (xla_fsdp_settings, backward_prefetch, ...) ignored", T, handle_fsdp),
        alias("fsdp_config", "(see fsdp)", "read with fsdp; ignored when fsdp is off", T, handle_fsdp_part),
        alias("fsdp_min_num_params", "fsdp_min_num_params", "with Trainer's `fsdp` key: its deprecated top-level "
              "spelling, read with fsdp; without it: tpusim's own key", T, handle_fsdp_part),
        alias("fsdp_transformer_layer_cls_to_wrap", "fsdp_wrap_layer_classes", "Trainer's deprecated top-level "
              "spelling; read with fsdp", T, handle_fsdp_part),
        alias("auto_find_batch_size", "auto_find_batch_size", "same name", T, rename("auto_find_batch_size")),
        alias("eval_strategy", "eval_strategy", "same name; `steps` without eval_steps takes logging_steps, as in Trainer", T, handle_eval_strategy),
        alias("evaluation_strategy", "eval_strategy", "Trainer's older name", T, handle_eval_strategy),
        alias("eval_steps", "eval_steps", "same name; a whole number (a ratio < 1 is an error)", T, step_count("eval_steps")),
        alias("logging_steps", "logging_steps", "same name; a whole number; ignored when logging_strategy is no or epoch", T, handle_logging_steps),
        alias("logging_strategy", "logging_steps", "`no` and `epoch`: logging_steps 0 (one sync per epoch falls where the "
              "run already waits for the device: the epoch's end and evaluation); `steps`: logging_steps decides", T, handle_logging_strategy),
        alias("split_batches", "split_batches", "same name (also in accelerator_config)", TA, rename("split_batches")),
        alias("even_batches", "even_batches", "same name (also in accelerator_config)", A, rename("even_batches")),
        alias("accelerator_config", "split_batches, even_batches", "a mapping or a JSON file: split_batches and "
              "even_batches as the same names; its other keys ignored", T, handle_accelerator_config),
        alias("debug", "tpu_metrics_debug", "Trainer (a string or list): tpu_metrics_debug -> `tpu_metrics_debug: true`, "
              "other options ignored; Accelerate (a bool): true is an error (per-collective shape checks)", TA, handle_debug),
        alias("tpu_metrics_debug", "tpu_metrics_debug", "same name (Trainer's deprecated flag)", T, rename("tpu_metrics_debug")),
        alias("seed", "seed", "same name", T, rename("seed")),
        alias("num_processes", "num_processes", "same name; must equal the slice's devices", A, rename("num_processes")),
        alias("distributed_type", "", "XLA (or TPU): accepted and listed as ignored; anything else an error", A, handle_distributed_type),
        alias("dynamo_config", "", "dynamo_backend other than NO is an error (torch.compile not modelled); else ignored", A, handle_dynamo),
        // Unsupported when on: they change time in ways tpusim does not model.
        unsupported("fp16", "float16 is not supported on TPU (no fp16 MXU path; Trainer and Accelerate use bfloat16 there)", "use bf16: true"),
        unsupported("fp16_full_eval", "float16 is not supported on TPU", "use bf16_full_eval: true"),
        unsupported("tf32", "TF32 is an NVIDIA Ampere setting (Trainer rejects it elsewhere)", "remove it"),
        unsupported("use_cpu", "runs on the CPU, not the TPU", "remove it", TA),
        unsupported("no_cuda", "runs on the CPU, not the TPU (Trainer's older use_cpu)", "remove it"),
        unsupported("use_mps_device", "an Apple GPU setting", "remove it"),
        unsupported("use_ipex", "Intel extension for CPU/XPU, not TPU", "remove it"),
        unsupported("jit_mode_eval", "TorchScript evaluation is not modelled", "remove it"),
        unsupported("torch_compile", "torch.compile is not modelled (PyTorch/XLA traces lazily)", "remove it"),
        unsupported("torch_compile_backend", "implies torch_compile, which is not modelled", "remove it"),
        unsupported("torch_compile_mode", "implies torch_compile, which is not modelled", "remove it"),
        unsupported("torchdynamo", "TorchDynamo (torch.compile) is not modelled", "remove it"),
        unsupported("deepspeed", "DeepSpeed does not run on TPU", "use fsdp with fsdp_config.xla: true"),
        unsupported("deepspeed_config", "DeepSpeed does not run on TPU", "use fsdp with fsdp_config.xla: true", A),
        unsupported("megatron_lm_config", "Megatron-LM parallelism is not modelled", "remove it", A),
        unsupported("group_by_length", "length-grouped sampling changes every batch's padding; tpusim samples at random",
                    "remove it (padding: longest models dynamic padding)"),
        unsupported("eval_accumulation_steps", "moving predictions to the host every N evaluation steps is not modelled", "remove it"),
        unsupported("eval_delay", "delayed first evaluation is not modelled", "remove it"),
        unsupported("eval_on_start", "an evaluation before training is not modelled", "remove it"),
        unsupported("use_liger_kernel", "Liger kernels are Triton (GPU) kernels", "remove it"),
        // Ignored: no effect on simulated time.
        ignored("output_dir", io), ignored("overwrite_output_dir", io), ignored("logging_dir", io),
        ignored("logging_first_step", "one extra loss sync at the first step: negligible"),
        ignored("logging_nan_inf_filter", "skipped on XLA by Trainer"),
        ignored("log_level", io), ignored("log_level_replica", io), ignored("log_on_each_node", io),
        ignored("save_strategy", io + " (checkpoint writes are not modelled)"), ignored("save_steps", io),
        ignored("save_total_limit", io), ignored("save_safetensors", io), ignored("save_on_each_node", io),
        ignored("save_only_model", io), ignored("restore_callback_states_from_checkpoint", io),
        ignored("report_to", io), ignored("run_name", io), ignored("disable_tqdm", io),
        ignored("push_to_hub", hub), ignored("push_to_hub_model_id", hub), ignored("push_to_hub_organization", hub),
        ignored("push_to_hub_token", hub), ignored("hub_model_id", hub), ignored("hub_strategy", hub),
        ignored("hub_token", hub), ignored("hub_private_repo", hub), ignored("hub_always_push", hub),
        ignored("do_train", "a script flag: " + no_time), ignored("do_eval", "a script flag: " + no_time),
        ignored("do_predict", "a script flag: " + no_time), ignored("prediction_loss_only", "what evaluation returns: " + no_time),
        ignored("learning_rate", math), ignored("weight_decay", math), ignored("adam_beta1", math),
        ignored("adam_beta2", math), ignored("adam_epsilon", math), ignored("max_grad_norm", math),
        ignored("lr_scheduler_type", math), ignored("lr_scheduler_kwargs", math), ignored("warmup_ratio", math),
        ignored("warmup_steps", math), ignored("label_smoothing_factor", math), ignored("optim_args", math),
        ignored("optim_target_modules", "GaLore target modules (GaLore optimizers are rejected by optim)"),
        ignored("neftune_noise_alpha", "embedding noise: an element-wise op, negligible"),
        ignored("data_seed", "the sampler's seed: same batch sizes, " + no_time),
        ignored("full_determinism", "CUDA determinism flags, unused on TPU"),
        ignored("local_rank", launch), ignored("tpu_num_cores", launch + " (the slice's devices decide)"),
        ignored("ddp_backend", gpu), ignored("ddp_find_unused_parameters", gpu), ignored("ddp_bucket_cap_mb", gpu),
        ignored("ddp_broadcast_buffers", gpu), ignored("ddp_timeout", launch), ignored("fp16_opt_level", "fp16 only"),
        ignored("half_precision_backend", "fp16/bf16 backend choice: Accelerate on TPU"), ignored("fp16_backend", "fp16 only"),
        ignored("torch_empty_cache_steps", "a CUDA cache setting"),
        ignored("dataloader_num_workers", "host input workers: tpusim models the input pipeline from the host's CPUs"),
        ignored("dataloader_prefetch_factor", "host input workers' prefetch"), ignored("dataloader_pin_memory", gpu),
        ignored("dataloader_persistent_workers", "host input workers' lifetime"),
        ignored("past_index", "model-specific (Transformer-XL mems)"), ignored("remove_unused_columns", "dataset columns"),
        ignored("label_names", "dataset columns"), ignored("length_column_name", "group_by_length only"),
        ignored("load_best_model_at_end", io), ignored("metric_for_best_model", io), ignored("greater_is_better", io),
        ignored("ignore_data_skip", "checkpoint resume"), ignored("resume_from_checkpoint", "checkpoint resume"),
        ignored("skip_memory_metrics", "Trainer's own memory tracker"), ignored("use_legacy_prediction_loop", no_time),
        ignored("include_inputs_for_metrics", "what evaluation returns"), ignored("include_for_metrics", "what evaluation returns"),
        ignored("eval_do_concat_batches", "what evaluation returns"), ignored("batch_eval_metrics", "metric computation"),
        ignored("eval_use_gather_object", "metric gathering"), ignored("include_tokens_per_second", "a reported figure"),
        ignored("include_num_input_tokens_seen", "a reported figure"), ignored("mp_parameters", "SageMaker only"),
        ignored("ray_scope", "hyperparameter search"), ignored("gradient_checkpointing_kwargs", "gradient_checkpointing only"),
        ignored("dispatch_batches", "which process reads the data (Accelerate): same batches", TA),
        // Accelerate's config file.
        ignored("compute_environment", launch, A), ignored("machine_rank", launch, A), ignored("num_machines", launch + " (the slice's hosts decide)", A),
        ignored("main_process_ip", launch, A), ignored("main_process_port", launch, A),
        ignored("main_training_function", launch, A), ignored("rdzv_backend", launch, A), ignored("same_network", launch, A),
        ignored("tpu_env", launch, A), ignored("tpu_use_cluster", launch, A), ignored("tpu_use_sudo", launch, A),
        ignored("tpu_name", launch, A), ignored("tpu_zone", launch, A), ignored("commands", launch, A),
        ignored("command_file", launch, A), ignored("gpu_ids", gpu, A), ignored("enable_cpu_affinity", gpu, A),
        ignored("ipex_config", "Intel CPU settings", A), ignored("mpirun_config", "CPU MPI settings", A),
    };
    return v;
  }();
  return r;
}

}  // namespace

const std::vector<HfKey>& hf_keys() {
  static const std::vector<HfKey> k = [] {
    std::vector<HfKey> v;
    for (const Row& r : rows()) v.push_back(r.key);
    return v;
  }();
  return k;
}

const HfKey* find_hf_key(const std::string& name) {
  for (const HfKey& k : hf_keys())
    if (k.name == name) return &k;
  return nullptr;
}

HfRewrite rewrite_hf_arguments(Node& root, const std::vector<std::string>& native_keys) {
  if (!root.is_map()) return {};
  const Node in = root;
  return Rewriter(in, native_keys).run(root);
}

void apply_training_args(Node& root, const Node& args, const std::vector<std::string>& native_keys) {
  if (!args.is_map())
    throw ConfigError({args.file, "", args.line, "", "--training-args: the file must be a mapping of argument names to values",
                       "pass a training_args.json or an Accelerate default_config.yaml"});
  // Which tpusim keys each side sets, and under which names the workload set them.
  Node w = root, a = args;
  const HfRewrite from_workload = rewrite_hf_arguments(w, native_keys);
  rewrite_hf_arguments(a, native_keys);
  for (const Entry& e : a.entries) {
    root.erase(e.key);
    if (auto it = from_workload.written_as.find(e.key); it != from_workload.written_as.end())
      for (const std::string& as : it->second) root.erase(as.substr(0, as.find('.')));
  }
  for (const Entry& e : args.entries) root.set(e.key, e.value, e.line);
}

std::string hf_arguments_markdown() {
  auto cell = [](std::string s) {
    std::string out;
    for (char c : s) out += c == '|' ? std::string("\\|") : std::string(1, c == '\n' ? ' ' : c);
    return out;
  };
  std::string md = "### Hugging Face / Accelerate names, kind: training\n\n"
                   "A training workload (and `tpusim run --training-args FILE`) also takes the names of "
                   "`transformers.TrainingArguments` (v4.4x) and of Accelerate's config file. An *alias* is "
                   "rewritten to the tpusim key shown (errors name the key as written); an *ignored* key has no "
                   "effect on simulated time and is listed in report.json `workload.ignored_keys`; an "
                   "*unsupported* key changes time in a way tpusim does not model and is an error unless it holds "
                   "its off value (false, null, \"\", [], `no`). A JSON null is unset. An alias and a tpusim key (or "
                   "two aliases) setting one key to different values is an error.\n\n"
                   "| Name | From | Kind | tpusim key | Rule |\n|---|---|---|---|---|\n";
  for (const HfKey& k : hf_keys()) {
    const char* kind = k.kind == HfKeyKind::Alias ? "alias" : k.kind == HfKeyKind::Ignored ? "ignored" : "unsupported";
    std::string target;  // appended, not chained: GCC 12 warns falsely (-Wrestrict) on "`" + x + "`"
    if (!k.target.empty()) target.append("`").append(cell(k.target)).append("`");
    md += fmt::format("| `{}` | {} | {} | {} | {} |\n", k.name, k.origin, kind, target, cell(k.rule));
  }
  return md + "\n";
}

}  // namespace tpusim
