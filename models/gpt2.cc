#include "models/gpt2.h"

#include <cmath>
#include <limits>
#include <memory>
#include <numbers>

#include "base/config_error.h"
#include "models/layers.h"
#include "models/losses.h"

namespace tpusim::models {

namespace {

// GPT-2 config.json (all three presets): attn_pdrop, embd_pdrop, resid_pdrop 0.1; layer_norm_epsilon 1e-5.
constexpr double kDropout = 0.1;
constexpr double kLayerNormEps = 1e-5;

void check(bool ok, const std::string& key, int64_t value, const std::string& rule) {
  if (!ok) throw ConfigError({"", key, 0, std::to_string(value), rule, ""});
}

// Builds one GPT-2 graph; collects parameters and inputs as it goes.
class Gpt2Builder {
 public:
  Gpt2Builder(const ModelPreset& p, const StepShape& s)
      : p_(p), s_(s), t_(s.dtype), B_(s.batch), S_(s.seq), H_(p.hidden), nh_(p.heads), hd_(p.hidden / p.heads) {}

  ModelGraph build() {
    int x = embeddings();
    add_unit(out_, "transformer.embeddings", 0);
    causal_and_padding_masks();
    for (int64_t l = 0; l < p_.layers; ++l) {
      const std::string name = "transformer.h." + std::to_string(l);
      const int first = int(g().nodes().size());
      x = block(x, name);
      add_unit(out_, name, first, /*layer=*/true);
    }
    const int heads_first = int(g().nodes().size());
    lm_head_and_loss(layer_norm(x, "transformer.ln_f"));
    add_unit(out_, "heads", heads_first);
    out_.modules = std::make_shared<Gpt2Model>(p_);
    mark_outputs(out_, s_.training);
    return std::move(out_);
  }

 private:
  Graph& g() { return out_.graph; }
  // The shared layer pieces (models/layers.h) over this graph.
  layers::LayerContext cx() { return {g(), out_.params, out_.inputs, t_, s_.param_dtype, s_.precision, s_.training}; }
  int stored_weight(const std::string& name, Dims shape) { return layers::stored_weight(cx(), name, std::move(shape)); }
  int compute(int x) { return layers::compute(cx(), x); }
  int weight(const std::string& name, Dims shape) { return layers::weight(cx(), name, std::move(shape)); }
  int input(const std::string& name, Dims shape) { return layers::input(cx(), name, std::move(shape), DType::kS32); }
  int c(double v) { return layers::constant(cx(), v); }

  // Conv1D on rows: y = x W + b with W [in, out] (transformers.pytorch_utils.Conv1D).
  int conv1d(int x, int w, int b, const std::string& name) {
    int y = g().dot(x, w, {{}, {}, {1}, {0}}, s_.precision, name);
    return g().ew_bcast(EwOp::kAdd, y, b, {1}, name + ".bias_add");
  }

  int layer_norm(int x, const std::string& name) { return layers::layer_norm(cx(), x, kLayerNormEps, name); }
  int dropout(int x, const std::string& name) { return layers::dropout(cx(), x, kDropout, name); }
  int gelu_new(int x, const std::string& name) { return layers::gelu_new(cx(), x, name); }

  // wte(input_ids) + wpe(position_ids) -> dropout -> [B*S, H].
  int embeddings() {
    ids_ = input("input_ids", {B_, S_});
    mask_ = input("attention_mask", {B_, S_});
    wte_ = stored_weight("transformer.wte.weight", {p_.vocab, H_});
    int wpe = stored_weight("transformer.wpe.weight", {p_.max_position, H_});
    int words = compute(g().gather(wte_, ids_, "transformer.wte"));                                // [B, S, H]
    int pos = compute(g().gather(wpe, g().iota({S_}, 0, DType::kS32), "transformer.wpe"));        // [S, H]
    int x = g().ew_bcast(EwOp::kAdd, words, pos, {1, 2}, "transformer.add_position");
    return dropout(g().reshape(x, {B_ * S_, H_}), "transformer.drop");
  }

  // Additive biases on the scores (finfo.min where masked, as GPT2Attention's torch.where with
  // mask_value = finfo.min and the model's extended attention mask): the causal mask [S, S] is
  // finfo.min where key j > query i, the padding mask [B, S] where attention_mask is 0.
  void causal_and_padding_masks() {
    causal_ = layers::causal_bias(cx(), S_, "transformer");
    padding_ = layers::padding_bias(cx(), mask_, "transformer");
  }

  // Rows [k*H, (k+1)*H) of c_attn's [H, 3H] weight (and its bias) as the query, key or value
  // projection: a weight-sized regroup and row pick; the three dots do the fused Conv1D's FLOPs.
  int qkv_part(int w3, int b3, int x, int k, const std::string& name) {
    int part = g().full(double(k), {1}, DType::kS32);
    int w = g().reshape(g().gather(w3, part, name + ".weight"), {H_, H_});
    int b = g().reshape(g().gather(b3, part, name + ".bias"), {H_});
    return g().reshape(conv1d(x, w, b, name), {B_, S_, nh_, hd_});
  }

  // The residual stream x + y, materialized in HBM. Pre-LayerNorm blocks never pass it through a
  // reduction (BERT's post-LayerNorm does, which ends each fusion), so under compiler/plan/fusion.h's
  // producer-into-consumer rule every consumer would recompute the whole stream back to the first
  // layer; XLA materializes it (its fusion does not duplicate a producer into consumers once the
  // fusion outgrows its operand limit), once per block.
  int residual(int y, int x, const std::string& name) {
    int r = g().ew(EwOp::kAdd, y, x, name);
    g().set_materialize(r);
    return r;
  }

  // GPT2Block: x + attn(ln_1(x)), then + mlp(ln_2(.)).
  int block(int x, const std::string& p) {
    const std::string at = p + ".attn";
    int h = layer_norm(x, p + ".ln_1");
    // c_attn's weight [H, 3H] viewed as [H, 3, H] and regrouped to [3, H, H]; its bias [3H] as [3, H].
    int w3 = g().transpose(g().reshape(weight(at + ".c_attn.weight", {H_, 3 * H_}), {H_, 3, H_}), {1, 0, 2});
    int b3 = g().reshape(weight(at + ".c_attn.bias", {3 * H_}), {3, H_});
    int q = qkv_part(w3, b3, h, 0, at + ".c_attn.query");
    int k = qkv_part(w3, b3, h, 1, at + ".c_attn.key");
    int v = qkv_part(w3, b3, h, 2, at + ".c_attn.value");
    // scores[b, h, i, j] = q·k / sqrt(d) + causal[i, j] + padding[b, j]
    int s = g().dot(q, k, {{0, 2}, {0, 2}, {3}, {3}}, s_.precision, at + ".scores");
    s = g().ew(EwOp::kMul, s, c(1.0 / std::sqrt(double(hd_))), at + ".scale");
    s = g().ew_bcast(EwOp::kAdd, s, causal_, {2, 3}, at + ".causal_mask");
    s = g().ew_bcast(EwOp::kAdd, s, padding_, {0, 3}, at + ".padding_mask");
    int probs = dropout(stable_softmax(g(), s, 3, at + ".softmax"), at + ".attn_dropout");
    int ctx = g().dot(probs, v, {{0, 1}, {0, 2}, {3}, {1}}, s_.precision, at + ".context");
    ctx = g().reshape(g().transpose(ctx, {0, 2, 1, 3}), {B_ * S_, H_});
    int a = conv1d(ctx, weight(at + ".c_proj.weight", {H_, H_}), weight(at + ".c_proj.bias", {H_}), at + ".c_proj");
    x = residual(dropout(a, at + ".resid_dropout"), x, p + ".attn_residual");
    const std::string m = p + ".mlp";
    const int64_t I = p_.intermediate;
    int f = layer_norm(x, p + ".ln_2");
    f = gelu_new(conv1d(f, weight(m + ".c_fc.weight", {H_, I}), weight(m + ".c_fc.bias", {I}), m + ".c_fc"), m + ".act");
    f = conv1d(f, weight(m + ".c_proj.weight", {I, H_}), weight(m + ".c_proj.bias", {H_}), m + ".c_proj");
    return residual(dropout(f, m + ".dropout"), x, p + ".mlp_residual");
  }

  // lm_head (Linear(H, vocab, bias=False), its weight wte): logits [B*S, vocab] for every position;
  // CrossEntropyLoss(ignore_index=-100), the mean over the positions that have a label.
  void lm_head_and_loss(int x) {
    out_.logits = g().dot(x, compute(wte_), {{}, {}, {1}, {1}}, s_.precision, "lm_head");
    int labels = g().reshape(input("labels", {B_, S_}), {B_ * S_});
    int ignored = g().convert(g().ew(EwOp::kCmpEq, labels, g().constant(-100, DType::kS32), "loss.ignored"), t_);
    int weights = g().ew(EwOp::kAdd, g().ew(EwOp::kNeg, ignored, -1, "loss.neg_ignored"), c(1.0), "loss.weights");
    out_.loss = cross_entropy(g(), out_.logits, labels, weights, "loss");
  }

  const ModelPreset& p_;
  const StepShape& s_;
  const DType t_;
  const int64_t B_, S_, H_, nh_, hd_;
  int ids_ = -1, mask_ = -1, wte_ = -1, causal_ = -1, padding_ = -1;
  ModelGraph out_;
};

}  // namespace

const std::vector<std::string>& gpt2_module_classes() {
  static const std::vector<std::string> c = {"GPT2LMHeadModel", "GPT2Model", "GPT2Block", "GPT2Attention",
                                             "GPT2MLP", "Conv1D", "Linear", "Embedding", "LayerNorm"};
  return c;
}

Gpt2Model::Gpt2Model(ModelPreset p) : p_(std::move(p)) {}

const std::vector<std::string>& Gpt2Model::module_classes() const { return gpt2_module_classes(); }

// The Hugging Face class of the module at `path`, a state_dict prefix of GPT2LMHeadModel.
std::string Gpt2Model::module_class(const std::string& path) const {
  if (path.empty()) return "GPT2LMHeadModel";
  if (path == "transformer") return "GPT2Model";
  if (path == "transformer.h") return "ModuleList";
  const size_t dot = path.rfind('.');
  const std::string last = dot == std::string::npos ? path : path.substr(dot + 1);
  const std::string parent = dot == std::string::npos ? "" : path.substr(0, dot);
  if (parent == "transformer.h") return "GPT2Block";
  if (path == "transformer.wte" || path == "transformer.wpe") return "Embedding";
  if (last == "ln_1" || last == "ln_2" || last == "ln_f") return "LayerNorm";
  if (last == "attn") return "GPT2Attention";
  if (last == "mlp") return "GPT2MLP";
  if (path == "lm_head") return "Linear";
  return "Conv1D";  // c_attn, c_proj, c_fc
}

ModelGraph Gpt2Model::build_forward(const StepShape& s) const {
  check(s.batch >= 1, "batch", s.batch, "must be at least 1");
  check(s.seq >= 1 && s.seq <= p_.max_position, "seq", s.seq,
        "must be in [1, " + std::to_string(p_.max_position) + "] (n_positions of " + p_.name + ")");
  check(p_.heads >= 1 && p_.hidden % p_.heads == 0, "heads", p_.heads,
        "must divide hidden (" + std::to_string(p_.hidden) + ")");
  if (!is_float(s.dtype)) throw ConfigError({"", "dtype", 0, dtype_name(s.dtype), "must be f32 or bf16", ""});
  if (s.param_dtype && !is_float(*s.param_dtype))
    throw ConfigError({"", "param_dtype", 0, dtype_name(*s.param_dtype), "must be f32 or bf16", ""});
  return Gpt2Builder(p_, s).build();
}

}  // namespace tpusim::models
