// Llama causal-LM graphs as Hugging Face's LlamaForCausalLM (transformers' modeling_llama.py) computes
// them in training, for one batch B and padded length S: the token embedding (no position embedding),
// pre-RMSNorm decoder layers (input_layernorm; self-attention with q_proj [H, H], k_proj and v_proj
// [kv_heads*hd, H], no biases, rotary position embeddings on q and k, grouped-query attention and
// o_proj; post_attention_layernorm; the SwiGLU MLP down_proj(silu(gate_proj(x)) * up_proj(x))), the
// final norm and an untied lm_head [vocab, H]. Eager attention (no flash attention kernel), no KV cache:
// the training forward only.
//
// Rotary embeddings (Su et al., "RoFormer", 2021; LlamaRotaryEmbedding): q' = q cos + rotate_half(q) sin
// with rotate_half(q) = concat(-q[..., hd/2:], q[..., :hd/2]), and cos/sin [S, hd] the table
// cat(f, f) of f[p, i] = p * theta^(-2i/hd) (theta = rope_theta: 10000 for Llama-2, 500000 for
// Llama-3). The two tables are per-step inputs (`rope.cos`, `rope.sin`, role kInput): the op graph has
// no sine or cosine, and the tables depend on positions only (one [S, hd] pair for every layer and
// batch row; Hugging Face computes them once per forward, outside the layers), so what matters to the
// step's cost is that every layer reads them, which it does. Their host-to-device copy (2 S hd
// elements a step) stands in for the tiny on-device computation.
//
// Grouped-query attention: query head h uses key/value head h / (heads / kv_heads), as repeat_kv's
// expand + reshape orders them; here the queries are grouped [B, kv_heads, G*S, hd] and the key and
// value heads enter the dots as batch dimensions (a broadcast, no copy of K and V).
//
// Per-step inputs (role kInput): input_ids, attention_mask, labels [B, S] (s32; labels shifted by the
// input pipeline, -100 where no loss is taken: models/gpt2.h explains why this equals Hugging Face's
// in-model shift), rope.cos and rope.sin [S, hd] (float).
#pragma once
#include "models/family.h"

namespace tpusim::models {

// The Llama family (models/family.h): meta-llama/Llama-2-7b-hf, meta-llama/Meta-Llama-3-8B (layers,
// hidden, heads, kv_heads, intermediate, vocab, max_position = max_position_embeddings); head causal_lm
// (LlamaForCausalLM): loss = mean cross-entropy over positions whose label is not -100; logits
// [B*S, vocab]. units: "model.embed_tokens" (the embedding, the causal and padding masks, the rotary
// tables), each decoder layer "model.layers.L" (flagged `layer`), and "heads" (the final norm, lm_head
// and the loss). Throws ConfigError for B or S < 1, S > max_position, heads not dividing hidden,
// kv_heads not dividing heads, or an odd head dimension (rotate_half splits it in halves).
const Family& llama_family();
// MaxText's gpt3-175b (decoder_block gpt3: LayerNorm, biases, learned positions, a plain gelu MLP, tied
// embeddings, no dropout) on the same builder, classes Gpt3ForCausalLM, Gpt3DecoderLayer, ...
const Family& gpt3_family();
// Mistral (mistralai/Mistral-7B-v0.1: Llama's architecture with a 4,096-key sliding window) and Gemma
// (google/gemma-2b, gemma-7b: head size 256, GeGLU, tied and scaled embeddings) on the same builder,
// with their own module classes (MistralDecoderLayer, GemmaDecoderLayer, ...).
const Family& mistral_family();
const Family& gemma_family();

}  // namespace tpusim::models
