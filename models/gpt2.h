// GPT-2 causal-LM graphs as Hugging Face's GPT2LMHeadModel computes them, for one batch B and
// padded length S: token + learned position embeddings (wte, wpe), pre-LayerNorm decoder blocks
// (ln_1, causal self-attention with the fused Conv1D c_attn [H, 3H] and c_proj; ln_2, MLP c_fc
// [H, 4H], gelu_new, c_proj), the final ln_f and the LM head tied to wte (one parameter used twice:
// autodiff adds the two gradients).
//
// Hidden states are [B*S, H] rows as in models/bert.h; attention's dots carry batch and head dims as
// DotGeneral batch dims. Conv1D weights are [in, out] (y = x W + b), as GPT-2's state_dict stores them.
//
// Per-step inputs (role kInput, s32):
//   input_ids, attention_mask [B, S]
//   labels [B, S]: the next token at each position, -100 where no loss is taken (the last position,
//     padding). Hugging Face shifts inside the model (lm_logits[:, :-1] against labels[:, 1:]); here
//     the input pipeline shifts the s32 labels, which costs nothing on the device, and the loss is
//     taken over all S rows with the last one masked: the same value, the logits' S rows as computed.
//     XLA fuses Hugging Face's slice of the logits into the loss's consumers, so the [B*S, vocab]
//     logits and their log-softmax are what both versions hold.
#pragma once
#include "models/family.h"

namespace tpusim::models {

// The GPT-2 family (models/family.h): gpt2, gpt2-medium, gpt2-large (layers, hidden, heads,
// intermediate, vocab, max_position = n_positions); head causal_lm (GPT2LMHeadModel): loss = mean
// cross-entropy over positions whose label is not -100; logits [B*S, vocab]. units:
// "transformer.embeddings" (wte, wpe, their sum and dropout, the attention masks), each block
// "transformer.h.L" (flagged `layer`), and "heads" (ln_f, the tied LM head and the loss).
// Throws ConfigError for B or S < 1, S > n_positions, or heads not dividing hidden.
const Family& gpt2_family();

}  // namespace tpusim::models
