// The BERT-like post-LayerNorm text encoders (BERT, RoBERTa, DistilBERT, ALBERT) on the shared stack
// (models/stack.h): word (+ position + token-type) embeddings, LayerNorm and dropout, the extended
// attention mask, N post-LN layers. What differs is data (BertLikeSpec: the names of each family's
// modules, token types, RoBERTa's position ids, ALBERT's factorized embeddings and shared layer);
// each family's file (models/bert.cc, models/encoders.cc) adds its heads.
//
// Per-step inputs: input_ids, attention_mask [B, S] s32; token_type_ids [B, S] (BERT, ALBERT).
#pragma once
#include <cstdint>
#include <string>

#include "models/heads.h"
#include "models/stack.h"

namespace tpusim::models {

// The sequence-classification head on the first token: [dropout] -> dense -> tanh or ReLU -> dropout ->
// classifier (BertPooler + classifier, RobertaClassificationHead, DistilBERT's pre_classifier, AlbertPooler).
struct ClassifierSpec {
  std::string first_token{};  // the gathered first token's name
  std::string dropout_in{};   // "" none
  std::string dense{};
  EwOp activation = EwOp::kTanh;
  std::string activation_name{};
  std::string dropout{};
  double dropout_rate = 0.1;
  std::string out{};
};

// XForMaskedLM's head on every token: transform (dense of width hidden, or embedding_size where
// factorized; the activation; LayerNorm), decoder tied to the word embeddings, bias.
struct MaskedLmSpec {
  std::string dense{}, norm{}, bias{};
};

struct BertLikeSpec {
  std::string base{};                // the base model's prefix: "bert", "roberta", "distilbert", "albert"
  std::string layer_prefix{};        // of layer l: layer_prefix + l
  bool token_types = false;          // a token_type_ids input (BERT, ALBERT); else the buffered zeros, if any row
  bool positions_from_mask = false;  // RoBERTa's position ids, counted from the attention mask past padding_idx
  bool factorized = false;           // ALBERT: embeddings of width embedding_size, projected to hidden
  double hidden_dropout = 0.1;       // after the embeddings (and in the BlockSpec's residuals)
  BlockSpec block{};
  ClassifierSpec classifier{};
  MaskedLmSpec masked_lm{};          // unused by BERT's own (BertForPreTraining: models/bert.cc)
};

class BertLikeBuilder : public StackBuilder {
 public:
  BertLikeBuilder(const ModelArch& arch, const HeadOptions& head, const StepShape& shape, BertLikeSpec spec);

 protected:
  int embed(size_t stack) override;
  // The spec's classifier (sequence_classification) or masked-LM head (masked_lm) and loss.
  void head(int seq_out) override;
  // The classifier's first three ops: first token, dense, activation (BERT's pooler).
  int pooled(int seq_out);
  void classifier(int pooled);

  const BertLikeSpec spec_;
  const HeadOptions head_;
  const int64_t S_;
  int word_table_ = -1;  // stored word embeddings, tied to a masked-LM decoder

 private:
  int positions_from_mask(int pos_table, int mask, const std::string& p);
  void masked_lm(int seq_out);
};

// The checks every BERT-like family makes: B, S at most `max_seq` (the position rows `rows` names),
// heads dividing hidden, num_labels, float dtypes.
void check_bert_like(const ModelArch& a, const HeadOptions& h, const StepShape& s, int64_t max_seq,
                     const std::string& rows);

}  // namespace tpusim::models
