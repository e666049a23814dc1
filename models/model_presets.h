// Every model preset by Hugging Face hub name, across families (BERT, RoBERTa, DistilBERT, ALBERT,
// GPT-2, Llama, T5, BART, ViT): architecture hyper-parameters from each model's config.json and the
// exact parameter count of the Hugging Face model class that holds it. BERT (models/bert.h), RoBERTa,
// DistilBERT and ALBERT (models/encoders.h) have training graphs today; the BERT presets themselves
// live in models/bert_presets.h and are listed here through it.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/config_error.h"
#include "models/bert_presets.h"

namespace tpusim::models {

enum class ModelFamily { kBert, kRoberta, kDistilBert, kAlbert, kGpt2, kLlama, kT5, kBart, kVit };
enum class NormKind { kLayerNorm, kRmsNorm };  // RMSNorm (T5LayerNorm, LlamaRMSNorm): a weight, no bias
enum class Activation { kGelu, kGeluNew, kRelu, kSwiGlu };  // kSwiGlu: gated MLP, silu(x W_gate) * (x W_up)
enum class PositionKind { kLearned, kRotary, kRelativeBuckets };

struct ModelPreset {
  std::string name;  // Hugging Face hub name
  ModelFamily family = ModelFamily::kBert;
  std::string counted_class;  // the Hugging Face class whose parameters count_parameters() gives
  int64_t layers = 0;          // num_hidden_layers; encoder–decoder: encoder layers
  int64_t decoder_layers = 0;  // encoder–decoder only (T5 num_decoder_layers, BART decoder_layers)
  int64_t hidden = 0;          // hidden_size / d_model / n_embd
  int64_t heads = 0;           // num_attention_heads
  int64_t kv_heads = 0;        // num_key_value_heads (grouped-query attention); = heads otherwise
  int64_t head_dim = 0;        // per-head width (T5 d_kv); hidden / heads otherwise
  int64_t intermediate = 0;    // MLP width (intermediate_size, d_ff, ffn_dim; GPT-2: 4 n_embd)
  int64_t vocab = 0;           // 0: none (ViT)
  int64_t max_position = 0;    // max_position_embeddings (learned rows only under PositionKind::kLearned)
  int64_t position_offset = 0;  // BART: learned positions have max_position + 2 rows
  int64_t type_vocab = 0;      // token-type rows (BERT 2, RoBERTa 1; 0: no token-type embedding)
  int64_t embedding_size = 0;  // ALBERT's factorized embedding width; = hidden otherwise
  int64_t relative_buckets = 0;  // T5 relative_attention_num_buckets
  int64_t image_size = 0, patch_size = 0, channels = 0;  // ViT
  bool shared_layers = false;  // ALBERT: one layer's parameters, applied `layers` times
  bool tied_embeddings = true;  // LM head (where the class has one) is the input embedding
  bool pooler = false;          // the counted class has a pooler (dense + tanh on the first token)
  bool biases = true;           // linear layers have biases (T5 and Llama: none)
  NormKind norm = NormKind::kLayerNorm;
  Activation activation = Activation::kGelu;
  PositionKind positions = PositionKind::kLearned;
};

// A BERT architecture (a preset, or an inline `model_config`) as the BertModel it is counted as.
ModelPreset bert_model_preset(const BertConfig& b);

// All presets, in a stable order (the BERT presets of models/bert_presets.h first).
const std::vector<ModelPreset>& model_presets();
std::vector<std::string> model_preset_names();

// The preset named `name`: its hub name, or the short name under the organisation the hub moved it
// to ("openai-community/gpt2" is gpt2, "google-bert/bert-base-uncased" is bert-base-uncased).
std::optional<ModelPreset> find_model_preset(const std::string& name);

std::string family_name(ModelFamily f);  // "bert", "gpt2", "llama", ...
// Families tpusim builds training graphs for (bert, roberta, distilbert, albert, gpt2, llama, vit).
bool family_simulated(ModelFamily f);
std::vector<std::string> simulated_family_names();

// Why `name` cannot be a simulated model, as a ConfigError's `rule` and `suggestion` (yaml_path
// "model"): a preset of a family not simulated yet, or an unknown name with "did you mean" over all
// presets. nullopt when `name` is a preset of a simulated family. One rule, used by the workload
// schema and find_preset().
std::optional<ConfigErrorInfo> unsimulated_model_error(const std::string& name);

// Exact parameter count of the preset's `counted_class`, in closed form from its architecture
// (tied weights once; buffers such as BART's final_logits_bias are not parameters).
uint64_t model_parameters(const ModelPreset& p);

// "124,645,632".
std::string with_thousands(uint64_t n);
// The presets table of docs/models.md (and `tpusim models --markdown`): name, family, counted class,
// parameters, layers, hidden, heads, vocab, simulated.
std::string model_presets_markdown();

}  // namespace tpusim::models
