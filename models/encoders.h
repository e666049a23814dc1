// RoBERTa, DistilBERT and ALBERT: BERT-like post-LayerNorm encoders with Hugging Face's
// sequence-classification heads (below) or masked-LM heads (EncoderHead::kMaskedLm), behind the
// model interface (models/model.h).
//
//   roberta:    RobertaForSequenceClassification. BERT's layer; embeddings with position ids
//               offset by padding_idx + 1 = 2 (rows 2..S+1 of 514; padding tokens read row 1), one
//               token-type row (the buffered zeros: a broadcast of row 0), LayerNorm eps 1e-5; no
//               pooler; head classifier.dense + tanh + classifier.out_proj on the <s> token.
//   distilbert: DistilBertForSequenceClassification. No token types, no pooler; attention scales
//               q by 1/sqrt(d) before the scores; head pre_classifier + ReLU + dropout 0.2 + classifier.
//   albert:     AlbertForSequenceClassification. Factorized embeddings of width E projected to H
//               (embedding_hidden_mapping_in); ONE layer's parameters applied `layers` times (the
//               graph reuses the same parameter nodes, so autodiff accumulates their gradients over
//               every application); gelu_new; v2 dropouts 0 (classifier_dropout_prob 0.1); pooler.
//
// Units (FSDP's default wrap, gradient checkpointing): the embeddings, each layer application
// (flagged `layer`) and "heads". ALBERT's shared parameters are created in the first application,
// so they belong to its unit: FSDP gathers them once per pass (later applications carry no
// parameters and FSDP skips parameter-less units) while checkpointing still recomputes every
// application.
//
// Per-step inputs: input_ids, attention_mask [B, S] s32; token_type_ids [B, S] (ALBERT only);
// labels [B] (float when num_labels == 1); masked_lm: labels [B, S] s32 (-100: not predicted).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "models/model.h"
#include "models/model_presets.h"

namespace tpusim::models {

enum class EncoderHead {
  kSequenceClassification,  // XForSequenceClassification (above)
  kMaskedLm,                // XForMaskedLM: transform + tied decoder on every token; labels [B, S], -100 ignored
};

// A RoBERTa, DistilBERT or ALBERT architecture (a preset with any model_config overrides) and its
// training head.
class EncoderModel : public Model {
 public:
  // Throws ConfigError unless `preset` is of family roberta, distilbert or albert.
  EncoderModel(ModelPreset preset, int64_t num_labels, EncoderHead head = EncoderHead::kSequenceClassification);
  std::string name() const override { return preset_.name; }
  const std::vector<std::string>& module_classes() const override;
  std::string module_class(const std::string& path) const override;
  ModelGraph build_forward(const StepShape& shape) const override;
  const ModelPreset& preset() const { return preset_; }
  int64_t num_labels() const { return num_labels_; }

 private:
  ModelPreset preset_;
  int64_t num_labels_;
  EncoderHead head_;
};

// True for the families EncoderModel builds.
bool is_encoder_family(ModelFamily f);

// Closed-form trainable parameters of the graph EncoderModel builds: model_parameters() of the
// preset (the base class, pooler included) minus the pooler where the classification class has
// none (RoBERTa), plus the classification head.
uint64_t encoder_classification_parameters(const ModelPreset& p, int64_t num_labels);
// The same for XForMaskedLM: the base class without its pooler, the transform (dense + LayerNorm;
// ALBERT's of width E) and the decoder's bias (its weight tied to the word embeddings).
uint64_t encoder_masked_lm_parameters(const ModelPreset& p);

}  // namespace tpusim::models
