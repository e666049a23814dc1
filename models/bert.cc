#include "models/bert.h"

#include <algorithm>

#include "models/bert_like.h"
#include "models/losses.h"

namespace tpusim::models {

namespace {

// BERT config.json: hidden_dropout_prob and attention_probs_dropout_prob 0.1, layer_norm_eps 1e-12.
constexpr double kDropout = 0.1;

// BertLayer: self-attention + output (residual, LayerNorm), intermediate (GELU), output (residual,
// LayerNorm); BertPooler (dense + tanh on the first token) before the classifier.
BertLikeSpec bert_spec() {
  return {.base = "bert", .layer_prefix = "bert.encoder.layer.", .token_types = true, .hidden_dropout = kDropout,
          .block = {.norm_eps = 1e-12, .attention_dropout = kDropout,
                    .self = {".attention.output.LayerNorm", ".attention.output.dropout", kDropout, ".attention.output.residual"},
                    .mlp = {".output.LayerNorm", ".output.dropout", kDropout, ".output.residual"},
                    .self_attn = {".attention.self", ".attention.self.query", ".attention.self.key",
                                  ".attention.self.value", ".attention.output.dense"},
                    .ffn = {.in = ".intermediate.dense", .act = ".intermediate.gelu", .out = ".output.dense"}},
          .classifier = {.first_token = "bert.pooler.first_token", .dense = "bert.pooler.dense",
                         .activation_name = "bert.pooler.activation", .dropout = "dropout", .dropout_rate = kDropout,
                         .out = "classifier"}};
}

// BERT's own head is BertForPreTraining's; its classifier is the BERT-like one.
class BertBuilder final : public BertLikeBuilder {
 public:
  BertBuilder(const ModelArch& a, const HeadOptions& h, const StepShape& s) : BertLikeBuilder(a, h, s, bert_spec()) {}

 private:
  void head(int seq_out) override {
    if (head_.head == Head::kMaskedLm)
      pretraining_heads(seq_out, pooled(seq_out));
    else
      classifier(pooled(seq_out));
  }

  // BertPreTrainingHeads: MLM (transform + decoder tied to the word embeddings + bias) on the P
  // gathered positions per sequence, and NSP (Linear(H, 2) on the pooled output).
  void pretraining_heads(int seq_out, int pooled) {
    const int64_t P = head_.max_predictions_per_seq;
    int positions = input("masked_lm_positions", {B_, P}, DType::kS32);
    int lm_ids = input("masked_lm_ids", {B_, P}, DType::kS32);
    int lm_weights = input("masked_lm_weights", {B_, P}, t_);
    int nsp_labels = input("next_sentence_labels", {B_}, DType::kS32);
    const std::string t = "cls.predictions.transform";
    int x = g().reshape(g().gather(seq_out, positions, "cls.predictions.gather"), {B_ * P, H_});
    x = norm(activation(dense(x, H_, H_, t + ".dense"), t + ".gelu"), t + ".LayerNorm");
    int logits = g().dot(x, compute(word_table_), {{}, {}, {1}, {1}}, shape_.precision, "cls.predictions.decoder");
    int bias = weight("cls.predictions.bias", {arch_.vocab});
    out_.logits = g().ew_bcast(EwOp::kAdd, logits, bias, {1}, "cls.predictions.bias_add");
    int mlm = cross_entropy(g(), out_.logits, g().reshape(lm_ids, {B_ * P}), g().reshape(lm_weights, {B_ * P}),
                            "masked_lm_loss");
    int nsp_logits = dense(pooled, H_, 2, "cls.seq_relationship");
    int nsp = cross_entropy(g(), nsp_logits, nsp_labels, -1, "next_sentence_loss");
    out_.loss = g().ew(EwOp::kAdd, mlm, nsp, "loss");
  }
};

void check_bert(const ModelArch& a, const HeadOptions& h, const StepShape& s) {
  check_bert_like(a, h, s, a.max_position, "max_position_embeddings of " + a.name);
  if (h.head == Head::kMaskedLm)
    require(h.max_predictions_per_seq >= 1 && h.max_predictions_per_seq <= s.seq, "max_predictions_per_seq",
            h.max_predictions_per_seq, "must be in [1, seq]");
}

// With `longest` padding a batch can be shorter than P: the model caps P at each graph's S.
ModelGraph build_bert_forward(const ModelArch& a, const HeadOptions& h, const StepShape& s) {
  HeadOptions capped = h;
  capped.max_predictions_per_seq = std::min<int64_t>(h.max_predictions_per_seq, s.seq);
  check_bert(a, capped, s);
  return BertBuilder(a, capped, s).build();
}

// {name, layers, hidden, heads, intermediate, vocab}; 512 positions and 2 token types for all (each
// model's config.json; the numbers also appear in docs/sources.md).
ModelArch bert_preset(const std::string& name, int64_t layers, int64_t hidden, int64_t heads, int64_t vocab) {
  return {.name = name, .family = ModelFamily::kBert, .counted_class = "BertModel", .layers = layers, .hidden = hidden,
          .heads = heads, .intermediate = 4 * hidden, .vocab = vocab, .max_position = 512, .type_vocab = 2,
          .pooler = true};
}

}  // namespace

const Family& bert_family() {
  static const Family f{
      .id = ModelFamily::kBert,
      .name = "bert",
      .organisations = {"google-bert", "google"},
      .presets = {bert_preset("bert-base-uncased", 12, 768, 12, 30522), bert_preset("bert-base-cased", 12, 768, 12, 28996),
                  bert_preset("bert-large-uncased", 24, 1024, 16, 30522),
                  bert_preset("bert-large-cased", 24, 1024, 16, 28996),
                  // google/bert_uncased_L-2_H-128_A-2 ("BERT-Tiny" of Turc et al., 2019): for tests.
                  bert_preset("bert-tiny", 2, 128, 2, 30522)},
      .heads = {Head::kSequenceClassification, Head::kMaskedLm},
      .modules = {{{Head::kSequenceClassification, "BertForSequenceClassification"},
                   {Head::kMaskedLm, "BertForPreTraining"}},
                  {{"bert", "BertModel"},
                   {"bert.embeddings", "BertEmbeddings"},
                   {"bert.encoder", "BertEncoder"},
                   {"bert.encoder.layer", "ModuleList"},
                   {"bert.encoder.layer.*", "BertLayer"},
                   {"bert.pooler", "BertPooler"},
                   {"cls", "BertPreTrainingHeads"},
                   {"cls.predictions", "BertLMPredictionHead"},
                   {"cls.predictions.transform", "BertPredictionHeadTransform"},
                   {"**.LayerNorm", "LayerNorm"},
                   {"**.*_embeddings", "Embedding"},
                   {"**.attention", "BertAttention"},
                   {"**.self", "BertSelfAttention"},
                   {"**.attention.output", "BertSelfOutput"},
                   {"**.output", "BertOutput"},
                   {"**.intermediate", "BertIntermediate"}},
                  "Linear"},  // query, key, value, dense, classifier, seq_relationship
      .parameters = text_encoder_parameters,
      .build = build_bert_forward,
  };
  return f;
}

BertGraph build_bert(const ModelArch& arch, const BertGraphOptions& o) {
  const HeadOptions head{.head = o.head, .num_labels = o.num_labels, .max_predictions_per_seq = o.max_predictions_per_seq};
  const StepShape shape{.batch = o.batch, .seq = o.seq, .dtype = o.dtype, .param_dtype = o.param_dtype,
                        .training = o.training, .precision = o.precision};
  check_bert(arch, head, shape);
  return TransformerModel(bert_family(), arch, head).build_forward(shape);
}

BertTrainingStep build_training_step(const ModelArch& arch, const BertGraphOptions& opts, const OptimizerConfig& opt) {
  BertTrainingStep s;
  BertGraphOptions o = opts;
  o.training = true;
  s.model = build_bert(arch, o);
  s.grads = build_backward(s.model.graph, s.model.loss, s.model.params);
  s.optimizer = append_optimizer(s.model.graph, s.grads, opt);
  return s;
}

uint64_t expected_parameters(const ModelArch& c, Head head, int64_t num_labels) {
  const uint64_t H = uint64_t(c.hidden), I = uint64_t(c.intermediate);
  const uint64_t embeddings = (uint64_t(c.vocab) + uint64_t(c.max_position) + uint64_t(c.type_vocab)) * H + 2 * H;
  // q, k, v, attention output: 4 (H^2 + H); FFN: 2 H I + I + H; two LayerNorms: 4 H.
  const uint64_t layer = 4 * (H * H + H) + 2 * H * I + I + H + 4 * H;
  const uint64_t pooler = H * H + H;
  const uint64_t body = embeddings + uint64_t(c.layers) * layer + pooler;
  if (head == Head::kSequenceClassification) return body + H * uint64_t(num_labels) + uint64_t(num_labels);
  // MLM transform (dense + LayerNorm) + decoder bias (weight tied) + NSP Linear(H, 2).
  return body + (H * H + H + 2 * H) + uint64_t(c.vocab) + (2 * H + 2);
}

}  // namespace tpusim::models
