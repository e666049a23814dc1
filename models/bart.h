// BART sequence-to-sequence graphs as Hugging Face's BartForConditionalGeneration computes them, for
// a batch B, padded source length S and padded target length T (StepShape::seq, StepShape::target):
//   * one token embedding `model.shared` [vocab, d_model] for the encoder, the decoder and the LM head
//     (tied); per stack learned positions BartLearnedPositionalEmbedding with max_position + 2 rows,
//     position i read at row i + 2 (the offset fairseq kept), then layernorm_embedding and dropout
//     (scale_embedding false: no sqrt(d_model) factor);
//   * post-LN encoder layers (bart-large: normalize_before false): x = LN(x + dropout(self_attn(x)));
//     x = LN(x + dropout(fc2(gelu(fc1(x))))); attention projections with biases, queries scaled by
//     head_dim^-0.5 (written once with T5's in models/attention.h); dropout 0.1, attention and
//     activation dropout 0 (config.json);
//   * decoder layers: causal self-attention, cross-attention over the encoder output (the encoder's
//     padding mask), the FFN, each followed by its residual and LayerNorm;
//   * lm_logits = lm_head(x) + final_logits_bias. final_logits_bias is a registered buffer, zeros in the
//     checkpoint and never trained: not a parameter (BartModel's count is the preset's), here a
//     broadcast zero constant whose add costs what the real one costs, without reading 200 KB;
//   * loss: cross-entropy over the vocabulary at each target position, labels -100 at padding.
//
// Per-step inputs (s32): input_ids, attention_mask [B, S]; decoder_input_ids [B, T] (labels shifted
// right with decoder_start_token_id, prepared on the host by DataCollatorForSeq2Seq); labels [B, T].
#pragma once
#include "models/family.h"

namespace tpusim::models {

// The BART family (models/family.h): facebook/bart-large; head seq2seq (BartForConditionalGeneration):
// loss and logits [B*T, vocab]. units: "model.encoder.embed" (token and position lookups,
// layernorm_embedding), each "model.encoder.layers.L" (`layer`), "model.decoder.embed", each
// "model.decoder.layers.L" (`layer`), and "heads" (the tied LM head, final_logits_bias, the loss).
// Throws ConfigError for B, S or T < 1, or S or T beyond max_position.
const Family& bart_family();

}  // namespace tpusim::models
