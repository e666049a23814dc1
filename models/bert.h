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
#include "models/bert_presets.h"
#include "models/graph.h"
#include "models/optimizers.h"

namespace tpusim::models {

enum class BertHead {
  kSequenceClassification,  // pooled output -> dropout -> Linear(H, num_labels) -> cross-entropy (mean over B)
  kMaskedLm,                // BertForPreTraining: MLM on P gathered positions (tied decoder) + NSP
};

struct BertGraphOptions {
  BertHead head = BertHead::kSequenceClassification;
  int64_t batch = 0;  // B
  int64_t seq = 0;    // S (padded length, <= max_position)
  int64_t max_predictions_per_seq = 20;  // P, masked_lm only (BERT's pre-training data uses 20 at S=128, 76-80 at 512)
  DType dtype = DType::kF32;             // every float tensor (bf16 under XLA_USE_BF16)
  // Autocast-style mixed precision (torch.autocast(dtype=bfloat16)): trainable parameters stay in
  // this dtype (f32 master weights, hence f32 gradients and optimizer state) and are converted to
  // `dtype` where they are used; XLA fuses the convert into the consuming kernel. Unset: `dtype`.
  std::optional<DType> param_dtype{};
  bool training = true;                  // dropout on; off for evaluation graphs
  std::string precision = "default";     // dot precision
};

// A module's forward ops: node ids [first, last] (contiguous: the builder creates a module's ops,
// its parameters included, one after another).
struct ModuleRange {
  std::string name;  // "bert.embeddings", "bert.encoder.layer.3", "heads"
  int first = -1, last = -1;
};

struct BertGraph {
  Graph graph;
  int loss = -1;            // scalar; a graph output
  int logits = -1;          // [B, num_labels] or MLM logits [B*P, vocab]
  std::vector<int> params;  // trainable parameters in module order (tied weights once)
  std::vector<int> inputs;  // per-step inputs
  // The forward pass cut into the units FSDP wraps (torch_xla's auto_wrap of BertLayer): the
  // embeddings (with the extended attention mask), each encoder layer, and the heads (pooler,
  // task heads, loss). Together they cover every forward node, in order.
  std::vector<ModuleRange> units;
};

// Forward graph with the loss. Throws ConfigError for B or S < 1, S > max_position, P < 1 or > S,
// or heads not dividing hidden.
BertGraph build_bert(const BertConfig& cfg, const BertGraphOptions& opts);

// One training step: forward, backward (gradients of every trainable parameter) and the optimizer
// update, with updated parameters and state as outputs. The graph a PyTorch/XLA step cuts at mark_step.
struct BertTrainingStep {
  BertGraph model;
  Gradients grads;
  OptimizerGraph optimizer;
};
BertTrainingStep build_training_step(const BertConfig& cfg, const BertGraphOptions& opts, const OptimizerConfig& opt);

// Elements of all trainable parameters (tied weights are one parameter, counted once).
uint64_t count_parameters(const Graph& g);

// Closed-form parameter count of the model + head (checks the graph builder; see docs/models.md).
uint64_t expected_parameters(const BertConfig& cfg, BertHead head);

}  // namespace tpusim::models
