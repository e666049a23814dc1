#include "models/t5.h"

#include <algorithm>
#include <cmath>

#include "models/stack.h"

namespace tpusim::models {

namespace {

// T5 config.json (t5-small, t5-base): dropout_rate 0.1, layer_norm_epsilon 1e-6.
constexpr double kDropout = 0.1;
constexpr double kNormEps = 1e-6;

// T5Block: T5LayerNorm (RMSNorm) before each sub-layer and x + dropout(sub-layer) after it
// (layer.0 self-attention, the decoder's layer.1 cross-attention, then T5LayerFF: wo(dropout(relu(wi(x))))),
// projections without biases, no score scale (folded into T5's initialization).
BlockSpec t5_block(bool decoder) {
  auto sub = [](int i) {
    const std::string l = ".layer." + std::to_string(i);
    return Residual{l + ".layer_norm", l + ".dropout", kDropout, l + ".residual"};
  };
  auto attention = [](const std::string& scope) {
    return layers::AttentionNames{scope, scope + ".q", scope + ".k", scope + ".v", scope + ".o", ".attn_dropout"};
  };
  const std::string ff = ".layer." + std::to_string(decoder ? 2 : 1) + ".DenseReluDense";
  return {.pre_norm = true, .residual_first = true, .materialize = true, .norm_eps = kNormEps,
          .projection = layers::Projection::kLinearNoBias, .scale = layers::ScoreScale::kNone,
          .attention_dropout = kDropout, .self = sub(0), .cross = sub(1), .mlp = sub(decoder ? 2 : 1),
          .self_attn = attention(".layer.0.SelfAttention"), .cross_attn = attention(".layer.1.EncDecAttention"),
          .ffn = {.in = ff + ".wi", .act = ff + ".act", .out = ff + ".wo", .dropout = ff + ".dropout",
                  .dropout_rate = kDropout}};
}

class T5Builder final : public StackBuilder {
 public:
  T5Builder(const ModelArch& a, const StepShape& s) : StackBuilder(a, s) {
    head_dim_ = a.head_dim;  // d_kv
    stacks_ = {{.embed_unit = "encoder.embed_tokens", .layer_prefix = "encoder.block.", .layers = a.layers,
                .length = s.seq, .final_norm = "encoder.final_layer_norm", .final_dropout = "encoder.dropout",
                .final_dropout_rate = kDropout},
               {.embed_unit = "decoder.embed_tokens", .layer_prefix = "decoder.block.", .layers = a.decoder_layers,
                .length = s.target, .final_norm = "decoder.final_layer_norm", .final_dropout = "decoder.dropout",
                .final_dropout_rate = kDropout}};
    blocks_ = {t5_block(false), t5_block(true)};
  }

 private:
  // shared(ids) -> dropout -> [B*L, H]; the table is created by the first lookup (the encoder's). The
  // encoder's padding bias (finfo.min where attention_mask is 0) is shared by the encoder's
  // self-attention and the decoder's cross-attention (T5Stack's extended attention mask).
  int embed(size_t stack) override {
    const bool encoder = stack == 0;
    const std::string name = encoder ? "encoder" : "decoder";
    const int64_t L = stacks_[stack].length;
    const int ids = input(encoder ? "input_ids" : "decoder_input_ids", {B_, L}, DType::kS32);
    if (shared_ < 0) shared_ = stored_weight("shared.weight", {arch_.vocab, H_});
    int e = compute(g().gather(shared_, ids, name + ".embed_tokens"));  // [B, L, H]
    const int x = dropout(g().reshape(e, {B_ * L, H_}), kDropout, name + ".embed_dropout");
    if (encoder) {
      const int padding = layers::padding_bias(cx(), input("attention_mask", {B_, L}, DType::kS32), "encoder");
      self_biases_[0] = cross_biases_ = {{padding, {0, 3}, "padding_mask"}};
    } else {
      self_biases_[1] = {{layers::causal_bias(cx(), L, "decoder"), {2, 3}, "causal_mask"}};
    }
    return x;
  }

  // A stack's first block holds the relative position bias its self-attention and every later
  // block's add (bidirectional in the encoder, causal in the decoder).
  int block(size_t stack, int64_t l, int x, int memory, const std::string& p) override {
    if (l == 0) {
      const int64_t L = stacks_[stack].length;
      const int bias = position_bias(L, L, /*bidirectional=*/stack == 0, p + ".layer.0.SelfAttention");
      self_biases_[stack].insert(self_biases_[stack].begin(), {bias, {1, 2, 3}, "position_bias"});
    }
    return StackBuilder::block(stack, l, x, memory, p);
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
    int64_t nb = arch_.relative_buckets;
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
    const int table = weight(name + ".relative_attention_bias.weight", {arch_.relative_buckets, arch_.heads});
    int v = g().gather(table, bucket, name + ".relative_attention_bias");  // [Lq, Lk, heads]
    return g().transpose(v, {2, 0, 1});                                   // [heads, Lq, Lk]
  }

  // lm_head (Linear(d_model, vocab, bias=False), tied to `shared`) on the decoder output scaled by
  // d_model^-0.5 (T5ForConditionalGeneration with tie_word_embeddings); CrossEntropyLoss(ignore_index=-100).
  void head(int y) override {
    int w = shared_;
    if (arch_.tied_embeddings) {
      y = g().ew(EwOp::kMul, y, c(1.0 / std::sqrt(double(H_))), "lm_head.scale");
    } else {
      w = stored_weight("lm_head.weight", {arch_.vocab, H_});
    }
    out_.logits = g().dot(y, compute(w), {{}, {}, {1}, {1}}, shape_.precision, "lm_head");
    token_loss(shape_.target, {"loss.ignored", "loss.neg_ignored", "loss.weights"});
  }

  int shared_ = -1;
};

ModelGraph build_t5(const ModelArch& a, const HeadOptions&, const StepShape& s) {
  check_batch(s);
  require(s.seq >= 1, "seq", s.seq, "must be at least 1 (source tokens)");
  require(s.target >= 1, "max_target_length", s.target, "must be at least 1 (a seq2seq step has target tokens)");
  require(a.heads >= 1 && a.head_dim >= 1, "heads", a.heads, "must be at least 1");
  require(a.relative_buckets >= 4, "relative_buckets", a.relative_buckets, "must be at least 4");
  check_float(s);
  return T5Builder(a, s).build();
}

// Hugging Face hub config.json of google-t5/t5-small and of google-t5/t5-base (num_layers,
// num_decoder_layers, d_model, d_kv, d_ff; feed_forward_proj relu; relative_attention_num_buckets 32;
// LM head tied to `shared`).
ModelArch t5_preset(const std::string& name, int64_t layers, int64_t hidden, int64_t heads, int64_t intermediate) {
  return {.name = name, .family = ModelFamily::kT5, .counted_class = "T5ForConditionalGeneration", .layers = layers,
          .decoder_layers = layers, .hidden = hidden, .heads = heads, .head_dim = 64, .intermediate = intermediate,
          .vocab = 32128, .relative_buckets = 32, .biases = false, .norm = NormKind::kRmsNorm,
          .activation = Activation::kRelu, .positions = PositionKind::kRelativeBuckets};
}

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

const Family& t5_family() {
  static const Family f{
      .id = ModelFamily::kT5,
      .name = "t5",
      .organisations = {"google-t5"},
      .presets = {t5_preset("t5-small", 6, 512, 8, 2048), t5_preset("t5-base", 12, 768, 12, 3072)},
      .heads = {Head::kSeq2Seq},
      .modules = {{{Head::kSeq2Seq, "T5ForConditionalGeneration"}},
                  {{"encoder", "T5Stack"},
                   {"decoder", "T5Stack"},
                   {"**.block", "ModuleList"},
                   {"**.layer", "ModuleList"},
                   {"**.block.*", "T5Block"},
                   {"**.layer.0", "T5LayerSelfAttention"},
                   {"decoder.**.layer.1", "T5LayerCrossAttention"},
                   {"**.layer.*", "T5LayerFF"},
                   {"**.SelfAttention", "T5Attention"},
                   {"**.EncDecAttention", "T5Attention"},
                   {"**.DenseReluDense", "T5DenseActDense"},
                   {"**.layer_norm", "T5LayerNorm"},
                   {"**.final_layer_norm", "T5LayerNorm"},
                   {"**.shared", "Embedding"},
                   {"**.embed_tokens", "Embedding"},
                   {"**.relative_attention_bias", "Embedding"}},
                  "Linear"},  // q, k, v, o, wi, wo, lm_head
      .own_head_dim = true,
      .parameters = encoder_decoder_parameters,
      .build = build_t5,
  };
  return f;
}

}  // namespace tpusim::models
