#include "models/llama.h"

#include <cmath>
#include <limits>
#include <memory>

#include "base/config_error.h"
#include "models/layers.h"
#include "models/losses.h"

namespace tpusim::models {

namespace {

// Llama-2 and Llama-3 config.json: rms_norm_eps 1e-5, attention_dropout 0.0 (no dropout anywhere).
constexpr double kRmsNormEps = 1e-5;

void check(bool ok, const std::string& key, int64_t value, const std::string& rule) {
  if (!ok) throw ConfigError({"", key, 0, std::to_string(value), rule, ""});
}

class LlamaBuilder {
 public:
  LlamaBuilder(const ModelPreset& p, const StepShape& s)
      : p_(p), s_(s), t_(s.dtype), B_(s.batch), S_(s.seq), H_(p.hidden), nh_(p.heads), kvh_(p.kv_heads),
        hd_(p.hidden / p.heads) {}

  ModelGraph build() {
    int x = embeddings();
    causal_and_padding_masks();
    rope_tables();
    add_unit(out_, "model.embed_tokens", 0);
    for (int64_t l = 0; l < p_.layers; ++l) {
      const std::string name = "model.layers." + std::to_string(l);
      const int first = int(g().nodes().size());
      x = decoder_layer(x, name);
      add_unit(out_, name, first, /*layer=*/true);
    }
    const int heads_first = int(g().nodes().size());
    lm_head_and_loss(rms_norm(x, "model.norm"));
    add_unit(out_, "heads", heads_first);
    out_.modules = std::make_shared<LlamaModel>(p_);
    mark_outputs(out_, s_.training);
    return std::move(out_);
  }

 private:
  Graph& g() { return out_.graph; }
  layers::LayerContext cx() { return {g(), out_.params, out_.inputs, t_, s_.param_dtype, s_.precision, s_.training}; }
  int weight(const std::string& name, Dims shape) { return layers::weight(cx(), name, std::move(shape)); }
  int input(const std::string& name, Dims shape, DType t) { return layers::input(cx(), name, std::move(shape), t); }
  int c(double v) { return layers::constant(cx(), v); }
  int rms_norm(int x, const std::string& name) { return layers::rms_norm(cx(), x, kRmsNormEps, name); }

  // nn.Linear(in, out, bias=False) on rows: y = x W^T, W [out, in].
  int linear(int x, int64_t in, int64_t out, const std::string& name) {
    return g().dot(x, weight(name + ".weight", {out, in}), {{}, {}, {1}, {1}}, s_.precision, name);
  }

  // embed_tokens(input_ids) -> [B*S, H].
  int embeddings() {
    ids_ = input("input_ids", {B_, S_}, DType::kS32);
    mask_ = input("attention_mask", {B_, S_}, DType::kS32);
    int wte = weight("model.embed_tokens.weight", {p_.vocab, H_});
    return g().reshape(g().gather(wte, ids_, "model.embed_tokens"), {B_ * S_, H_});
  }

  // Additive score biases as models/gpt2.cc builds them (finfo.min where key j > query i, and where
  // attention_mask is 0): transformers' causal mask for eager attention.
  void causal_and_padding_masks() {
    causal_ = layers::causal_bias(cx(), S_, "model");
    padding_ = layers::padding_bias(cx(), mask_, "model");
  }

  // LlamaRotaryEmbedding's cos and sin [S, hd] (see models/llama.h for why they are inputs).
  void rope_tables() {
    cos_ = input("rope.cos", {S_, hd_}, t_);
    sin_ = input("rope.sin", {S_, hd_}, t_);
  }

  // apply_rotary_pos_emb on x [B, S, n, hd]: x cos + rotate_half(x) sin, the tables broadcast over
  // batch and heads. rotate_half = concat(-x2, x1) of the halves x1 = x[..., :hd/2], x2 = x[..., hd/2:].
  int rotary(int x, const std::string& name) {
    const int64_t half = hd_ / 2;
    int x1 = g().slice(x, 3, 0, half, name + ".x1");
    int x2 = g().slice(x, 3, half, hd_, name + ".x2");
    int rot = g().concatenate({g().ew(EwOp::kNeg, x2, -1, name + ".neg_x2"), x1}, 3, name + ".rotate_half");
    int a = g().ew_bcast(EwOp::kMul, x, cos_, {1, 3}, name + ".cos");
    int b = g().ew_bcast(EwOp::kMul, rot, sin_, {1, 3}, name + ".sin");
    return g().ew(EwOp::kAdd, a, b, name);
  }

  // The residual stream, materialized once per sub-block (models/gpt2.cc's residual explains why).
  int residual(int y, int x, const std::string& name) {
    int r = g().ew(EwOp::kAdd, y, x, name);
    g().set_materialize(r);
    return r;
  }

  // LlamaAttention (eager) on h [B*S, H]. Groups G = heads / kv_heads.
  int attention(int h, const std::string& at) {
    const int64_t G = nh_ / kvh_;
    int q = g().reshape(linear(h, H_, nh_ * hd_, at + ".q_proj"), {B_, S_, nh_, hd_});
    int k = g().reshape(linear(h, H_, kvh_ * hd_, at + ".k_proj"), {B_, S_, kvh_, hd_});
    int v = g().reshape(linear(h, H_, kvh_ * hd_, at + ".v_proj"), {B_, S_, kvh_, hd_});
    q = rotary(q, at + ".rotary_q");
    k = rotary(k, at + ".rotary_k");
    // Query head h = kv * G + g: [B, S, kvh, G, hd] -> [B, kvh, G*S, hd], the G query heads of a key/value
    // head one after another as rows of its dots (the lane dim stays minor; the statistics of the
    // softmax are [B, kvh, G*S], not padded along a G of 1 to the sublanes).
    int qg = g().reshape(g().transpose(g().reshape(q, {B_, S_, kvh_, G, hd_}), {0, 2, 3, 1, 4}), {B_, kvh_, G * S_, hd_});
    // scores[b, kv, (g, i), j] = q·k / sqrt(hd) + causal[i, j] + padding[b, j]
    int s = g().dot(qg, k, {{0, 1}, {0, 2}, {3}, {3}}, s_.precision, at + ".scores");
    s = g().reshape(g().ew(EwOp::kMul, s, c(1.0 / std::sqrt(double(hd_))), at + ".scale"), {B_, kvh_, G, S_, S_});
    s = g().ew_bcast(EwOp::kAdd, s, causal_, {3, 4}, at + ".causal_mask");
    s = g().ew_bcast(EwOp::kAdd, s, padding_, {0, 4}, at + ".padding_mask");
    int probs = stable_softmax(g(), g().reshape(s, {B_, kvh_, G * S_, S_}), 3, at + ".softmax");
    int ctx = g().dot(probs, v, {{0, 1}, {0, 2}, {3}, {1}}, s_.precision, at + ".context");  // [B, kvh, G*S, hd]
    ctx = g().reshape(g().transpose(g().reshape(ctx, {B_, kvh_, G, S_, hd_}), {0, 3, 1, 2, 4}), {B_ * S_, nh_ * hd_});
    return linear(ctx, nh_ * hd_, H_, at + ".o_proj");
  }

  // LlamaMLP: down_proj(silu(gate_proj(x)) * up_proj(x)).
  int mlp(int x, const std::string& m) {
    const int64_t I = p_.intermediate;
    int gate = layers::silu(cx(), linear(x, H_, I, m + ".gate_proj"), m + ".act_fn");
    int up = linear(x, H_, I, m + ".up_proj");
    return linear(g().ew(EwOp::kMul, gate, up, m + ".gate_up"), I, H_, m + ".down_proj");
  }

  // LlamaDecoderLayer: x + self_attn(input_layernorm(x)), then + mlp(post_attention_layernorm(.)).
  int decoder_layer(int x, const std::string& p) {
    int a = attention(rms_norm(x, p + ".input_layernorm"), p + ".self_attn");
    x = residual(a, x, p + ".attn_residual");
    int f = mlp(rms_norm(x, p + ".post_attention_layernorm"), p + ".mlp");
    return residual(f, x, p + ".mlp_residual");
  }

  // lm_head (Linear(H, vocab, bias=False), untied): logits [B*S, vocab]; CrossEntropyLoss(ignore_index
  // = -100), the mean over the positions that have a label.
  void lm_head_and_loss(int x) {
    out_.logits = linear(x, H_, p_.vocab, "lm_head");
    int labels = g().reshape(input("labels", {B_, S_}, DType::kS32), {B_ * S_});
    int ignored = g().convert(g().ew(EwOp::kCmpEq, labels, g().constant(-100, DType::kS32), "loss.ignored"), t_);
    int weights = g().ew(EwOp::kAdd, g().ew(EwOp::kNeg, ignored, -1, "loss.neg_ignored"), c(1.0), "loss.weights");
    out_.loss = cross_entropy(g(), out_.logits, labels, weights, "loss");
  }

  const ModelPreset& p_;
  const StepShape& s_;
  const DType t_;
  const int64_t B_, S_, H_, nh_, kvh_, hd_;
  int ids_ = -1, mask_ = -1, causal_ = -1, padding_ = -1, cos_ = -1, sin_ = -1;
  ModelGraph out_;
};

}  // namespace

const std::vector<std::string>& llama_module_classes() {
  static const std::vector<std::string> c = {"LlamaForCausalLM", "LlamaModel",   "LlamaDecoderLayer",
                                             "LlamaAttention",   "LlamaMLP",     "LlamaRMSNorm",
                                             "LlamaRotaryEmbedding", "Linear", "Embedding"};
  return c;
}

LlamaModel::LlamaModel(ModelPreset p) : p_(std::move(p)) {}

const std::vector<std::string>& LlamaModel::module_classes() const { return llama_module_classes(); }

// The Hugging Face class of the module at `path`, a state_dict prefix of LlamaForCausalLM.
std::string LlamaModel::module_class(const std::string& path) const {
  if (path.empty()) return "LlamaForCausalLM";
  if (path == "model") return "LlamaModel";
  if (path == "model.layers") return "ModuleList";
  const size_t dot = path.rfind('.');
  const std::string last = dot == std::string::npos ? path : path.substr(dot + 1);
  const std::string parent = dot == std::string::npos ? "" : path.substr(0, dot);
  if (parent == "model.layers") return "LlamaDecoderLayer";
  if (path == "model.embed_tokens") return "Embedding";
  if (last == "input_layernorm" || last == "post_attention_layernorm" || path == "model.norm") return "LlamaRMSNorm";
  if (last == "self_attn") return "LlamaAttention";
  if (last == "mlp") return "LlamaMLP";
  if (last == "rotary_emb") return "LlamaRotaryEmbedding";
  return "Linear";  // q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj, lm_head
}

ModelGraph LlamaModel::build_forward(const StepShape& s) const {
  check(s.batch >= 1, "batch", s.batch, "must be at least 1");
  check(s.seq >= 1 && s.seq <= p_.max_position, "seq", s.seq,
        "must be in [1, " + std::to_string(p_.max_position) + "] (max_position_embeddings of " + p_.name + ")");
  check(p_.heads >= 1 && p_.hidden % p_.heads == 0, "heads", p_.heads,
        "must divide hidden (" + std::to_string(p_.hidden) + ")");
  check(p_.kv_heads >= 1 && p_.heads % p_.kv_heads == 0, "kv_heads", p_.kv_heads,
        "must divide heads (" + std::to_string(p_.heads) + "): each key/value head serves a group of query heads");
  check((p_.hidden / p_.heads) % 2 == 0, "head_dim", p_.hidden / p_.heads,
        "must be even (rotate_half splits the head dimension in halves)");
  if (!is_float(s.dtype)) throw ConfigError({"", "dtype", 0, dtype_name(s.dtype), "must be f32 or bf16", ""});
  if (s.param_dtype && !is_float(*s.param_dtype))
    throw ConfigError({"", "param_dtype", 0, dtype_name(*s.param_dtype), "must be f32 or bf16", ""});
  return LlamaBuilder(p_, s).build();
}

}  // namespace tpusim::models
