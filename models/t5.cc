#include "models/t5.h"

#include <cmath>
#include <limits>
#include <memory>

#include "base/config_error.h"
#include "models/attention.h"
#include "models/layers.h"
#include "models/losses.h"

namespace tpusim::models {

namespace {

// T5 config.json (t5-small, t5-base): dropout_rate 0.1, layer_norm_epsilon 1e-6.
constexpr double kDropout = 0.1;
constexpr double kNormEps = 1e-6;

void check(bool ok, const std::string& key, int64_t value, const std::string& rule) {
  if (!ok) throw ConfigError({"", key, 0, std::to_string(value), rule, ""});
}

// Builds one T5 graph; collects parameters and inputs as it goes.
class T5Builder {
 public:
  T5Builder(const ModelPreset& p, const StepShape& s)
      : p_(p), s_(s), t_(s.dtype), B_(s.batch), S_(s.seq), T_(s.target), H_(p.hidden) {}

  ModelGraph build() {
    const int enc_first = 0;
    int x = embed("input_ids", S_, &ids_);
    mask_ = input("attention_mask", {B_, S_});
    // The encoder's padding bias (finfo.min where attention_mask is 0), shared by the encoder's
    // self-attention and the decoder's cross-attention (T5Stack's extended attention mask).
    padding_ = layers::padding_bias(cx(), mask_, "encoder");
    add_unit(out_, "encoder.embed_tokens", enc_first);
    int enc_bias = -1;
    for (int64_t l = 0; l < p_.layers; ++l) {
      const std::string name = "encoder.block." + std::to_string(l);
      const int first = next();
      if (l == 0) enc_bias = position_bias(S_, S_, /*bidirectional=*/true, name + ".layer.0.SelfAttention");
      x = encoder_block(x, name, enc_bias);
      add_unit(out_, name, first, /*layer=*/true);
    }
    const int mid_first = next();
    const int enc_out = dropout(rms_norm(x, "encoder.final_layer_norm"), "encoder.dropout");
    int y = embed("decoder_input_ids", T_, nullptr);
    causal_ = layers::causal_bias(cx(), T_, "decoder");
    add_unit(out_, "decoder.embed_tokens", mid_first);
    int dec_bias = -1;
    for (int64_t l = 0; l < p_.decoder_layers; ++l) {
      const std::string name = "decoder.block." + std::to_string(l);
      const int first = next();
      if (l == 0) dec_bias = position_bias(T_, T_, /*bidirectional=*/false, name + ".layer.0.SelfAttention");
      y = decoder_block(y, enc_out, name, dec_bias);
      add_unit(out_, name, first, /*layer=*/true);
    }
    const int heads_first = next();
    lm_head_and_loss(dropout(rms_norm(y, "decoder.final_layer_norm"), "decoder.dropout"));
    add_unit(out_, "heads", heads_first);
    out_.modules = std::make_shared<T5Model>(p_);
    mark_outputs(out_, s_.training);
    return std::move(out_);
  }

 private:
  Graph& g() { return out_.graph; }
  int next() { return int(g().nodes().size()); }
  layers::LayerContext cx() { return {g(), out_.params, out_.inputs, t_, s_.param_dtype, s_.precision, s_.training}; }
  int input(const std::string& name, Dims shape) { return layers::input(cx(), name, std::move(shape), DType::kS32); }
  int c(double v) { return layers::constant(cx(), v); }
  int rms_norm(int x, const std::string& name) { return layers::rms_norm(cx(), x, kNormEps, name); }
  int dropout(int x, const std::string& name) { return layers::dropout(cx(), x, kDropout, name); }

  // shared(ids) -> dropout -> [B*L, H]. The table is created by the first lookup (the encoder's).
  int embed(const std::string& ids_name, int64_t L, int* ids_out) {
    const int ids = input(ids_name, {B_, L});
    if (ids_out) *ids_out = ids;
    if (shared_ < 0) shared_ = layers::stored_weight(cx(), "shared.weight", {p_.vocab, H_});
    const std::string stack = ids_out ? "encoder" : "decoder";
    int e = layers::compute(cx(), g().gather(shared_, ids, stack + ".embed_tokens"));  // [B, L, H]
    return dropout(g().reshape(e, {B_ * L, H_}), stack + ".embed_dropout");
  }

  // The relative position bias [heads, Lq, Lk] of a stack's first self-attention: bucket(j - i)
  // (t5_relative_bucket, composed of f32 element-wise ops on iotas: positions are exact in f32, and
  // the non-negative result's truncation to s32 is the floor HF's .to(torch.long) takes), gathered
  // from the [buckets, heads] table relative_attention_bias.
  int position_bias(int64_t Lq, int64_t Lk, bool bidirectional, const std::string& name) {
    const DType f = DType::kF32;
    auto k = [&](double v) { return g().constant(v, f); };
    const std::string b = name + ".relative_position";
    int i = g().convert(g().iota({Lq, Lk}, 0, DType::kS32), f);
    int j = g().convert(g().iota({Lq, Lk}, 1, DType::kS32), f);
    int rel = g().ew(EwOp::kSub, j, i, b);
    int64_t nb = p_.relative_buckets;
    int offset = -1, n = -1;
    if (bidirectional) {
      nb /= 2;
      offset = g().ew(EwOp::kMul, g().ew(EwOp::kCmpGt, rel, k(0), b + ".later"), k(double(nb)), b + ".offset");
      n = g().ew(EwOp::kMax, rel, g().ew(EwOp::kNeg, rel, -1, b + ".neg"), b + ".abs");
    } else {
      n = g().ew(EwOp::kRelu, g().ew(EwOp::kNeg, rel, -1, b + ".neg"), -1, b + ".past");  // -min(rel, 0)
    }
    const double me = double(nb / 2);  // max_exact
    // large = me + log(max(n, me) / me) / log(max_distance / me) * (nb - me), at most nb - 1. The
    // max keeps log() finite where n < me, whose bucket is n itself.
    int large = g().ew(EwOp::kLog, g().ew(EwOp::kDiv, g().ew(EwOp::kMax, n, k(me), b + ".clamp"), k(me), b + ".ratio"), -1,
                       b + ".log");
    large = g().ew(EwOp::kDiv, large, k(std::log(double(kT5MaxDistance) / me)), b + ".log_ratio");
    large = g().ew(EwOp::kAdd, g().ew(EwOp::kMul, large, k(double(nb) - me), b + ".log_scale"), k(me), b + ".large");
    large = g().ew(EwOp::kSub, large, g().ew(EwOp::kRelu, g().ew(EwOp::kSub, large, k(double(nb - 1)), b + ".over"), -1,
                                             b + ".excess"), b + ".large_capped");
    // n >= me (n is a whole number): the logarithmic bucket, else n.
    int is_large = g().ew(EwOp::kCmpGt, n, k(me - 0.5), b + ".is_large");
    int bucket = g().ew(EwOp::kAdd, n, g().ew(EwOp::kMul, is_large, g().ew(EwOp::kSub, large, n, b + ".delta"), b + ".pick"),
                        b + ".bucket_f");
    if (offset >= 0) bucket = g().ew(EwOp::kAdd, bucket, offset, b + ".bucket_dir");
    bucket = g().convert(bucket, DType::kS32);
    g().set_stop_gradient(bucket);
    const int table = layers::weight(cx(), name + ".relative_attention_bias.weight", {p_.relative_buckets, p_.heads});
    int v = g().gather(table, bucket, name + ".relative_attention_bias");  // [Lq, Lk, heads]
    return g().transpose(v, {2, 0, 1});                                   // [heads, Lq, Lk]
  }

  layers::AttentionSpec spec(const std::string& name, int64_t Lq, int64_t Lk) const {
    return {.name = name, .proj = {"q", "k", "v", "o"}, .batch = B_, .q_len = Lq, .kv_len = Lk, .hidden = H_,
            .heads = p_.heads, .head_dim = p_.head_dim, .biases = false, .scale = 1.0, .dropout = kDropout};
  }

  // The residual stream x + y, materialized in HBM (pre-norm blocks: see Gpt2Builder::residual).
  int residual(int y, int x, const std::string& name) {
    int r = g().ew(EwOp::kAdd, x, y, name);
    g().set_materialize(r);
    return r;
  }

  // T5LayerSelfAttention / T5LayerCrossAttention: x + dropout(attention(layer_norm(x), kv)).
  int attention_layer(int x, int kv, const std::string& p, const std::string& module, int64_t Lq, int64_t Lk,
                      const std::vector<layers::ScoreBias>& biases) {
    int h = rms_norm(x, p + ".layer_norm");
    const bool self = kv < 0;
    int a = layers::attention(cx(), spec(p + "." + module, Lq, Lk), h, self ? h : kv, biases);
    return residual(dropout(a, p + ".dropout"), x, p + ".residual");
  }

  // T5LayerFF: x + dropout(wo(dropout(relu(wi(layer_norm(x)))))).
  int ff_layer(int x, const std::string& p) {
    const std::string d = p + ".DenseReluDense";
    const int64_t I = p_.intermediate;
    int h = rms_norm(x, p + ".layer_norm");
    h = g().dot(h, layers::weight(cx(), d + ".wi.weight", {I, H_}), {{}, {}, {1}, {1}}, s_.precision, d + ".wi");
    h = dropout(g().ew(EwOp::kRelu, h, -1, d + ".act"), d + ".dropout");
    h = g().dot(h, layers::weight(cx(), d + ".wo.weight", {H_, I}), {{}, {}, {1}, {1}}, s_.precision, d + ".wo");
    return residual(dropout(h, p + ".dropout"), x, p + ".residual");
  }

  int encoder_block(int x, const std::string& p, int bias) {
    x = attention_layer(x, -1, p + ".layer.0", "SelfAttention", S_, S_,
                        {{bias, {1, 2, 3}, "position_bias"}, {padding_, {0, 3}, "padding_mask"}});
    return ff_layer(x, p + ".layer.1");
  }

  int decoder_block(int y, int enc, const std::string& p, int bias) {
    y = attention_layer(y, -1, p + ".layer.0", "SelfAttention", T_, T_,
                        {{bias, {1, 2, 3}, "position_bias"}, {causal_, {2, 3}, "causal_mask"}});
    y = attention_layer(y, enc, p + ".layer.1", "EncDecAttention", T_, S_, {{padding_, {0, 3}, "padding_mask"}});
    return ff_layer(y, p + ".layer.2");
  }

  // lm_head (Linear(d_model, vocab, bias=False), tied to `shared`) on the decoder output scaled by
  // d_model^-0.5 (T5ForConditionalGeneration with tie_word_embeddings); CrossEntropyLoss(ignore_index=-100).
  void lm_head_and_loss(int y) {
    int w = shared_;
    if (p_.tied_embeddings) {
      y = g().ew(EwOp::kMul, y, c(1.0 / std::sqrt(double(H_))), "lm_head.scale");
    } else {
      w = layers::stored_weight(cx(), "lm_head.weight", {p_.vocab, H_});
    }
    out_.logits = g().dot(y, layers::compute(cx(), w), {{}, {}, {1}, {1}}, s_.precision, "lm_head");
    int labels = g().reshape(input("labels", {B_, T_}), {B_ * T_});
    int ignored = g().convert(g().ew(EwOp::kCmpEq, labels, g().constant(-100, DType::kS32), "loss.ignored"), t_);
    int weights = g().ew(EwOp::kAdd, g().ew(EwOp::kNeg, ignored, -1, "loss.neg_ignored"), c(1.0), "loss.weights");
    out_.loss = cross_entropy(g(), out_.logits, labels, weights, "loss");
  }

  const ModelPreset& p_;
  const StepShape& s_;
  const DType t_;
  const int64_t B_, S_, T_, H_;
  int ids_ = -1, mask_ = -1, shared_ = -1, padding_ = -1, causal_ = -1;
  ModelGraph out_;
};

}  // namespace

int64_t t5_relative_bucket(int64_t rel, bool bidirectional, int64_t num_buckets, int64_t max_distance) {
  int64_t ret = 0, n = 0;
  if (bidirectional) {
    num_buckets /= 2;
    ret += rel > 0 ? num_buckets : 0;
    n = rel < 0 ? -rel : rel;
  } else {
    n = rel < 0 ? -rel : 0;
  }
  const int64_t max_exact = num_buckets / 2;
  if (n < max_exact) return ret + n;
  const double scaled = std::log(double(n) / double(max_exact)) / std::log(double(max_distance) / double(max_exact)) *
                        double(num_buckets - max_exact);
  return ret + std::min<int64_t>(max_exact + int64_t(scaled), num_buckets - 1);
}

const std::vector<std::string>& t5_module_classes() {
  static const std::vector<std::string> c = {"T5ForConditionalGeneration", "T5Stack", "T5Block", "T5LayerSelfAttention",
                                             "T5LayerCrossAttention", "T5LayerFF", "T5Attention", "T5DenseActDense",
                                             "T5LayerNorm", "Linear", "Embedding"};
  return c;
}

T5Model::T5Model(ModelPreset p) : p_(std::move(p)) {}

const std::vector<std::string>& T5Model::module_classes() const { return t5_module_classes(); }

// The Hugging Face class of the module at `path`, a state_dict prefix of T5ForConditionalGeneration.
std::string T5Model::module_class(const std::string& path) const {
  if (path.empty()) return "T5ForConditionalGeneration";
  if (path == "encoder" || path == "decoder") return "T5Stack";
  const size_t dot = path.rfind('.');
  const std::string last = dot == std::string::npos ? path : path.substr(dot + 1);
  const std::string parent = dot == std::string::npos ? "" : path.substr(0, dot);
  if (last == "block" || last == "layer") return "ModuleList";
  const size_t pdot = parent.rfind('.');
  const std::string parent_last = pdot == std::string::npos ? parent : parent.substr(pdot + 1);
  if (parent_last == "block") return "T5Block";
  if (parent_last == "layer") {
    if (last == "0") return "T5LayerSelfAttention";
    if (last == "1" && path.rfind("decoder.", 0) == 0) return "T5LayerCrossAttention";
    return "T5LayerFF";
  }
  if (last == "SelfAttention" || last == "EncDecAttention") return "T5Attention";
  if (last == "DenseReluDense") return "T5DenseActDense";
  if (last == "layer_norm" || last == "final_layer_norm") return "T5LayerNorm";
  if (last == "shared" || last == "embed_tokens" || last == "relative_attention_bias") return "Embedding";
  return "Linear";  // q, k, v, o, wi, wo, lm_head
}

ModelGraph T5Model::build_forward(const StepShape& s) const {
  check(s.batch >= 1, "batch", s.batch, "must be at least 1");
  check(s.seq >= 1, "seq", s.seq, "must be at least 1 (source tokens)");
  check(s.target >= 1, "max_target_length", s.target, "must be at least 1 (a seq2seq step has target tokens)");
  check(p_.heads >= 1 && p_.head_dim >= 1, "heads", p_.heads, "must be at least 1");
  check(p_.relative_buckets >= 4, "relative_buckets", p_.relative_buckets, "must be at least 4");
  if (!is_float(s.dtype)) throw ConfigError({"", "dtype", 0, dtype_name(s.dtype), "must be f32 or bf16", ""});
  if (s.param_dtype && !is_float(*s.param_dtype))
    throw ConfigError({"", "param_dtype", 0, dtype_name(*s.param_dtype), "must be f32 or bf16", ""});
  return T5Builder(p_, s).build();
}

}  // namespace tpusim::models
