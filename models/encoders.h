// RoBERTa, DistilBERT and ALBERT: BERT-like post-LayerNorm encoders with Hugging Face's
// sequence-classification heads (below) or masked-LM heads (head masked_lm), behind the
// model interface (models/model.h), on the BERT-like stack of models/bert_like.h.
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

#include "models/family.h"

namespace tpusim::models {

// The families (models/family.h), each with the heads sequence_classification and masked_lm.
const Family& roberta_family();
const Family& distilbert_family();
const Family& albert_family();

// Closed-form trainable parameters of the classification graph: text_encoder_parameters() of the
// architecture (the base class, pooler included) minus the pooler where the classification class has
// none (RoBERTa), plus the classification head.
uint64_t encoder_classification_parameters(const ModelArch& a, int64_t num_labels);
// The same for XForMaskedLM: the base class without its pooler, the transform (dense + LayerNorm;
// ALBERT's of width E) and the decoder's bias (its weight tied to the word embeddings).
uint64_t encoder_masked_lm_parameters(const ModelArch& a);

}  // namespace tpusim::models
