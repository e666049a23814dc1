#include "models/bert_like.h"

#include <limits>

namespace tpusim::models {

BertLikeBuilder::BertLikeBuilder(const ModelArch& arch, const HeadOptions& head, const StepShape& shape,
                                 BertLikeSpec spec)
    : StackBuilder(arch, shape), spec_(std::move(spec)), head_(head), S_(shape.seq) {
  stacks_ = {{.embed_unit = spec_.base + ".embeddings", .layer_prefix = spec_.layer_prefix, .layers = arch.layers,
              .length = S_, .shared = arch.shared_layers}};
  blocks_ = {spec_.block};
}

// Word + position (+ token-type) lookups, LayerNorm, dropout -> [B*S, E]; then the extended attention
// mask and ALBERT's projection to H (in its encoder; BERT-style units keep it with the embeddings).
int BertLikeBuilder::embed(size_t) {
  const std::string p = spec_.base + ".embeddings";
  const int64_t E = spec_.factorized ? arch_.embedding_size : H_;
  int ids = input("input_ids", {B_, S_}, DType::kS32);
  int types = spec_.token_types ? input("token_type_ids", {B_, S_}, DType::kS32) : -1;
  const int mask = input("attention_mask", {B_, S_}, DType::kS32);
  // Lookups read the stored tables; under autocast only the gathered rows are converted.
  int word_table = word_table_ = stored_weight(p + ".word_embeddings.weight", {arch_.vocab, E});
  int pos_table = stored_weight(p + ".position_embeddings.weight", {arch_.max_position, E});
  int type_table = arch_.type_vocab > 0 ? stored_weight(p + ".token_type_embeddings.weight", {arch_.type_vocab, E}) : -1;
  int x = compute(g().gather(word_table, ids, p + ".word_embeddings"));  // [B, S, E]
  if (spec_.positions_from_mask) {
    int pos = positions_from_mask(pos_table, mask, p);  // [B, S, E]
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
  x = norm(g().reshape(x, {B_ * S_, E}), p + ".LayerNorm");
  x = dropout(x, spec_.hidden_dropout, p + ".dropout");
  // get_extended_attention_mask: (1 - mask) * finfo.min, [B, 1, 1, S]; kept as [B, S] and
  // broadcast over heads and queries in each layer (XLA drops the size-1 dims).
  int m = g().convert(mask, t_);
  const std::string em = spec_.base + ".extended_attention_mask";
  int additive = g().ew(EwOp::kMul, g().ew(EwOp::kSub, m, c(1.0), em), c(double(std::numeric_limits<float>::max())), em);
  self_biases_[0] = {{additive, {0, 3}, "mask"}};
  if (spec_.factorized) x = dense(x, E, H_, spec_.base + ".encoder.embedding_hidden_mapping_in");
  return x;
}

// create_position_ids_from_input_ids: cumsum(ids != pad) * (ids != pad) + padding_idx, i.e. s + 2 for
// tokens and 1 for (right) padding: mask * (s + 1) + 1.
int BertLikeBuilder::positions_from_mask(int pos_table, int mask, const std::string& p) {
  int s1 = g().ew(EwOp::kAdd, g().iota({S_}, 0, DType::kS32), g().constant(1, DType::kS32), p + ".position_ids");
  int pos_ids = g().ew(EwOp::kAdd, g().ew_bcast(EwOp::kMul, mask, s1, {1}, p + ".position_ids"),
                       g().constant(1, DType::kS32), p + ".position_ids");
  return compute(g().gather(pos_table, pos_ids, p + ".position_embeddings"));
}

void BertLikeBuilder::head(int seq_out) {
  if (head_.head == Head::kMaskedLm) return masked_lm(seq_out);
  classifier(pooled(seq_out));
}

// The first token's hidden state (rows b*S of [B*S, H], a strided slice) -> dense -> activation.
int BertLikeBuilder::pooled(int seq_out) {
  const ClassifierSpec& c = spec_.classifier;
  int rows = g().ew(EwOp::kMul, g().iota({B_}, 0, DType::kS32), g().constant(double(S_), DType::kS32),
                    c.first_token + "_rows");
  int x = g().gather(seq_out, rows, c.first_token);
  if (!c.dropout_in.empty()) x = dropout(x, c.dropout_rate, c.dropout_in);
  return g().ew(c.activation, dense(x, H_, H_, c.dense), -1, c.activation_name);
}

void BertLikeBuilder::classifier(int pooled) {
  const ClassifierSpec& c = spec_.classifier;
  int x = dropout(pooled, c.dropout_rate, c.dropout);
  out_.logits = dense(x, H_, head_.num_labels, c.out);
  classification_loss(head_.num_labels);
}

// XForMaskedLM: labels [B, S] with -100 ignored, as CrossEntropyLoss(ignore_index=-100) averages over
// the labelled tokens.
void BertLikeBuilder::masked_lm(int seq_out) {
  const MaskedLmSpec& m = spec_.masked_lm;
  const int64_t width = spec_.factorized ? arch_.embedding_size : H_;
  int x = norm(activation(dense(seq_out, H_, width, m.dense), m.dense + ".act"), m.norm);
  int logits = g().dot(x, compute(word_table_), {{}, {}, {1}, {1}}, shape_.precision, spec_.base + ".decoder");
  out_.logits = g().ew_bcast(EwOp::kAdd, logits, weight(m.bias, {arch_.vocab}), {1}, m.bias + "_add");
  token_loss(S_, {"loss.ignore_index", "loss.labelled", "loss.labelled"});
}

void check_bert_like(const ModelArch& a, const HeadOptions& h, const StepShape& s, int64_t max_seq,
                     const std::string& rows) {
  check_batch(s);
  check_seq(s.seq, max_seq, rows);
  check_heads_divide_hidden(a);
  require(h.num_labels >= 1, "num_labels", h.num_labels, "must be at least 1");
  check_float(s);
}

}  // namespace tpusim::models
