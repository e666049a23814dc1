// Multi-head attention written once for the encoder–decoder builders (models/t5.h): self-attention
// (queries, keys and values from one stream) and cross-attention (queries from the decoder, keys and
// values from the encoder output) share this structure; T5 and BART differ only by its parameters
// (projection names, biases, the score scale) and the additive biases on the scores.
//
// Rows are [B*L, H] as in models/bert.h; the dots carry batch and head dims as DotGeneral batch
// dims: scores [B, heads, Lq, Lk], context [B, heads, Lq, d].
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "models/layers.h"

namespace tpusim::models::layers {

struct AttentionSpec {
  std::string name;  // the module's state_dict prefix (T5 "...SelfAttention", BART "...self_attn")
  // Projection names under `name`: query, key, value, output (T5 q, k, v, o; BART q_proj, k_proj,
  // v_proj, out_proj). Each is nn.Linear(in, out), weight [out, in].
  std::array<std::string, 4> proj;
  int64_t batch = 0, q_len = 0, kv_len = 0;  // B, Lq, Lk
  int64_t hidden = 0, heads = 0, head_dim = 0;
  bool biases = false;   // the projections have biases (BART; T5: none)
  double scale = 1.0;    // multiplies the scores (BART head_dim^-0.5; T5: 1, folded into its init)
  double dropout = 0.0;  // on the attention probabilities
};

// A term added to the scores [B, heads, Lq, Lk]: `dims` maps each of its dimensions to one of the
// scores' (as Graph::ew_bcast), e.g. a causal mask [Lq, Lk] -> {2, 3}, a padding bias [B, Lk] -> {0, 3},
// T5's relative position bias [heads, Lq, Lk] -> {1, 2, 3}.
struct ScoreBias {
  int node = -1;
  std::vector<int> dims;
  std::string name;
};

// softmax(scale * q k^T + biases) v, projected back to [B*Lq, hidden]. `q_rows` [B*Lq, hidden],
// `kv_rows` [B*Lk, hidden] (the same node for self-attention).
int attention(const LayerContext& cx, const AttentionSpec& a, int q_rows, int kv_rows, const std::vector<ScoreBias>& biases);

}  // namespace tpusim::models::layers
