// A model's architecture: the one config type of every family (BERT, RoBERTa, DistilBERT, ALBERT,
// GPT-2, Llama, T5, BART, ViT), with the hyper-parameters of a Hugging Face config.json. The presets
// (models/families.h) are architectures by hub name; a workload's `model_config:` overrides some
// fields of one (with_overrides, models/families.h); the graph builders read nothing else.
// Also here: the closed-form parameter count of the Hugging Face class that holds an architecture.
#pragma once
#include <cstdint>
#include <string>

namespace tpusim::models {

enum class ModelFamily { kBert, kRoberta, kDistilBert, kAlbert, kGpt2, kLlama, kT5, kBart, kVit, kMistral, kGemma, kGpt3 };
// The decoders built by the Llama builder, with Llama's module names (q_proj, ..., down_proj): what
// flash attention, tensor parallelism, remat policies and quantization are modelled for.
inline bool llama_like(ModelFamily f) {
  return f == ModelFamily::kLlama || f == ModelFamily::kMistral || f == ModelFamily::kGemma || f == ModelFamily::kGpt3;
}
enum class NormKind { kLayerNorm, kRmsNorm };  // RMSNorm (T5LayerNorm, LlamaRMSNorm): a weight, no bias
// kSwiGlu: gated MLP, silu(x W_gate) * (x W_up); kGeGlu: the same with gelu (tanh approximation, Gemma).
enum class Activation { kGelu, kGeluNew, kRelu, kSwiGlu, kGeGlu };
inline bool gated(Activation a) { return a == Activation::kSwiGlu || a == Activation::kGeGlu; }
enum class PositionKind { kLearned, kRotary, kRelativeBuckets };

struct ModelArch {
  std::string name{};  // Hugging Face hub name ("custom" for an inline architecture)
  ModelFamily family = ModelFamily::kBert;
  std::string counted_class{};  // the Hugging Face class whose parameters model_parameters() gives
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
  bool scaled_embeddings = false;  // the embeddings multiplied by sqrt(hidden) (Gemma)
  int64_t sliding_window = 0;    // attention to the last N keys only (Mistral); 0: none
  bool pooler = false;          // the counted class has a pooler (dense + tanh on the first token)
  bool biases = true;           // linear layers have biases (T5 and Llama: none)
  NormKind norm = NormKind::kLayerNorm;
  Activation activation = Activation::kGelu;
  PositionKind positions = PositionKind::kLearned;
};

// The fields a preset may leave at 0 filled as the families derive them: kv_heads = heads,
// head_dim = hidden / heads, embedding_size = hidden.
ModelArch with_derived_fields(ModelArch a);

// Exact parameter counts of the classes that hold an architecture, in closed form (tied weights
// once; buffers such as BART's final_logits_bias are not parameters). A family's entry
// (models/family.h) names the one that counts its `counted_class`; model_parameters() applies it.
// BertModel, RobertaModel, DistilBertModel, AlbertModel: embeddings, layers (ALBERT's one shared), pooler.
uint64_t text_encoder_parameters(const ModelArch& a);
// GPT2LMHeadModel, LlamaForCausalLM: embeddings, layers, final norm, the LM head unless tied.
uint64_t decoder_only_parameters(const ModelArch& a);
// T5ForConditionalGeneration, BartModel: shared embedding, both stacks, the LM head unless tied.
uint64_t encoder_decoder_parameters(const ModelArch& a);
// ViTModel: patch embedding, [CLS], positions, layers, final LayerNorm, pooler.
uint64_t vision_encoder_parameters(const ModelArch& a);

// "124,645,632".
std::string with_thousands(uint64_t n);

}  // namespace tpusim::models
