#include "models/model_presets.h"

#include <algorithm>
#include <tuple>

#include "config/suggest.h"

namespace tpusim::models {
namespace {

// Which class is counted: encoder-only models (BERT, RoBERTa, DistilBERT, ALBERT, ViT) by their base
// model class, pooler included where it has one, since the task head is the fine-tune's
// (`num_labels`); generative models by their LM class, the head counted once when tied to the input
// embedding (GPT-2, T5, BART: the same count as the base model) and in full when untied (Llama).
std::vector<ModelPreset> build_presets() {
  std::vector<ModelPreset> v;
  for (const BertConfig& b : bert_presets()) v.push_back(bert_model_preset(b));  // config.json: bert_presets.cc
  using F = ModelFamily;
  // Hugging Face hub config.json of FacebookAI/roberta-base. 514 positions: RoBERTa's position ids
  // start after padding_idx 1, so 512 tokens use rows 2..513.
  v.push_back({.name = "roberta-base", .family = F::kRoberta, .counted_class = "RobertaModel", .layers = 12,
               .hidden = 768, .heads = 12, .intermediate = 3072, .vocab = 50265, .max_position = 514,
               .type_vocab = 1, .pooler = true});
  // Hugging Face hub config.json of FacebookAI/roberta-large.
  v.push_back({.name = "roberta-large", .family = F::kRoberta, .counted_class = "RobertaModel", .layers = 24,
               .hidden = 1024, .heads = 16, .intermediate = 4096, .vocab = 50265, .max_position = 514,
               .type_vocab = 1, .pooler = true});
  // Hugging Face hub config.json of distilbert/distilbert-base-uncased (n_layers, dim, n_heads,
  // hidden_dim; learned positions, sinusoidal_pos_embds false; no token types, no pooler).
  v.push_back({.name = "distilbert-base-uncased", .family = F::kDistilBert, .counted_class = "DistilBertModel",
               .layers = 6, .hidden = 768, .heads = 12, .intermediate = 3072, .vocab = 30522, .max_position = 512});
  // Hugging Face hub config.json of albert/albert-base-v2 (embedding_size 128, num_hidden_groups 1,
  // inner_group_num 1: one layer's parameters shared by all 12; hidden_act gelu_new).
  v.push_back({.name = "albert-base-v2", .family = F::kAlbert, .counted_class = "AlbertModel", .layers = 12,
               .hidden = 768, .heads = 12, .intermediate = 3072, .vocab = 30000, .max_position = 512,
               .type_vocab = 2, .embedding_size = 128, .shared_layers = true, .pooler = true,
               .activation = Activation::kGeluNew});
  // Hugging Face hub config.json of albert/albert-xxlarge-v2.
  v.push_back({.name = "albert-xxlarge-v2", .family = F::kAlbert, .counted_class = "AlbertModel", .layers = 12,
               .hidden = 4096, .heads = 64, .intermediate = 16384, .vocab = 30000, .max_position = 512,
               .type_vocab = 2, .embedding_size = 128, .shared_layers = true, .pooler = true,
               .activation = Activation::kGeluNew});
  // Hugging Face hub config.json of openai-community/gpt2, of openai-community/gpt2-medium and of
  // openai-community/gpt2-large (n_layer, n_embd, n_head; n_inner null = 4 n_embd; n_positions 1024;
  // activation_function gelu_new; LM head tied to wte).
  for (auto [name, layers, hidden, heads] : {std::tuple{"gpt2", 12, 768, 12}, std::tuple{"gpt2-medium", 24, 1024, 16},
                                             std::tuple{"gpt2-large", 36, 1280, 20}})
    v.push_back({.name = name, .family = F::kGpt2, .counted_class = "GPT2LMHeadModel", .layers = layers,
                 .hidden = hidden, .heads = heads, .intermediate = 4 * int64_t(hidden), .vocab = 50257,
                 .max_position = 1024, .activation = Activation::kGeluNew});
  // Hugging Face hub config.json of meta-llama/Llama-2-7b-hf (rope, rms_norm_eps 1e-5, hidden_act
  // silu with gate_proj/up_proj, tie_word_embeddings false, no biases).
  v.push_back({.name = "meta-llama/Llama-2-7b-hf", .family = F::kLlama, .counted_class = "LlamaForCausalLM",
               .layers = 32, .hidden = 4096, .heads = 32, .kv_heads = 32, .intermediate = 11008, .vocab = 32000,
               .max_position = 4096, .tied_embeddings = false, .biases = false, .norm = NormKind::kRmsNorm,
               .activation = Activation::kSwiGlu, .positions = PositionKind::kRotary});
  // Hugging Face hub config.json of meta-llama/Meta-Llama-3-8B (num_key_value_heads 8: grouped-query
  // attention).
  v.push_back({.name = "meta-llama/Meta-Llama-3-8B", .family = F::kLlama, .counted_class = "LlamaForCausalLM",
               .layers = 32, .hidden = 4096, .heads = 32, .kv_heads = 8, .intermediate = 14336, .vocab = 128256,
               .max_position = 8192, .tied_embeddings = false, .biases = false, .norm = NormKind::kRmsNorm,
               .activation = Activation::kSwiGlu, .positions = PositionKind::kRotary});
  // Hugging Face hub config.json of google-t5/t5-small (num_layers, num_decoder_layers, d_model, d_kv,
  // d_ff; feed_forward_proj relu; relative_attention_num_buckets 32; LM head tied to `shared`).
  v.push_back({.name = "t5-small", .family = F::kT5, .counted_class = "T5ForConditionalGeneration", .layers = 6,
               .decoder_layers = 6, .hidden = 512, .heads = 8, .head_dim = 64, .intermediate = 2048, .vocab = 32128,
               .relative_buckets = 32, .biases = false, .norm = NormKind::kRmsNorm, .activation = Activation::kRelu,
               .positions = PositionKind::kRelativeBuckets});
  // Hugging Face hub config.json of google-t5/t5-base.
  v.push_back({.name = "t5-base", .family = F::kT5, .counted_class = "T5ForConditionalGeneration", .layers = 12,
               .decoder_layers = 12, .hidden = 768, .heads = 12, .head_dim = 64, .intermediate = 3072, .vocab = 32128,
               .relative_buckets = 32, .biases = false, .norm = NormKind::kRmsNorm, .activation = Activation::kRelu,
               .positions = PositionKind::kRelativeBuckets});
  // Hugging Face hub config.json of facebook/bart-large (encoder_layers, decoder_layers, d_model,
  // encoder_ffn_dim; BartLearnedPositionalEmbedding has max_position_embeddings + 2 rows, the offset
  // fairseq kept; layernorm_embedding per stack; no final stack LayerNorm; LM head tied to `shared`;
  // final_logits_bias is a buffer). BartForConditionalGeneration holds the same parameters.
  v.push_back({.name = "facebook/bart-large", .family = F::kBart, .counted_class = "BartModel", .layers = 12,
               .decoder_layers = 12, .hidden = 1024, .heads = 16, .intermediate = 4096, .vocab = 50265,
               .max_position = 1024, .position_offset = 2});
  // Hugging Face hub config.json of google/vit-base-patch16-224 (image_size 224, patch_size 16,
  // num_channels 3, qkv_bias true). The hub checkpoint is ViTForImageClassification (1000 ImageNet
  // classes, no pooler: 86,567,656); counted here as ViTModel with its pooler, like the text encoders.
  v.push_back({.name = "google/vit-base-patch16-224", .family = F::kVit, .counted_class = "ViTModel", .layers = 12,
               .hidden = 768, .heads = 12, .intermediate = 3072, .image_size = 224, .patch_size = 16, .channels = 3,
               .pooler = true});
  for (ModelPreset& p : v) {
    if (p.kv_heads == 0) p.kv_heads = p.heads;
    if (p.head_dim == 0) p.head_dim = p.hidden / p.heads;
    if (p.embedding_size == 0) p.embedding_size = p.hidden;
  }
  return v;
}

// Organisations the hub moved the older un-prefixed names to ("gpt2" is now openai-community/gpt2);
// both forms name the preset. BERT also keeps "google/", which find_preset accepted before.
std::vector<std::string> hub_organisations(ModelFamily f) {
  switch (f) {
    case ModelFamily::kBert: return {"google-bert", "google"};
    case ModelFamily::kRoberta: return {"FacebookAI"};
    case ModelFamily::kDistilBert: return {"distilbert"};
    case ModelFamily::kAlbert: return {"albert"};
    case ModelFamily::kGpt2: return {"openai-community"};
    case ModelFamily::kT5: return {"google-t5"};
    default: return {};  // the preset's name already carries its organisation
  }
}

// Parameter counts of the building blocks (Hugging Face modules; weights [in, out] plus a bias).
int64_t linear(int64_t in, int64_t out, bool bias) { return in * out + (bias ? out : 0); }
// LayerNorm: weight and bias; RMSNorm (T5LayerNorm, LlamaRMSNorm): weight only.
int64_t norm(const ModelPreset& p, int64_t width) { return p.norm == NormKind::kLayerNorm ? 2 * width : width; }
// Query, key, value and output projections; grouped-query attention has kv_heads key/value heads.
int64_t attention(const ModelPreset& p) {
  const int64_t q = p.heads * p.head_dim, kv = p.kv_heads * p.head_dim;
  return linear(p.hidden, q, p.biases) + 2 * linear(p.hidden, kv, p.biases) + linear(q, p.hidden, p.biases);
}
// Two projections; SwiGLU's gated MLP three (gate_proj, up_proj, down_proj).
int64_t mlp(const ModelPreset& p) {
  const int64_t in = (p.activation == Activation::kSwiGlu ? 2 : 1) * linear(p.hidden, p.intermediate, p.biases);
  return in + linear(p.intermediate, p.hidden, p.biases);
}
// A self-attention layer (BertLayer, GPT2Block, LlamaDecoderLayer, ViTLayer, T5/BART encoder layer):
// attention, MLP and two norms, wherever the norms sit (pre- or post-norm count the same).
int64_t self_attention_layer(const ModelPreset& p) { return attention(p) + mlp(p) + 2 * norm(p, p.hidden); }
// An encoder–decoder's decoder layer: self-attention, cross-attention (same shapes), MLP, three norms.
int64_t cross_attention_layer(const ModelPreset& p) { return 2 * attention(p) + mlp(p) + 3 * norm(p, p.hidden); }
int64_t pooler(const ModelPreset& p) { return p.pooler ? linear(p.hidden, p.hidden, true) : 0; }

// BertModel, RobertaModel, DistilBertModel, AlbertModel: word, position and token-type embeddings of
// width embedding_size and their LayerNorm; ALBERT's projection from embedding_size to hidden
// (embedding_hidden_mapping_in) and one shared layer; the layers; the pooler.
int64_t text_encoder(const ModelPreset& p) {
  const int64_t e = p.embedding_size;
  int64_t n = (p.vocab + p.max_position + p.type_vocab) * e + norm(p, e);
  if (e != p.hidden) n += linear(e, p.hidden, true);
  return n + (p.shared_layers ? 1 : p.layers) * self_attention_layer(p) + pooler(p);
}

// GPT2LMHeadModel, LlamaForCausalLM: token embedding, learned positions (GPT-2's wpe; none with
// rotary), the layers, the final norm (ln_f, norm), and the LM head unless tied to the embedding.
int64_t decoder_only(const ModelPreset& p) {
  int64_t n = p.vocab * p.hidden + (p.positions == PositionKind::kLearned ? p.max_position * p.hidden : 0);
  n += p.layers * self_attention_layer(p) + norm(p, p.hidden);
  return n + (p.tied_embeddings ? 0 : p.vocab * p.hidden);
}

// T5ForConditionalGeneration, BartModel: the shared token embedding, then per stack either T5's
// relative attention bias (num_buckets x heads, in the first layer only) and final_layer_norm, or
// BART's learned positions (max_position + offset rows) and layernorm_embedding; the encoder's
// self-attention layers and the decoder's cross-attention layers; the LM head unless tied.
int64_t encoder_decoder(const ModelPreset& p) {
  const int64_t per_stack = (p.positions == PositionKind::kRelativeBuckets
                                 ? p.relative_buckets * p.heads
                                 : (p.max_position + p.position_offset) * p.hidden) +
                            norm(p, p.hidden);
  int64_t n = p.vocab * p.hidden + 2 * per_stack;
  n += p.layers * self_attention_layer(p) + p.decoder_layers * cross_attention_layer(p);
  return n + (p.tied_embeddings ? 0 : p.vocab * p.hidden);
}

// ViTModel: the patch embedding (a Conv2d with kernel = stride = patch, i.e. a linear map of each
// channels x patch x patch block), the [CLS] token, one position row per patch plus [CLS], the layers,
// the final LayerNorm and the pooler.
int64_t vision_encoder(const ModelPreset& p) {
  const int64_t patches = (p.image_size / p.patch_size) * (p.image_size / p.patch_size);
  int64_t n = linear(p.channels * p.patch_size * p.patch_size, p.hidden, true) + p.hidden + (patches + 1) * p.hidden;
  return n + p.layers * self_attention_layer(p) + norm(p, p.hidden) + pooler(p);
}

}  // namespace

ModelPreset bert_model_preset(const BertConfig& b) {
  return {.name = b.name, .family = ModelFamily::kBert, .counted_class = "BertModel", .layers = b.layers,
          .hidden = b.hidden, .heads = b.heads, .kv_heads = b.heads, .head_dim = b.heads ? b.hidden / b.heads : 0,
          .intermediate = b.intermediate, .vocab = b.vocab, .max_position = b.max_position,
          .type_vocab = b.type_vocab, .embedding_size = b.hidden, .pooler = true};
}

const std::vector<ModelPreset>& model_presets() {
  static const std::vector<ModelPreset> presets = build_presets();
  return presets;
}

std::vector<std::string> model_preset_names() {
  std::vector<std::string> names;
  for (const auto& p : model_presets()) names.push_back(p.name);
  return names;
}

std::optional<ModelPreset> find_model_preset(const std::string& name) {
  for (const auto& p : model_presets()) {
    if (p.name == name) return p;
    for (const std::string& org : hub_organisations(p.family))
      if (name == org + "/" + p.name) return p;
  }
  return std::nullopt;
}

std::string family_name(ModelFamily f) {
  switch (f) {
    case ModelFamily::kBert: return "bert";
    case ModelFamily::kRoberta: return "roberta";
    case ModelFamily::kDistilBert: return "distilbert";
    case ModelFamily::kAlbert: return "albert";
    case ModelFamily::kGpt2: return "gpt2";
    case ModelFamily::kLlama: return "llama";
    case ModelFamily::kT5: return "t5";
    case ModelFamily::kBart: return "bart";
    case ModelFamily::kVit: return "vit";
  }
  return "?";
}

// The families with training graphs: BERT (models/bert.h), the BERT-like encoders RoBERTa, DistilBERT
// and ALBERT (models/encoders.h), GPT-2 (models/gpt2.h), Llama (models/llama.h), ViT (models/vit.h), T5
// (models/t5.h) and BART (models/bart.h): every family today. A family added to the presets before its
// graph builder exists answers false here and is an error naming the simulated ones.
bool family_simulated(ModelFamily f) {
  return f == ModelFamily::kBert || f == ModelFamily::kRoberta || f == ModelFamily::kDistilBert ||
         f == ModelFamily::kAlbert || f == ModelFamily::kGpt2 || f == ModelFamily::kLlama || f == ModelFamily::kVit ||
         f == ModelFamily::kT5 || f == ModelFamily::kBart;
}

std::vector<std::string> simulated_family_names() {
  std::vector<std::string> names;
  for (const auto& p : model_presets())
    if (family_simulated(p.family) && std::find(names.begin(), names.end(), family_name(p.family)) == names.end())
      names.push_back(family_name(p.family));
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

uint64_t model_parameters(const ModelPreset& p) {
  switch (p.family) {
    case ModelFamily::kBert:
    case ModelFamily::kRoberta:
    case ModelFamily::kDistilBert:
    case ModelFamily::kAlbert: return uint64_t(text_encoder(p));
    case ModelFamily::kGpt2:
    case ModelFamily::kLlama: return uint64_t(decoder_only(p));
    case ModelFamily::kT5:
    case ModelFamily::kBart: return uint64_t(encoder_decoder(p));
    case ModelFamily::kVit: return uint64_t(vision_encoder(p));
  }
  return 0;
}

std::string with_thousands(uint64_t n) {
  std::string digits = std::to_string(n), s;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) s += ',';
    s += digits[i];
  }
  return s;
}

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

}  // namespace tpusim::models
