// The task heads a model is built with (the Hugging Face class after the body: ...ForSequenceClassification,
// ...ForMaskedLM or BertForPreTraining, ...LMHeadModel / ...ForCausalLM, ...ForConditionalGeneration,
// ViTForImageClassification). A family (models/family.h) lists the heads it has; their names are the
// training workload's `task` values.
#pragma once
#include <cstdint>
#include <string>

namespace tpusim::models {

enum class Head { kSequenceClassification, kMaskedLm, kCausalLm, kSeq2Seq, kImageClassification };
inline constexpr Head kHeads[] = {Head::kSequenceClassification, Head::kMaskedLm, Head::kCausalLm, Head::kSeq2Seq,
                                  Head::kImageClassification};

struct HeadOptions {
  Head head = Head::kSequenceClassification;
  int64_t num_labels = 2;               // sequence and image classification: outputs (1 = regression with MSE)
  int64_t max_predictions_per_seq = 20;  // BERT's masked_lm (BertForPreTraining): P, capped at each graph's S
};

// "sequence_classification", "masked_lm", "causal_lm", "seq2seq", "image_classification".
std::string head_name(Head h);

}  // namespace tpusim::models
