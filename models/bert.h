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
#include "models/model.h"
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
  DotPrecision precision = DotPrecision::kDefault;  // dot precision
};

// A BERT forward graph (models/model.h). logits: [B, num_labels] or the MLM logits [B*P, vocab].
// units: the embeddings "bert.embeddings" (with the extended attention mask), each encoder layer
// "bert.encoder.layer.L" (flagged `layer`), and "heads" (pooler, task heads, loss) — the units
// torch_xla's auto_wrap of BertLayer gives. modules: Hugging Face's BertForSequenceClassification
// or BertForPreTraining (after the head).
using BertGraph = ModelGraph;

// Forward graph with the loss. Throws ConfigError for B or S < 1, S > max_position, P < 1 or > S,
// or heads not dividing hidden.
BertGraph build_bert(const BertConfig& cfg, const BertGraphOptions& opts);

// The module classes of the BERT models (both heads), for fsdp_wrap_layer_classes.
const std::vector<std::string>& bert_module_classes();

// BERT behind the model interface: a configuration and its training head.
class BertModel : public Model {
 public:
  // `max_predictions_per_seq`: P of the masked_lm head, capped at each graph's S (with `longest`
  // padding a batch can be shorter than P).
  BertModel(BertConfig cfg, BertHead head, int64_t max_predictions_per_seq = 20);
  std::string name() const override { return cfg_.name; }
  const std::vector<std::string>& module_classes() const override { return bert_module_classes(); }
  std::string module_class(const std::string& path) const override;
  ModelGraph build_forward(const StepShape& shape) const override;
  const BertConfig& config() const { return cfg_; }

 private:
  BertConfig cfg_;
  BertHead head_;
  int64_t max_predictions_per_seq_;
};

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
