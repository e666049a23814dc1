// T5 sequence-to-sequence graphs as Hugging Face's T5ForConditionalGeneration computes them, for a
// batch B, padded source length S and padded target length T (StepShape::seq, StepShape::target):
//   * one token embedding `shared` [vocab, d_model] for the encoder, the decoder and (t5-small/base,
//     tie_word_embeddings) the LM head, whose input is scaled by d_model^-0.5;
//   * encoder blocks: T5LayerNorm (RMSNorm, weight only, eps 1e-6), self-attention without biases
//     and without the 1/sqrt(d) scaling plus a relative position bias, residual; T5LayerNorm, ReLU
//     FFN (wi, wo, no biases), residual; dropout 0.1 after the embedding, on the attention
//     probabilities, after ReLU, on each residual branch and after the final norm;
//   * the relative position bias (Raffel et al. 2020, sec. 2.1; transformers T5Attention
//     _relative_position_bucket): relative position j - i mapped to one of 32 buckets (half exact,
//     half logarithmic up to max_distance 128; bidirectional in the encoder, causal in the decoder),
//     gathered from a [buckets, heads] table that only the first block of each stack holds; the
//     other blocks reuse its bias. The buckets depend only on positions: f32 element-wise ops on
//     [L, L] iotas, truncated to s32 for the gather; cheap and without gradient;
//   * decoder blocks: causal self-attention, cross-attention over the encoder output (no position
//     bias; the encoder's padding mask), ReLU FFN; the final norm;
//   * loss: cross-entropy over the vocabulary at each target position, labels -100 at padding
//     (CrossEntropyLoss(ignore_index=-100)), the mean over labelled positions.
//
// Per-step inputs (role kInput, s32): input_ids, attention_mask [B, S]; decoder_input_ids [B, T]
// (the labels shifted right with decoder_start_token_id, which DataCollatorForSeq2Seq prepares on
// the host: prepare_decoder_input_ids_from_labels); labels [B, T]. run_summarization passes no
// decoder_attention_mask, so the decoder's self-attention is causal only; padded target positions
// carry label -100 and do not count.
#pragma once
#include <cstdint>

#include "models/family.h"

namespace tpusim::models {

// The T5 family (models/family.h): t5-small, t5-base (layers = encoder blocks, decoder_layers,
// hidden = d_model, heads, head_dim = d_kv, intermediate = d_ff, vocab, relative_buckets); head seq2seq
// (T5ForConditionalGeneration): loss and logits [B*T, vocab]. units: "encoder.embed_tokens" (the
// encoder's embedding lookup and dropout), each "encoder.block.L" (flagged `layer`; block 0 holds the
// relative bias table and the bucket computation), "decoder.embed_tokens" (the encoder's final norm and
// the decoder's embedding), each "decoder.block.L" (`layer`), and "heads" (the final norm, the tied LM
// head and the loss). Throws ConfigError for B, S or T < 1.
const Family& t5_family();

// HF's relative_attention_max_distance (config.json default 128, all public T5 checkpoints).
inline constexpr int64_t kT5MaxDistance = 128;

// T5's bucket of relative position `rel` = key - query (transformers T5Attention._relative_position_bucket),
// in integer arithmetic: the reference the graph's f32 composition is tested against.
int64_t t5_relative_bucket(int64_t rel, bool bidirectional, int64_t num_buckets, int64_t max_distance = kT5MaxDistance);

}  // namespace tpusim::models
