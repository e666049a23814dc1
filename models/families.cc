#include "models/families.h"

#include <algorithm>
#include <stdexcept>

#include "config/suggest.h"
#include "models/bart.h"
#include "models/bert.h"
#include "models/encoders.h"
#include "models/gpt2.h"
#include "models/llama.h"
#include "models/t5.h"
#include "models/vit.h"

namespace tpusim::models {

const std::vector<const Family*>& families() {
  static const std::vector<const Family*> f = {&bert_family(), &roberta_family(), &distilbert_family(),
                                               &albert_family(), &gpt2_family(), &llama_family(),
                                               &mistral_family(), &gemma_family(), &gpt3_family(), &t5_family(),
                                               &bart_family(),    &vit_family()};
  return f;
}

const Family& family(ModelFamily id) {
  for (const Family* f : families())
    if (f->id == id) return *f;
  throw std::logic_error("model family " + std::to_string(int(id)) + " is not registered");
}

const std::vector<ModelArch>& model_presets() {
  static const std::vector<ModelArch> presets = [] {
    std::vector<ModelArch> v;
    for (const Family* f : families())
      for (const ModelArch& p : f->presets) v.push_back(with_derived_fields(p));
    return v;
  }();
  return presets;
}

std::vector<std::string> model_preset_names() {
  std::vector<std::string> names;
  for (const auto& p : model_presets()) names.push_back(p.name);
  return names;
}

std::vector<std::string> preset_names_with_head(Head h) {
  std::vector<std::string> names;
  for (const auto& p : model_presets()) {
    const auto& heads = family(p.family).heads;
    if (std::find(heads.begin(), heads.end(), h) != heads.end()) names.push_back(p.name);
  }
  return names;
}

std::optional<ModelArch> find_model_preset(const std::string& name) {
  for (const auto& p : model_presets()) {
    if (p.name == name) return p;
    for (const std::string& org : family(p.family).organisations)
      if (name == org + "/" + p.name) return p;
  }
  return std::nullopt;
}

ModelArch find_preset(const std::string& name) {
  if (auto e = unsimulated_model_error(name)) throw ConfigError(*e);
  return *find_model_preset(name);
}

ModelArch custom_arch() {
  return {.name = "custom", .family = ModelFamily::kBert, .counted_class = "BertModel", .max_position = 512,
          .type_vocab = 2, .pooler = true};
}

ModelArch with_overrides(ModelArch a, const ArchOverrides& o) {
  const bool own_embedding_width = a.embedding_size != a.hidden;
  if (o.layers && a.decoder_layers) a.decoder_layers = o.layers;
  if (o.layers) a.layers = o.layers;
  if (o.hidden) a.hidden = o.hidden;
  if (o.heads) {
    const int64_t group = a.kv_heads ? a.heads / a.kv_heads : 1;  // query heads per key/value head
    a.kv_heads = std::max<int64_t>(1, o.heads / group);
    a.heads = o.heads;
  }
  if (o.intermediate) a.intermediate = o.intermediate;
  if (o.vocab) a.vocab = o.vocab;
  if (o.max_position) a.max_position = o.max_position;
  if (!own_embedding_width) a.embedding_size = a.hidden;
  if (o.hidden || o.heads || !family(a.family).own_head_dim) a.head_dim = a.heads ? a.hidden / a.heads : 0;
  if (o.kv_heads) a.kv_heads = o.kv_heads;
  if (o.head_dim) a.head_dim = o.head_dim;
  if (o.activation) a.activation = *o.activation;
  if (o.tied_embeddings) a.tied_embeddings = *o.tied_embeddings;
  return a;
}

std::string family_name(ModelFamily f) { return family(f).name; }

bool family_simulated(ModelFamily f) { return bool(family(f).build); }

std::vector<std::string> simulated_family_names() {
  std::vector<std::string> names;
  for (const Family* f : families())
    if (f->build) names.push_back(f->name);
  return names;
}

std::optional<ConfigErrorInfo> unsimulated_model_error(const std::string& name) {
  if (const auto p = find_model_preset(name)) {
    if (family_simulated(p->family)) return std::nullopt;
    std::vector<std::string> simulated;
    for (const auto& q : model_presets())
      if (family_simulated(q.family)) simulated.push_back(q.name);
    return ConfigErrorInfo{"", "model", 0, name,
                           "(family " + family_name(p->family) + ") is listed by `tpusim models` but not simulated "
                           "yet; simulated families: " + config::join(simulated_family_names()),
                           "simulated presets: " + config::join(simulated)};
  }
  const auto names = model_preset_names();
  const auto near = config::closest(name, names);
  return ConfigErrorInfo{"", "model", 0, name, "is not a known model preset (known: " + config::join(names) + ")",
                         near ? "did you mean '" + *near + "'?" : ""};
}

uint64_t model_parameters(const ModelArch& a) { return family(a.family).parameters(a); }

std::string model_presets_markdown() {
  std::string md = "| Name | Family | Counted class | Parameters | Layers | Hidden | Heads (KV) | Vocab | Simulated |\n"
                   "|---|---|---|---:|---|---:|---|---:|---|\n";
  for (const auto& p : model_presets()) {
    const std::string layers = std::to_string(p.layers) + (p.decoder_layers ? " + " + std::to_string(p.decoder_layers) : "") +
                               (p.shared_layers ? " (shared)" : "");
    const std::string heads = std::to_string(p.heads) + (p.kv_heads != p.heads ? " (" + std::to_string(p.kv_heads) + ")" : "");
    md += "| `" + p.name + "` | " + family_name(p.family) + " | " + p.counted_class + " | " +
          with_thousands(model_parameters(p)) + " | " + layers + " | " + std::to_string(p.hidden) + " | " + heads +
          " | " + (p.vocab ? std::to_string(p.vocab) : "-") + " | " + (family_simulated(p.family) ? "yes" : "no") + " |\n";
  }
  return md;
}

std::unique_ptr<Model> make_model(const ModelArch& arch, const HeadOptions& head) {
  return std::make_unique<TransformerModel>(family(arch.family), arch, head);
}

std::unique_ptr<Model> make_model(const ModelArch& arch) {
  return make_model(arch, {.head = family(arch.family).heads.front()});
}

}  // namespace tpusim::models
