// BERT graphs exactly as Hugging Face's BertModel computes them, with the training heads of
// BertForSequenceClassification and BertForPreTraining, for one batch B and padded length S.
//
// Hidden states are kept as [B*S, H] (Linear and LayerNorm see 2-D rows); attention views them as
// [B, S, heads, head_dim] and its two dots carry the head/batch dims as DotGeneral batch dims (the
// permutes of PyTorch's implementation are absorbed into the dots' dimension numbers, as XLA does).
// Trainable parameters are graph Parameters (role kTrainable) named as in the model's state_dict,
// e.g. "bert.encoder.layer.0.attention.self.query.weight"; ops carry their module's name as a prefix.
//
// Per-step inputs (role kInput), s32 unless noted:
//   input_ids, token_type_ids, attention_mask [B, S]
//   sequence_classification: labels [B] (float when num_labels == 1: regression with MSE)
//   masked_lm: masked_lm_positions, masked_lm_ids [B, P]; masked_lm_weights [B, P] (float);
//              next_sentence_labels [B]. Positions are row indices into the [B*S, H] sequence output
//              (the input pipeline adds b*S), as BERT's reference gather_indexes does.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "models/autodiff.h"
#include "models/family.h"
#include "models/graph.h"
#include "models/model.h"
#include "models/optimizers.h"

namespace tpusim::models {

// The BERT family (models/family.h): bert-base/large-(un)cased and bert-tiny; heads
// sequence_classification (BertForSequenceClassification: pooled output -> dropout -> Linear(H,
// num_labels) -> cross-entropy, mean over B; MSE for one label) and masked_lm (BertForPreTraining: MLM
// on P gathered positions with the tied decoder, plus NSP). logits: [B, num_labels] or the MLM logits
// [B*P, vocab]. units: the embeddings "bert.embeddings" (with the extended attention mask), each
// encoder layer "bert.encoder.layer.L" (flagged `layer`), and "heads" (pooler, task heads, loss) — the
// units torch_xla's auto_wrap of BertLayer gives. Throws ConfigError for B or S < 1, S > max_position,
// P < 1, or heads not dividing hidden.
const Family& bert_family();

// A BERT graph for tests and benchmarks: the head, its options and the step shape in one.
struct BertGraphOptions {
  Head head = Head::kSequenceClassification;  // or kMaskedLm
  int64_t batch = 0;  // B
  int64_t seq = 0;    // S (padded length, <= max_position)
  int64_t max_predictions_per_seq = 20;  // P, masked_lm only (BERT's pre-training data uses 20 at S=128, 76-80 at 512)
  int64_t num_labels = 2;                // sequence_classification outputs (1 = regression)
  DType dtype = DType::kF32;             // every float tensor (bf16 under XLA_USE_BF16)
  // Autocast-style mixed precision (torch.autocast(dtype=bfloat16)): trainable parameters stay in
  // this dtype (f32 master weights, hence f32 gradients and optimizer state) and are converted to
  // `dtype` where they are used; XLA fuses the convert into the consuming kernel. Unset: `dtype`.
  std::optional<DType> param_dtype{};
  bool training = true;                  // dropout on; off for evaluation graphs
  DotPrecision precision = DotPrecision::kDefault;  // dot precision
};

using BertGraph = ModelGraph;

// Forward graph with the loss of a BERT architecture. Throws ConfigError as the family's builder, and
// for P > S (the model interface caps P at S instead).
BertGraph build_bert(const ModelArch& arch, const BertGraphOptions& opts);

// One training step: forward, backward (gradients of every trainable parameter) and the optimizer
// update, with updated parameters and state as outputs. The graph a PyTorch/XLA step cuts at mark_step.
struct BertTrainingStep {
  BertGraph model;
  Gradients grads;
  OptimizerGraph optimizer;
};
BertTrainingStep build_training_step(const ModelArch& arch, const BertGraphOptions& opts, const OptimizerConfig& opt);

// Closed-form parameter count of the model + head (checks the graph builder; see docs/models.md).
uint64_t expected_parameters(const ModelArch& arch, Head head, int64_t num_labels = 2);

}  // namespace tpusim::models
