#include "models/bart.h"

#include <cmath>
#include <limits>
#include <memory>

#include "base/config_error.h"
#include "models/attention.h"
#include "models/layers.h"
#include "models/losses.h"

namespace tpusim::models {

namespace {

// facebook/bart-large config.json: dropout 0.1, attention_dropout 0.0, activation_dropout 0.0,
// activation_function gelu; nn.LayerNorm's default eps 1e-5.
constexpr double kDropout = 0.1;
constexpr double kAttentionDropout = 0.0;
constexpr double kNormEps = 1e-5;

void check(bool ok, const std::string& key, int64_t value, const std::string& rule) {
  if (!ok) throw ConfigError({"", key, 0, std::to_string(value), rule, ""});
}

class BartBuilder {
 public:
  BartBuilder(const ModelPreset& p, const StepShape& s)
      : p_(p), s_(s), t_(s.dtype), B_(s.batch), S_(s.seq), T_(s.target), H_(p.hidden) {}

  ModelGraph build() {
    int x = embed("model.encoder", "input_ids", S_);
    const int mask = input("attention_mask", {B_, S_});
    padding_ = layers::padding_bias(cx(), mask, "model.encoder");
    add_unit(out_, "model.encoder.embed", 0);
    for (int64_t l = 0; l < p_.layers; ++l) {
      const std::string name = "model.encoder.layers." + std::to_string(l);
      const int first = next();
      x = encoder_layer(x, name);
      add_unit(out_, name, first, /*layer=*/true);
    }
    const int mid = next();
    int y = embed("model.decoder", "decoder_input_ids", T_);
    causal_ = layers::causal_bias(cx(), T_, "model.decoder");
    add_unit(out_, "model.decoder.embed", mid);
    for (int64_t l = 0; l < p_.decoder_layers; ++l) {
      const std::string name = "model.decoder.layers." + std::to_string(l);
      const int first = next();
      y = decoder_layer(y, x, name);
      add_unit(out_, name, first, /*layer=*/true);
    }
    const int heads_first = next();
    lm_head_and_loss(y);
    add_unit(out_, "heads", heads_first);
    out_.modules = std::make_shared<BartModel>(p_);
    mark_outputs(out_, s_.training);
    return std::move(out_);
  }

 private:
  Graph& g() { return out_.graph; }
  int next() { return int(g().nodes().size()); }
  layers::LayerContext cx() { return {g(), out_.params, out_.inputs, t_, s_.param_dtype, s_.precision, s_.training}; }
  int input(const std::string& name, Dims shape) { return layers::input(cx(), name, std::move(shape), DType::kS32); }
  int c(double v) { return layers::constant(cx(), v); }
  int layer_norm(int x, const std::string& name) { return layers::layer_norm(cx(), x, kNormEps, name); }
  int dropout(int x, const std::string& name) { return layers::dropout(cx(), x, kDropout, name); }

  // shared(ids) + embed_positions(arange(L) + 2) -> layernorm_embedding -> dropout: [B*L, H].
  int embed(const std::string& stack, const std::string& ids_name, int64_t L) {
    const int ids = input(ids_name, {B_, L});
    if (shared_ < 0) shared_ = layers::stored_weight(cx(), "model.shared.weight", {p_.vocab, H_});
    int words = layers::compute(cx(), g().gather(shared_, ids, stack + ".embed_tokens"));  // [B, L, H]
    const int table = layers::weight(cx(), stack + ".embed_positions.weight", {p_.max_position + p_.position_offset, H_});
    int rows = g().ew(EwOp::kAdd, g().iota({L}, 0, DType::kS32), g().constant(double(p_.position_offset), DType::kS32),
                      stack + ".position_ids");
    int pos = g().gather(table, rows, stack + ".embed_positions");                         // [L, H]
    int x = g().ew_bcast(EwOp::kAdd, words, pos, {1, 2}, stack + ".add_positions");
    return dropout(layer_norm(g().reshape(x, {B_ * L, H_}), stack + ".layernorm_embedding"), stack + ".dropout");
  }

  layers::AttentionSpec spec(const std::string& name, int64_t Lq, int64_t Lk) const {
    return {.name = name, .proj = {"q_proj", "k_proj", "v_proj", "out_proj"}, .batch = B_, .q_len = Lq, .kv_len = Lk,
            .hidden = H_, .heads = p_.heads, .head_dim = p_.head_dim, .biases = true,
            .scale = 1.0 / std::sqrt(double(p_.head_dim)), .dropout = kAttentionDropout};
  }

  // LN(x + dropout(attention)), post-LN.
  int attention_block(int x, int kv, const std::string& p, const std::string& module, int64_t Lq, int64_t Lk,
                      const std::vector<layers::ScoreBias>& biases) {
    int a = layers::attention(cx(), spec(p + "." + module, Lq, Lk), x, kv < 0 ? x : kv, biases);
    return layer_norm(g().ew(EwOp::kAdd, x, dropout(a, p + "." + module + ".dropout"), p + "." + module + ".residual"),
                      p + "." + module + "_layer_norm");
  }

  // LN(x + dropout(fc2(gelu(fc1(x))))).
  int ffn_block(int x, const std::string& p) {
    int h = layers::gelu(cx(), layers::linear(cx(), x, H_, p_.intermediate, p + ".fc1"), p + ".activation_fn");
    h = layers::linear(cx(), h, p_.intermediate, H_, p + ".fc2");
    return layer_norm(g().ew(EwOp::kAdd, x, dropout(h, p + ".ffn_dropout"), p + ".ffn_residual"), p + ".final_layer_norm");
  }

  int encoder_layer(int x, const std::string& p) {
    x = attention_block(x, -1, p, "self_attn", S_, S_, {{padding_, {0, 3}, "padding_mask"}});
    return ffn_block(x, p);
  }

  int decoder_layer(int y, int enc, const std::string& p) {
    y = attention_block(y, -1, p, "self_attn", T_, T_, {{causal_, {2, 3}, "causal_mask"}});
    y = attention_block(y, enc, p, "encoder_attn", T_, S_, {{padding_, {0, 3}, "padding_mask"}});
    return ffn_block(y, p);
  }

  // lm_head (tied to model.shared) + final_logits_bias (a zero buffer, see the header);
  // CrossEntropyLoss(ignore_index=-100) over the labelled target positions.
  void lm_head_and_loss(int y) {
    int logits = g().dot(y, layers::compute(cx(), shared_), {{}, {}, {1}, {1}}, s_.precision, "lm_head");
    out_.logits = g().ew_bcast(EwOp::kAdd, logits, g().full(0.0, {p_.vocab}, t_), {1}, "final_logits_bias");
    int labels = g().reshape(input("labels", {B_, T_}), {B_ * T_});
    int ignored = g().convert(g().ew(EwOp::kCmpEq, labels, g().constant(-100, DType::kS32), "loss.ignored"), t_);
    int weights = g().ew(EwOp::kAdd, g().ew(EwOp::kNeg, ignored, -1, "loss.neg_ignored"), c(1.0), "loss.weights");
    out_.loss = cross_entropy(g(), out_.logits, labels, weights, "loss");
  }

  const ModelPreset& p_;
  const StepShape& s_;
  const DType t_;
  const int64_t B_, S_, T_, H_;
  int shared_ = -1, padding_ = -1, causal_ = -1;
  ModelGraph out_;
};

}  // namespace

const std::vector<std::string>& bart_module_classes() {
  static const std::vector<std::string> c = {"BartForConditionalGeneration", "BartModel", "BartEncoder", "BartDecoder",
                                             "BartEncoderLayer", "BartDecoderLayer", "BartAttention",
                                             "BartLearnedPositionalEmbedding", "Linear", "Embedding", "LayerNorm"};
  return c;
}

BartModel::BartModel(ModelPreset p) : p_(std::move(p)) {}

const std::vector<std::string>& BartModel::module_classes() const { return bart_module_classes(); }

// The Hugging Face class of the module at `path`, a state_dict prefix of BartForConditionalGeneration.
std::string BartModel::module_class(const std::string& path) const {
  if (path.empty()) return "BartForConditionalGeneration";
  if (path == "model") return "BartModel";
  if (path == "model.encoder") return "BartEncoder";
  if (path == "model.decoder") return "BartDecoder";
  const size_t dot = path.rfind('.');
  const std::string last = dot == std::string::npos ? path : path.substr(dot + 1);
  const std::string parent = dot == std::string::npos ? "" : path.substr(0, dot);
  if (last == "layers") return "ModuleList";
  if (parent == "model.encoder.layers") return "BartEncoderLayer";
  if (parent == "model.decoder.layers") return "BartDecoderLayer";
  if (last == "self_attn" || last == "encoder_attn") return "BartAttention";
  if (last == "embed_positions") return "BartLearnedPositionalEmbedding";
  if (last == "shared" || last == "embed_tokens") return "Embedding";
  if (last.size() > 10 && last.substr(last.size() - 10) == "layer_norm") return "LayerNorm";
  if (last == "layernorm_embedding") return "LayerNorm";
  return "Linear";  // q_proj, k_proj, v_proj, out_proj, fc1, fc2, lm_head
}

ModelGraph BartModel::build_forward(const StepShape& s) const {
  check(s.batch >= 1, "batch", s.batch, "must be at least 1");
  check(s.seq >= 1 && s.seq <= p_.max_position, "seq", s.seq,
        "must be in [1, " + std::to_string(p_.max_position) + "] (max_position_embeddings of " + p_.name + ")");
  check(s.target >= 1 && s.target <= p_.max_position, "max_target_length", s.target,
        "must be in [1, " + std::to_string(p_.max_position) + "] (max_position_embeddings of " + p_.name + ")");
  check(p_.heads >= 1 && p_.hidden % p_.heads == 0, "heads", p_.heads, "must divide hidden (" + std::to_string(p_.hidden) + ")");
  if (!is_float(s.dtype)) throw ConfigError({"", "dtype", 0, dtype_name(s.dtype), "must be f32 or bf16", ""});
  if (s.param_dtype && !is_float(*s.param_dtype))
    throw ConfigError({"", "param_dtype", 0, dtype_name(*s.param_dtype), "must be f32 or bf16", ""});
  return BartBuilder(p_, s).build();
}

}  // namespace tpusim::models
