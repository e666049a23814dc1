#include "models/bert.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <limits>

#include "base/config_error.h"
#include "models/layers.h"
#include "models/losses.h"

namespace tpusim::models {

namespace {

void check(bool ok, const std::string& key, int64_t value, const std::string& rule) {
  if (!ok) throw ConfigError({"", key, 0, std::to_string(value), rule, ""});
}

// Builds one BERT graph; holds the shapes and collects parameters and inputs as it goes.
class BertBuilder {
 public:
  BertBuilder(const BertConfig& cfg, const BertGraphOptions& o)
      : cfg_(cfg), o_(o), t_(o.dtype), B_(o.batch), S_(o.seq), H_(cfg.hidden), nh_(cfg.heads), hd_(cfg.hidden / cfg.heads) {}

  BertGraph build() {
    int seq_out = encoder(embeddings());
    const int heads_first = int(g().nodes().size());
    int pooled = pooler(seq_out);
    if (o_.head == BertHead::kSequenceClassification)
      classification_head(pooled);
    else
      pretraining_heads(seq_out, pooled);
    add_unit(out_, "heads", heads_first);
    out_.modules = std::make_shared<BertModel>(cfg_, o_.head, o_.max_predictions_per_seq);
    mark_outputs(out_, o_.training);
    return std::move(out_);
  }

 private:
  Graph& g() { return out_.graph; }
  // The shared layer pieces (models/layers.h) over this graph.
  layers::LayerContext cx() { return {g(), out_.params, out_.inputs, t_, o_.param_dtype, o_.precision, o_.training}; }
  int stored_weight(const std::string& name, Dims shape) { return layers::stored_weight(cx(), name, std::move(shape)); }
  int compute(int x) { return layers::compute(cx(), x); }
  int weight(const std::string& name, Dims shape) { return layers::weight(cx(), name, std::move(shape)); }
  int input(const std::string& name, Dims shape, DType t) { return layers::input(cx(), name, std::move(shape), t); }
  int c(double v) { return layers::constant(cx(), v); }
  int linear(int x, int64_t in, int64_t out, const std::string& name) { return layers::linear(cx(), x, in, out, name); }
  int layer_norm(int x, const std::string& name) { return layers::layer_norm(cx(), x, cfg_.layer_norm_eps, name); }
  int dropout(int x, double rate, const std::string& name) { return layers::dropout(cx(), x, rate, name); }
  int gelu(int x, const std::string& name) { return layers::gelu(cx(), x, name); }

  // BertEmbeddings: word + position + token-type lookups, LayerNorm, dropout -> [B*S, H].
  int embeddings() {
    const std::string p = "bert.embeddings";
    int ids = input("input_ids", {B_, S_}, DType::kS32);
    int types = input("token_type_ids", {B_, S_}, DType::kS32);
    mask_ = input("attention_mask", {B_, S_}, DType::kS32);
    // Lookups read the stored tables; under autocast only the gathered rows are converted.
    int word_table = stored_weight(p + ".word_embeddings.weight", {cfg_.vocab, H_});
    int pos_table = stored_weight(p + ".position_embeddings.weight", {cfg_.max_position, H_});
    int type_table = stored_weight(p + ".token_type_embeddings.weight", {cfg_.type_vocab, H_});
    word_table_ = word_table;  // tied to the MLM decoder
    int words = compute(g().gather(word_table, ids, p + ".word_embeddings"));                              // [B, S, H]
    int pos = compute(g().gather(pos_table, g().iota({S_}, 0, DType::kS32), p + ".position_embeddings")); // [S, H]
    int types_e = compute(g().gather(type_table, types, p + ".token_type_embeddings"));                   // [B, S, H]
    int x = g().ew(EwOp::kAdd, words, types_e, p + ".add_token_type");
    x = g().ew_bcast(EwOp::kAdd, x, pos, {1, 2}, p + ".add_position");
    x = layer_norm(g().reshape(x, {B_ * S_, H_}), p + ".LayerNorm");
    return dropout(x, cfg_.hidden_dropout, p + ".dropout");
  }

  int encoder(int x) {
    // get_extended_attention_mask: (1 - mask) * finfo.min, [B, 1, 1, S]; kept as [B, S] and
    // broadcast over heads and queries in each layer (XLA drops the size-1 dims).
    int m = g().convert(mask_, t_);
    additive_mask_ = g().ew(EwOp::kMul, g().ew(EwOp::kSub, m, c(1.0), "bert.extended_attention_mask"),
                            c(double(std::numeric_limits<float>::max())), "bert.extended_attention_mask");
    add_unit(out_, "bert.embeddings", 0);
    for (int64_t l = 0; l < cfg_.layers; ++l) {
      const std::string name = "bert.encoder.layer." + std::to_string(l);
      const int first = int(g().nodes().size());
      x = layer(x, name);
      add_unit(out_, name, first, /*layer=*/true);
    }
    return x;
  }

  // BertLayer: self-attention + output (residual, LayerNorm), intermediate (GELU), output (residual, LayerNorm).
  int layer(int x, const std::string& p) {
    const std::string sa = p + ".attention.self";
    auto heads = [&](int y) { return g().reshape(y, {B_, S_, nh_, hd_}); };
    int q = heads(linear(x, H_, H_, sa + ".query"));
    int k = heads(linear(x, H_, H_, sa + ".key"));
    int v = heads(linear(x, H_, H_, sa + ".value"));
    // scores[b, h, i, j] = sum_d q[b, i, h, d] k[b, j, h, d] / sqrt(d) + mask[b, j]
    int s = g().dot(q, k, {{0, 2}, {0, 2}, {3}, {3}}, o_.precision, sa + ".scores");
    s = g().ew(EwOp::kMul, s, c(1.0 / std::sqrt(double(hd_))), sa + ".scale");
    s = g().ew_bcast(EwOp::kAdd, s, additive_mask_, {0, 3}, sa + ".mask");
    int probs = dropout(stable_softmax(g(), s, 3, sa + ".softmax"), cfg_.attention_dropout, sa + ".dropout");
    // context[b, h, i, d] = sum_j probs[b, h, i, j] v[b, j, h, d]; then permute to [B, S, heads, d].
    int ctx = g().dot(probs, v, {{0, 1}, {0, 2}, {3}, {1}}, o_.precision, sa + ".context");
    ctx = g().reshape(g().transpose(ctx, {0, 2, 1, 3}), {B_ * S_, H_});
    const std::string ao = p + ".attention.output";
    int a = dropout(linear(ctx, H_, H_, ao + ".dense"), cfg_.hidden_dropout, ao + ".dropout");
    a = layer_norm(g().ew(EwOp::kAdd, a, x, ao + ".residual"), ao + ".LayerNorm");
    int f = gelu(linear(a, H_, cfg_.intermediate, p + ".intermediate.dense"), p + ".intermediate.gelu");
    int o = dropout(linear(f, cfg_.intermediate, H_, p + ".output.dense"), cfg_.hidden_dropout, p + ".output.dropout");
    return layer_norm(g().ew(EwOp::kAdd, o, a, p + ".output.residual"), p + ".output.LayerNorm");
  }

  // BertPooler: the first token's hidden state (rows b*S of [B*S, H], a strided slice) -> Linear -> tanh.
  int pooler(int seq_out) {
    int first = g().ew(EwOp::kMul, g().iota({B_}, 0, DType::kS32), g().constant(double(S_), DType::kS32),
                       "bert.pooler.first_token_rows");
    int cls = g().gather(seq_out, first, "bert.pooler.first_token");
    return g().ew(EwOp::kTanh, linear(cls, H_, H_, "bert.pooler.dense"), -1, "bert.pooler.activation");
  }

  void classification_head(int pooled) {
    int x = dropout(pooled, cfg_.hidden_dropout, "dropout");
    out_.logits = linear(x, H_, cfg_.num_labels, "classifier");
    if (cfg_.num_labels == 1) {
      int labels = input("labels", {B_}, t_);
      out_.loss = mse_loss(g(), g().reshape(out_.logits, {B_}), labels, "loss");
    } else {
      int labels = input("labels", {B_}, DType::kS32);
      out_.loss = cross_entropy(g(), out_.logits, labels, -1, "loss");
    }
  }

  // BertPreTrainingHeads: MLM (transform + decoder tied to the word embeddings + bias) on the P
  // gathered positions per sequence, and NSP (Linear(H, 2) on the pooled output).
  void pretraining_heads(int seq_out, int pooled) {
    const int64_t P = o_.max_predictions_per_seq;
    int positions = input("masked_lm_positions", {B_, P}, DType::kS32);
    int lm_ids = input("masked_lm_ids", {B_, P}, DType::kS32);
    int lm_weights = input("masked_lm_weights", {B_, P}, t_);
    int nsp_labels = input("next_sentence_labels", {B_}, DType::kS32);
    const std::string t = "cls.predictions.transform";
    int x = g().reshape(g().gather(seq_out, positions, "cls.predictions.gather"), {B_ * P, H_});
    x = layer_norm(gelu(linear(x, H_, H_, t + ".dense"), t + ".gelu"), t + ".LayerNorm");
    int logits = g().dot(x, compute(word_table_), {{}, {}, {1}, {1}}, o_.precision, "cls.predictions.decoder");
    int bias = weight("cls.predictions.bias", {cfg_.vocab});
    out_.logits = g().ew_bcast(EwOp::kAdd, logits, bias, {1}, "cls.predictions.bias_add");
    int mlm = cross_entropy(g(), out_.logits, g().reshape(lm_ids, {B_ * P}), g().reshape(lm_weights, {B_ * P}),
                            "masked_lm_loss");
    int nsp_logits = linear(pooled, H_, 2, "cls.seq_relationship");
    int nsp = cross_entropy(g(), nsp_logits, nsp_labels, -1, "next_sentence_loss");
    out_.loss = g().ew(EwOp::kAdd, mlm, nsp, "loss");
  }

  const BertConfig& cfg_;
  const BertGraphOptions& o_;
  const DType t_;
  const int64_t B_, S_, H_, nh_, hd_;
  int mask_ = -1, additive_mask_ = -1, word_table_ = -1;
  BertGraph out_;
};

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

const std::vector<std::string>& bert_module_classes() {
  static const std::vector<std::string> c = {
      "BertForSequenceClassification", "BertForPreTraining", "BertModel", "BertEmbeddings", "BertEncoder",
      "BertLayer", "BertAttention", "BertSelfAttention", "BertSelfOutput", "BertIntermediate", "BertOutput",
      "BertPooler", "BertPreTrainingHeads", "BertLMPredictionHead", "BertPredictionHeadTransform",
      "Linear", "Embedding", "LayerNorm"};
  return c;
}

BertModel::BertModel(BertConfig cfg, BertHead head, int64_t max_predictions_per_seq)
    : cfg_(std::move(cfg)), head_(head), max_predictions_per_seq_(max_predictions_per_seq) {}

// The Hugging Face class of the module at `path`, a state_dict prefix of BertForSequenceClassification
// or BertForPreTraining.
std::string BertModel::module_class(const std::string& path) const {
  if (path.empty()) return head_ == BertHead::kMaskedLm ? "BertForPreTraining" : "BertForSequenceClassification";
  const size_t dot = path.rfind('.');
  const std::string last = dot == std::string::npos ? path : path.substr(dot + 1);
  const std::string parent = dot == std::string::npos ? "" : path.substr(0, dot);
  if (path == "bert") return "BertModel";
  if (path == "bert.embeddings") return "BertEmbeddings";
  if (path == "bert.encoder") return "BertEncoder";
  if (path == "bert.encoder.layer") return "ModuleList";
  if (parent == "bert.encoder.layer") return "BertLayer";
  if (path == "bert.pooler") return "BertPooler";
  if (path == "cls") return "BertPreTrainingHeads";
  if (path == "cls.predictions") return "BertLMPredictionHead";
  if (path == "cls.predictions.transform") return "BertPredictionHeadTransform";
  if (last == "LayerNorm") return "LayerNorm";
  if (ends_with(last, "_embeddings")) return "Embedding";
  if (last == "attention") return "BertAttention";
  if (last == "self") return "BertSelfAttention";
  if (last == "output") return ends_with(parent, ".attention") ? "BertSelfOutput" : "BertOutput";
  if (last == "intermediate") return "BertIntermediate";
  return "Linear";  // query, key, value, dense, classifier, seq_relationship
}

ModelGraph BertModel::build_forward(const StepShape& s) const {
  BertGraphOptions o;
  o.head = head_;
  o.batch = s.batch;
  o.seq = s.seq;
  o.max_predictions_per_seq = std::min<int64_t>(max_predictions_per_seq_, s.seq);
  o.dtype = s.dtype;
  o.param_dtype = s.param_dtype;
  o.training = s.training;
  o.precision = s.precision;
  return build_bert(cfg_, o);
}

BertGraph build_bert(const BertConfig& cfg, const BertGraphOptions& o) {
  check(o.batch >= 1, "batch", o.batch, "must be at least 1");
  check(o.seq >= 1 && o.seq <= cfg.max_position, "seq", o.seq,
        "must be in [1, " + std::to_string(cfg.max_position) + "] (max_position_embeddings of " + cfg.name + ")");
  check(cfg.heads >= 1 && cfg.hidden % cfg.heads == 0, "heads", cfg.heads,
        "must divide hidden (" + std::to_string(cfg.hidden) + ")");
  check(cfg.num_labels >= 1, "num_labels", cfg.num_labels, "must be at least 1");
  if (o.head == BertHead::kMaskedLm)
    check(o.max_predictions_per_seq >= 1 && o.max_predictions_per_seq <= o.seq, "max_predictions_per_seq",
          o.max_predictions_per_seq, "must be in [1, seq]");
  if (!is_float(o.dtype)) throw ConfigError({"", "dtype", 0, dtype_name(o.dtype), "must be f32 or bf16", ""});
  if (o.param_dtype && !is_float(*o.param_dtype))
    throw ConfigError({"", "param_dtype", 0, dtype_name(*o.param_dtype), "must be f32 or bf16", ""});
  return BertBuilder(cfg, o).build();
}

BertTrainingStep build_training_step(const BertConfig& cfg, const BertGraphOptions& opts, const OptimizerConfig& opt) {
  BertTrainingStep s;
  BertGraphOptions o = opts;
  o.training = true;
  s.model = build_bert(cfg, o);
  s.grads = build_backward(s.model.graph, s.model.loss, s.model.params);
  s.optimizer = append_optimizer(s.model.graph, s.grads, opt);
  return s;
}

uint64_t count_parameters(const Graph& g) {
  uint64_t n = 0;
  for (const auto& node : g.nodes())
    if (node.kind == OpKind::kParameter && node.role == ParamRole::kTrainable) n += uint64_t(num_elements(node.shape));
  return n;
}

uint64_t expected_parameters(const BertConfig& c, BertHead head) {
  const uint64_t H = uint64_t(c.hidden), I = uint64_t(c.intermediate);
  const uint64_t embeddings = (uint64_t(c.vocab) + uint64_t(c.max_position) + uint64_t(c.type_vocab)) * H + 2 * H;
  // q, k, v, attention output: 4 (H^2 + H); FFN: 2 H I + I + H; two LayerNorms: 4 H.
  const uint64_t layer = 4 * (H * H + H) + 2 * H * I + I + H + 4 * H;
  const uint64_t pooler = H * H + H;
  const uint64_t body = embeddings + uint64_t(c.layers) * layer + pooler;
  if (head == BertHead::kSequenceClassification) return body + H * uint64_t(c.num_labels) + uint64_t(c.num_labels);
  // MLM transform (dense + LayerNorm) + decoder bias (weight tied) + NSP Linear(H, 2).
  return body + (H * H + H + 2 * H) + uint64_t(c.vocab) + (2 * H + 2);
}

}  // namespace tpusim::models
