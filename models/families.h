// The one registry of model families: name, presets, heads, module-class table and graph builder of
// each. The model factory (make_model), a training workload's schema (its presets, tasks and module
// classes) and `tpusim models` read it; a family is added by writing its file (the presets, the table
// and a builder on the shared stack of models/stack.h) and listing it in families().
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/config_error.h"
#include "models/family.h"

namespace tpusim::models {

// Every family, in the order presets are listed.
const std::vector<const Family*>& families();
const Family& family(ModelFamily f);

// All presets, in a stable order (family by family); their names.
const std::vector<ModelArch>& model_presets();
std::vector<std::string> model_preset_names();
// The presets whose family has head `h`, in that order.
std::vector<std::string> preset_names_with_head(Head h);

// The preset named `name`: its hub name, or the short name under the organisation the hub moved it
// to ("openai-community/gpt2" is gpt2, "google-bert/bert-base-uncased" is bert-base-uncased).
std::optional<ModelArch> find_model_preset(const std::string& name);
// The same, or ConfigError (yaml_path "model") by unsimulated_model_error's rule.
ModelArch find_preset(const std::string& name);

// `model: custom` with no model_config yet: a BERT architecture (512 positions, 2 token types, a pooler)
// whose sizes the overrides give.
ModelArch custom_arch();

// A workload's `model_config:`: each non-zero field replaces the architecture's. Applied in one
// place with the families' rules: an encoder–decoder's decoder gets the encoder's layer count (T5Config
// num_decoder_layers defaults to num_layers), grouped-query attention keeps its query heads per
// key/value head, head_dim follows hidden / heads unless the family has its own (T5's d_kv, kept
// unless hidden or heads change), and an embedding width equal to hidden follows it (ALBERT's own E stays).
struct ArchOverrides {
  int64_t layers = 0, hidden = 0, heads = 0, intermediate = 0, vocab = 0, max_position = 0;
  int64_t kv_heads = 0;  // num_key_value_heads (grouped-query attention); 0: the preset's grouping
  int64_t head_dim = 0;  // per-head width (head_dim); 0: the preset's, or hidden / heads when those change
  std::optional<Activation> activation{};  // the MLP's (gated or not); unset: the preset's
  std::optional<bool> tied_embeddings{};   // the LM head is the embedding table; unset: the preset's
};
ModelArch with_overrides(ModelArch a, const ArchOverrides& o);

std::string family_name(ModelFamily f);  // "bert", "gpt2", "llama", ...
// Families tpusim builds training graphs for (a builder in the registry): every family today.
bool family_simulated(ModelFamily f);
std::vector<std::string> simulated_family_names();

// Why `name` cannot be a simulated model, as a ConfigError's `rule` and `suggestion` (yaml_path
// "model"): a preset of a family not simulated yet, or an unknown name with "did you mean" over all
// presets. nullopt when `name` is a preset of a simulated family. One rule, used by the workload
// schema and find_preset().
std::optional<ConfigErrorInfo> unsimulated_model_error(const std::string& name);

// Exact parameter count of the architecture's `counted_class` (its family's closed form).
uint64_t model_parameters(const ModelArch& a);

// The presets table of docs/models.md (and `tpusim models --markdown`): name, family, counted class,
// parameters, layers, hidden, heads, vocab, simulated.
std::string model_presets_markdown();

// A model of the architecture's family (models/family.h) with the head given, or the family's first.
std::unique_ptr<Model> make_model(const ModelArch& arch, const HeadOptions& head);
std::unique_ptr<Model> make_model(const ModelArch& arch);

}  // namespace tpusim::models
