#include "models/model_arch.h"

namespace tpusim::models {
namespace {

// Parameter counts of the building blocks (Hugging Face modules; weights [in, out] plus a bias).
int64_t linear(int64_t in, int64_t out, bool bias) { return in * out + (bias ? out : 0); }
// LayerNorm: weight and bias; RMSNorm (T5LayerNorm, LlamaRMSNorm): weight only.
int64_t norm(const ModelArch& p, int64_t width) { return p.norm == NormKind::kLayerNorm ? 2 * width : width; }
// Query, key, value and output projections; grouped-query attention has kv_heads key/value heads.
int64_t attention(const ModelArch& p) {
  const int64_t q = p.heads * p.head_dim, kv = p.kv_heads * p.head_dim;
  return linear(p.hidden, q, p.biases) + 2 * linear(p.hidden, kv, p.biases) + linear(q, p.hidden, p.biases);
}
// Two projections; SwiGLU's gated MLP three (gate_proj, up_proj, down_proj).
int64_t mlp(const ModelArch& p) {
  const int64_t in = (gated(p.activation) ? 2 : 1) * linear(p.hidden, p.intermediate, p.biases);
  return in + linear(p.intermediate, p.hidden, p.biases);
}
// A self-attention layer (BertLayer, GPT2Block, LlamaDecoderLayer, ViTLayer, T5/BART encoder layer):
// attention, MLP and two norms, wherever the norms sit (pre- or post-norm count the same).
int64_t self_attention_layer(const ModelArch& p) { return attention(p) + mlp(p) + 2 * norm(p, p.hidden); }
// An encoder–decoder's decoder layer: self-attention, cross-attention (same shapes), MLP, three norms.
int64_t cross_attention_layer(const ModelArch& p) { return 2 * attention(p) + mlp(p) + 3 * norm(p, p.hidden); }
int64_t pooler(const ModelArch& p) { return p.pooler ? linear(p.hidden, p.hidden, true) : 0; }

// BertModel, RobertaModel, DistilBertModel, AlbertModel: word, position and token-type embeddings of
// width embedding_size and their LayerNorm; ALBERT's projection from embedding_size to hidden
// (embedding_hidden_mapping_in) and one shared layer; the layers; the pooler.
int64_t text_encoder(const ModelArch& p) {
  const int64_t e = p.embedding_size;
  int64_t n = (p.vocab + p.max_position + p.type_vocab) * e + norm(p, e);
  if (e != p.hidden) n += linear(e, p.hidden, true);
  return n + (p.shared_layers ? 1 : p.layers) * self_attention_layer(p) + pooler(p);
}

// GPT2LMHeadModel, LlamaForCausalLM: token embedding, learned positions (GPT-2's wpe; none with
// rotary), the layers, the final norm (ln_f, norm), and the LM head unless tied to the embedding.
int64_t decoder_only(const ModelArch& p) {
  int64_t n = p.vocab * p.hidden + (p.positions == PositionKind::kLearned ? p.max_position * p.hidden : 0);
  n += p.layers * self_attention_layer(p) + norm(p, p.hidden);
  return n + (p.tied_embeddings ? 0 : p.vocab * p.hidden);
}

// T5ForConditionalGeneration, BartModel: the shared token embedding, then per stack either T5's
// relative attention bias (num_buckets x heads, in the first layer only) and final_layer_norm, or
// BART's learned positions (max_position + offset rows) and layernorm_embedding; the encoder's
// self-attention layers and the decoder's cross-attention layers; the LM head unless tied.
int64_t encoder_decoder(const ModelArch& p) {
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
int64_t vision_encoder(const ModelArch& p) {
  const int64_t patches = (p.image_size / p.patch_size) * (p.image_size / p.patch_size);
  int64_t n = linear(p.channels * p.patch_size * p.patch_size, p.hidden, true) + p.hidden + (patches + 1) * p.hidden;
  return n + p.layers * self_attention_layer(p) + norm(p, p.hidden) + pooler(p);
}

}  // namespace

ModelArch with_derived_fields(ModelArch a) {
  if (a.kv_heads == 0) a.kv_heads = a.heads;
  if (a.head_dim == 0 && a.heads) a.head_dim = a.hidden / a.heads;
  if (a.embedding_size == 0) a.embedding_size = a.hidden;
  return a;
}

uint64_t text_encoder_parameters(const ModelArch& a) { return uint64_t(text_encoder(a)); }
uint64_t decoder_only_parameters(const ModelArch& a) { return uint64_t(decoder_only(a)); }
uint64_t encoder_decoder_parameters(const ModelArch& a) { return uint64_t(encoder_decoder(a)); }
uint64_t vision_encoder_parameters(const ModelArch& a) { return uint64_t(vision_encoder(a)); }

std::string with_thousands(uint64_t n) {
  std::string digits = std::to_string(n), s;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) s += ',';
    s += digits[i];
  }
  return s;
}

}  // namespace tpusim::models
