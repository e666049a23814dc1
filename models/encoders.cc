#include "models/encoders.h"

#include <cmath>
#include <limits>
#include <map>
#include <memory>

#include "base/config_error.h"
#include "models/layers.h"
#include "models/losses.h"

namespace tpusim::models {

namespace {

void check(bool ok, const std::string& key, int64_t value, const std::string& rule) {
  if (!ok) throw ConfigError({"", key, 0, std::to_string(value), rule, ""});
}

// The names one family gives a layer's modules (Hugging Face state_dict names after the layer prefix).
struct LayerNames {
  std::string query, key, value, attn_out, attn_ln, ffn_in, ffn_out, out_ln;
};

// Builds one encoder graph; the building blocks follow models/bert.cc (same ops, same order).
class EncoderBuilder {
 public:
  EncoderBuilder(const ModelPreset& p, EncoderHead head, int64_t num_labels, const StepShape& s)
      : p_(p), labels_(num_labels), s_(s), t_(s.dtype), B_(s.batch), S_(s.seq), H_(p.hidden), nh_(p.heads),
        hd_(p.hidden / p.heads) {
    // config.json of each family: RoBERTa layer_norm_eps 1e-5 (BERT's 1e-12 elsewhere); ALBERT v2
    // hidden and attention dropout 0, classifier_dropout_prob 0.1; DistilBERT seq_classif_dropout 0.2.
    eps_ = p.family == ModelFamily::kRoberta ? 1e-5 : 1e-12;
    hidden_dropout_ = attention_dropout_ = p.family == ModelFamily::kAlbert ? 0.0 : 0.1;
    head_dropout_ = p.family == ModelFamily::kDistilBert ? 0.2 : 0.1;
    masked_lm_ = head == EncoderHead::kMaskedLm;
  }

  ModelGraph build() {
    int x = embeddings();
    x = encoder(x);
    const int heads_first = int(g().nodes().size());
    head(x);
    add_unit(out_, "heads", heads_first);
    out_.modules = std::make_shared<EncoderModel>(p_, labels_, masked_lm_ ? EncoderHead::kMaskedLm : EncoderHead::kSequenceClassification);
    mark_outputs(out_, s_.training);
    return std::move(out_);
  }

 private:
  Graph& g() { return out_.graph; }
  std::string base() const {
    return p_.family == ModelFamily::kRoberta ? "roberta" : p_.family == ModelFamily::kDistilBert ? "distilbert" : "albert";
  }
  // The shared layer pieces (models/layers.h) over this graph; a parameter name seen before is the
  // same node (ALBERT's shared layer).
  layers::LayerContext cx() {
    return {g(), out_.params, out_.inputs, t_, s_.param_dtype, s_.precision, s_.training, &by_name_};
  }
  int stored_weight(const std::string& name, Dims shape) { return layers::stored_weight(cx(), name, std::move(shape)); }
  int compute(int x) { return layers::compute(cx(), x); }
  int weight(const std::string& name, Dims shape) { return layers::weight(cx(), name, std::move(shape)); }
  int input(const std::string& name, Dims shape, DType t) { return layers::input(cx(), name, std::move(shape), t); }
  int c(double v) { return layers::constant(cx(), v); }
  int linear(int x, int64_t in, int64_t out, const std::string& name) { return layers::linear(cx(), x, in, out, name); }
  int layer_norm(int x, const std::string& name) { return layers::layer_norm(cx(), x, eps_, name); }
  int dropout(int x, double rate, const std::string& name) { return layers::dropout(cx(), x, rate, name); }
  // "gelu" (RoBERTa, DistilBERT) and "gelu_new" (ALBERT).
  int gelu(int x, const std::string& name) { return layers::gelu(cx(), x, name); }
  int gelu_new(int x, const std::string& name) { return layers::gelu_new(cx(), x, name); }

  // Word (+ position + token-type) embeddings, LayerNorm, dropout -> [B*S, E].
  int embeddings() {
    const std::string p = base() + ".embeddings";
    const int64_t E = p_.embedding_size ? p_.embedding_size : H_;
    int ids = input("input_ids", {B_, S_}, DType::kS32);
    int types = p_.family == ModelFamily::kAlbert ? input("token_type_ids", {B_, S_}, DType::kS32) : -1;
    mask_ = input("attention_mask", {B_, S_}, DType::kS32);
    int word_table = word_table_ = stored_weight(p + ".word_embeddings.weight", {p_.vocab, E});
    int pos_table = stored_weight(p + ".position_embeddings.weight", {p_.max_position, E});
    int type_table =
        p_.type_vocab > 0 ? stored_weight(p + ".token_type_embeddings.weight", {p_.type_vocab, E}) : -1;
    int x = compute(g().gather(word_table, ids, p + ".word_embeddings"));  // [B, S, E]
    if (p_.family == ModelFamily::kRoberta) {
      // create_position_ids_from_input_ids: cumsum(ids != pad) * (ids != pad) + padding_idx, i.e.
      // s + 2 for tokens and 1 for (right) padding: mask * (s + 1) + 1.
      int s1 = g().ew(EwOp::kAdd, g().iota({S_}, 0, DType::kS32), g().constant(1, DType::kS32), p + ".position_ids");
      int pos_ids = g().ew(EwOp::kAdd, g().ew_bcast(EwOp::kMul, mask_, s1, {1}, p + ".position_ids"),
                           g().constant(1, DType::kS32), p + ".position_ids");
      int pos = compute(g().gather(pos_table, pos_ids, p + ".position_embeddings"));  // [B, S, E]
      // token_type_ids default to the buffered zeros: every token adds row 0.
      int type_row = compute(g().reshape(type_table, {E}));
      x = g().ew_bcast(EwOp::kAdd, x, type_row, {2}, p + ".add_token_type");
      x = g().ew(EwOp::kAdd, x, pos, p + ".add_position");
    } else {
      int pos = compute(g().gather(pos_table, g().iota({S_}, 0, DType::kS32), p + ".position_embeddings"));  // [S, E]
      if (types >= 0)
        x = g().ew(EwOp::kAdd, x, compute(g().gather(type_table, types, p + ".token_type_embeddings")),
                   p + ".add_token_type");
      x = g().ew_bcast(EwOp::kAdd, x, pos, {1, 2}, p + ".add_position");
    }
    x = layer_norm(g().reshape(x, {B_ * S_, E}), p + ".LayerNorm");
    return dropout(x, hidden_dropout_, p + ".dropout");
  }

  int encoder(int x) {
    int m = g().convert(mask_, t_);
    additive_mask_ = g().ew(EwOp::kMul, g().ew(EwOp::kSub, m, c(1.0), base() + ".extended_attention_mask"),
                            c(double(std::numeric_limits<float>::max())), base() + ".extended_attention_mask");
    if (p_.family == ModelFamily::kAlbert)  // ALBERT's projection runs in the encoder; BERT-style units keep it with the embeddings
      x = linear(x, p_.embedding_size, H_, "albert.encoder.embedding_hidden_mapping_in");
    add_unit(out_, base() + ".embeddings", 0);
    for (int64_t l = 0; l < p_.layers; ++l) {
      const int first = int(g().nodes().size());
      std::string prefix, unit;
      LayerNames n;
      if (p_.family == ModelFamily::kDistilBert) {
        prefix = unit = "distilbert.transformer.layer." + std::to_string(l);
        n = {".attention.q_lin", ".attention.k_lin", ".attention.v_lin", ".attention.out_lin", ".sa_layer_norm",
             ".ffn.lin1", ".ffn.lin2", ".output_layer_norm"};
      } else if (p_.family == ModelFamily::kAlbert) {
        prefix = "albert.encoder.albert_layer_groups.0.albert_layers.0";  // the one shared AlbertLayer
        unit = prefix + "#" + std::to_string(l);  // its l-th application
        n = {".attention.query", ".attention.key", ".attention.value", ".attention.dense", ".attention.LayerNorm",
             ".ffn", ".ffn_output", ".full_layer_layer_norm"};
      } else {
        prefix = unit = "roberta.encoder.layer." + std::to_string(l);
        n = {".attention.self.query", ".attention.self.key", ".attention.self.value", ".attention.output.dense",
             ".attention.output.LayerNorm", ".intermediate.dense", ".output.dense", ".output.LayerNorm"};
      }
      x = layer(x, prefix, n);
      add_unit(out_, unit, first, /*layer=*/true);
    }
    return x;
  }

  // Post-LayerNorm transformer layer: attention + residual + LayerNorm, FFN + residual + LayerNorm.
  int layer(int x, const std::string& p, const LayerNames& n) {
    auto heads = [&](int y) { return g().reshape(y, {B_, S_, nh_, hd_}); };
    int q = linear(x, H_, H_, p + n.query);
    const bool scale_q = p_.family == ModelFamily::kDistilBert;  // MultiHeadSelfAttention: q / sqrt(d)
    if (scale_q) q = g().ew(EwOp::kMul, q, c(1.0 / std::sqrt(double(hd_))), p + n.query + ".scale");
    q = heads(q);
    int k = heads(linear(x, H_, H_, p + n.key));
    int v = heads(linear(x, H_, H_, p + n.value));
    const std::string a = p + ".attention";
    int s = g().dot(q, k, {{0, 2}, {0, 2}, {3}, {3}}, s_.precision, a + ".scores");
    if (!scale_q) s = g().ew(EwOp::kMul, s, c(1.0 / std::sqrt(double(hd_))), a + ".scale");
    s = g().ew_bcast(EwOp::kAdd, s, additive_mask_, {0, 3}, a + ".mask");
    int probs = dropout(stable_softmax(g(), s, 3, a + ".softmax"), attention_dropout_, a + ".dropout");
    int ctx = g().dot(probs, v, {{0, 1}, {0, 2}, {3}, {1}}, s_.precision, a + ".context");
    ctx = g().reshape(g().transpose(ctx, {0, 2, 1, 3}), {B_ * S_, H_});
    // DistilBERT's out_lin output goes to the residual without dropout (TransformerBlock.forward).
    int o = linear(ctx, H_, H_, p + n.attn_out);
    if (p_.family != ModelFamily::kDistilBert) o = dropout(o, hidden_dropout_, p + n.attn_out + ".dropout");
    o = layer_norm(g().ew(EwOp::kAdd, o, x, p + n.attn_ln + ".residual"), p + n.attn_ln);
    int f = linear(o, H_, p_.intermediate, p + n.ffn_in);
    f = p_.activation == Activation::kGeluNew ? gelu_new(f, p + n.ffn_in + ".act") : gelu(f, p + n.ffn_in + ".act");
    int y = dropout(linear(f, p_.intermediate, H_, p + n.ffn_out), hidden_dropout_, p + n.ffn_out + ".dropout");
    return layer_norm(g().ew(EwOp::kAdd, y, o, p + n.out_ln + ".residual"), p + n.out_ln);
  }

  // The first token's hidden state (rows b*S of [B*S, H]).
  int first_token(int seq_out, const std::string& name) {
    int rows = g().ew(EwOp::kMul, g().iota({B_}, 0, DType::kS32), g().constant(double(S_), DType::kS32), name + "_rows");
    return g().gather(seq_out, rows, name);
  }

  // XForMaskedLM: transform (dense, activation, LayerNorm), decoder tied to the word embeddings
  // (ALBERT's of width E) + bias, on every token; labels [B, S] with -100 ignored, as
  // CrossEntropyLoss(ignore_index=-100) averages over the labelled tokens.
  void masked_lm_head(int seq_out) {
    const int64_t E = p_.embedding_size;
    std::string dense, norm, bias;
    if (p_.family == ModelFamily::kRoberta) dense = "lm_head.dense", norm = "lm_head.layer_norm", bias = "lm_head.bias";
    if (p_.family == ModelFamily::kDistilBert) dense = "vocab_transform", norm = "vocab_layer_norm", bias = "vocab_projector.bias";
    if (p_.family == ModelFamily::kAlbert) dense = "predictions.dense", norm = "predictions.LayerNorm", bias = "predictions.bias";
    const int64_t width = p_.family == ModelFamily::kAlbert ? E : H_;
    int x = linear(seq_out, H_, width, dense);
    x = p_.activation == Activation::kGeluNew ? gelu_new(x, dense + ".act") : gelu(x, dense + ".act");
    x = layer_norm(x, norm);
    int logits = g().dot(x, compute(word_table_), {{}, {}, {1}, {1}}, s_.precision, base() + ".decoder");
    out_.logits = g().ew_bcast(EwOp::kAdd, logits, weight(bias, {p_.vocab}), {1}, bias + "_add");
    int labels = g().reshape(input("labels", {B_, S_}, DType::kS32), {B_ * S_});
    int ignored = g().convert(g().ew(EwOp::kCmpEq, labels, g().constant(-100, DType::kS32), "loss.ignore_index"), t_);
    int weights = g().ew(EwOp::kAdd, g().ew(EwOp::kNeg, ignored, -1, "loss.labelled"), c(1.0), "loss.labelled");
    out_.loss = cross_entropy(g(), out_.logits, labels, weights, "loss");
  }

  void head(int seq_out) {
    if (masked_lm_) return masked_lm_head(seq_out);
    int x = first_token(seq_out, base() == "albert" ? "albert.pooler.first_token" : "first_token");
    if (p_.family == ModelFamily::kRoberta) {  // RobertaClassificationHead
      x = dropout(x, head_dropout_, "classifier.dropout_in");
      x = g().ew(EwOp::kTanh, linear(x, H_, H_, "classifier.dense"), -1, "classifier.activation");
      x = dropout(x, head_dropout_, "classifier.dropout");
      out_.logits = linear(x, H_, labels_, "classifier.out_proj");
    } else if (p_.family == ModelFamily::kDistilBert) {
      x = g().ew(EwOp::kRelu, linear(x, H_, H_, "pre_classifier"), -1, "pre_classifier.relu");
      x = dropout(x, head_dropout_, "dropout");
      out_.logits = linear(x, H_, labels_, "classifier");
    } else {  // AlbertPooler (dense + tanh), dropout, classifier
      x = g().ew(EwOp::kTanh, linear(x, H_, H_, "albert.pooler"), -1, "albert.pooler_activation");
      x = dropout(x, head_dropout_, "dropout");
      out_.logits = linear(x, H_, labels_, "classifier");
    }
    if (labels_ == 1) {
      int labels = input("labels", {B_}, t_);
      out_.loss = mse_loss(g(), g().reshape(out_.logits, {B_}), labels, "loss");
    } else {
      int labels = input("labels", {B_}, DType::kS32);
      out_.loss = cross_entropy(g(), out_.logits, labels, -1, "loss");
    }
  }

  const ModelPreset& p_;
  const int64_t labels_;
  const StepShape& s_;
  const DType t_;
  const int64_t B_, S_, H_, nh_, hd_;
  double eps_ = 1e-12, hidden_dropout_ = 0.1, attention_dropout_ = 0.1, head_dropout_ = 0.1;
  int mask_ = -1, additive_mask_ = -1, word_table_ = -1;
  bool masked_lm_ = false;
  std::map<std::string, int> by_name_;
  ModelGraph out_;
};

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Usable sequence length: RoBERTa's positions start at row 2, so S <= max_position - 2.
int64_t max_seq(const ModelPreset& p) { return p.family == ModelFamily::kRoberta ? p.max_position - 2 : p.max_position; }

}  // namespace

bool is_encoder_family(ModelFamily f) {
  return f == ModelFamily::kRoberta || f == ModelFamily::kDistilBert || f == ModelFamily::kAlbert;
}

EncoderModel::EncoderModel(ModelPreset preset, int64_t num_labels, EncoderHead head)
    : preset_(std::move(preset)), num_labels_(num_labels), head_(head) {
  if (!is_encoder_family(preset_.family))
    throw ConfigError({"", "model", 0, preset_.name, "is not a roberta, distilbert or albert model", ""});
  if (preset_.embedding_size == 0) preset_.embedding_size = preset_.hidden;
}

const std::vector<std::string>& EncoderModel::module_classes() const {
  static const std::vector<std::string> roberta = {
      "RobertaForSequenceClassification", "RobertaModel", "RobertaEmbeddings", "RobertaEncoder", "RobertaLayer",
      "RobertaAttention", "RobertaSelfAttention", "RobertaSelfOutput", "RobertaIntermediate", "RobertaOutput",
      "RobertaClassificationHead", "RobertaForMaskedLM", "RobertaLMHead", "Linear", "Embedding", "LayerNorm"};
  static const std::vector<std::string> distil = {
      "DistilBertForSequenceClassification", "DistilBertModel", "Embeddings", "Transformer", "TransformerBlock",
      "MultiHeadSelfAttention", "FFN", "DistilBertForMaskedLM", "Linear", "Embedding", "LayerNorm"};
  static const std::vector<std::string> albert = {
      "AlbertForSequenceClassification", "AlbertModel", "AlbertEmbeddings", "AlbertTransformer", "AlbertLayerGroup",
      "AlbertLayer", "AlbertAttention", "AlbertForMaskedLM", "AlbertMLMHead", "Linear", "Embedding", "LayerNorm"};
  return preset_.family == ModelFamily::kRoberta ? roberta : preset_.family == ModelFamily::kDistilBert ? distil : albert;
}

// The Hugging Face class of the module at `path` (a state_dict prefix of the classification model).
std::string EncoderModel::module_class(const std::string& path) const {
  const size_t dot = path.rfind('.');
  const std::string last = dot == std::string::npos ? path : path.substr(dot + 1);
  const std::string parent = dot == std::string::npos ? "" : path.substr(0, dot);
  const bool mlm = head_ == EncoderHead::kMaskedLm;
  if (last == "LayerNorm" || ends_with(last, "layer_norm")) return "LayerNorm";
  if (ends_with(last, "_embeddings")) return "Embedding";
  switch (preset_.family) {
    case ModelFamily::kRoberta:
      if (path.empty()) return mlm ? "RobertaForMaskedLM" : "RobertaForSequenceClassification";
      if (path == "lm_head") return "RobertaLMHead";
      if (path == "roberta") return "RobertaModel";
      if (path == "roberta.embeddings") return "RobertaEmbeddings";
      if (path == "roberta.encoder") return "RobertaEncoder";
      if (path == "roberta.encoder.layer") return "ModuleList";
      if (parent == "roberta.encoder.layer") return "RobertaLayer";
      if (path == "classifier") return "RobertaClassificationHead";
      if (last == "attention") return "RobertaAttention";
      if (last == "self") return "RobertaSelfAttention";
      if (last == "output") return ends_with(parent, ".attention") ? "RobertaSelfOutput" : "RobertaOutput";
      if (last == "intermediate") return "RobertaIntermediate";
      return "Linear";
    case ModelFamily::kDistilBert:
      if (path.empty()) return mlm ? "DistilBertForMaskedLM" : "DistilBertForSequenceClassification";
      if (path == "distilbert") return "DistilBertModel";
      if (path == "distilbert.embeddings") return "Embeddings";
      if (path == "distilbert.transformer") return "Transformer";
      if (path == "distilbert.transformer.layer") return "ModuleList";
      if (parent == "distilbert.transformer.layer") return "TransformerBlock";
      if (last == "attention") return "MultiHeadSelfAttention";
      if (last == "ffn") return "FFN";
      return "Linear";
    default:
      if (path.empty()) return mlm ? "AlbertForMaskedLM" : "AlbertForSequenceClassification";
      if (path == "predictions") return "AlbertMLMHead";
      if (path == "albert") return "AlbertModel";
      if (path == "albert.embeddings") return "AlbertEmbeddings";
      if (path == "albert.encoder") return "AlbertTransformer";
      if (path == "albert.encoder.albert_layer_groups" || ends_with(path, ".albert_layers")) return "ModuleList";
      if (parent == "albert.encoder.albert_layer_groups") return "AlbertLayerGroup";
      if (ends_with(parent, ".albert_layers")) return "AlbertLayer";
      if (last == "attention") return "AlbertAttention";
      return "Linear";
  }
}

ModelGraph EncoderModel::build_forward(const StepShape& s) const {
  const ModelPreset& p = preset_;
  check(s.batch >= 1, "batch", s.batch, "must be at least 1");
  check(s.seq >= 1 && s.seq <= max_seq(p), "seq", s.seq,
        "must be in [1, " + std::to_string(max_seq(p)) + "] (the position rows of " + p.name + ")");
  check(p.heads >= 1 && p.hidden % p.heads == 0, "heads", p.heads, "must divide hidden (" + std::to_string(p.hidden) + ")");
  check(num_labels_ >= 1, "num_labels", num_labels_, "must be at least 1");
  if (!is_float(s.dtype)) throw ConfigError({"", "dtype", 0, dtype_name(s.dtype), "must be f32 or bf16", ""});
  if (s.param_dtype && !is_float(*s.param_dtype))
    throw ConfigError({"", "param_dtype", 0, dtype_name(*s.param_dtype), "must be f32 or bf16", ""});
  return EncoderBuilder(p, head_, num_labels_, s).build();
}

uint64_t encoder_masked_lm_parameters(const ModelPreset& p) {
  const uint64_t H = uint64_t(p.hidden), E = uint64_t(p.embedding_size ? p.embedding_size : p.hidden);
  const uint64_t V = uint64_t(p.vocab), pooler = p.pooler ? H * H + H : 0;  // the MLM classes have no pooler
  const uint64_t width = p.family == ModelFamily::kAlbert ? E : H;  // the transform's output width
  // transform dense (H -> width), its LayerNorm, the decoder's bias (its weight is the word embedding)
  return model_parameters(p) - pooler + (H * width + width) + 2 * width + V;
}

uint64_t encoder_classification_parameters(const ModelPreset& p, int64_t num_labels) {
  const uint64_t H = uint64_t(p.hidden), L = uint64_t(num_labels);
  uint64_t n = model_parameters(p);  // the base class, with its pooler
  if (p.family == ModelFamily::kRoberta) return n - (H * H + H) + (H * H + H) + (H * L + L);  // head dense replaces the pooler
  if (p.family == ModelFamily::kDistilBert) return n + (H * H + H) + (H * L + L);  // pre_classifier, classifier
  return n + (H * L + L);  // ALBERT: its pooler is in the base count; the classifier
}

}  // namespace tpusim::models
