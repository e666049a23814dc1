// Multi-head attention written once for every family (models/stack.h): self-attention (queries, keys
// and values from one stream) and cross-attention (queries from the decoder, keys and values from the
// encoder output) share this structure; the families differ by its parameters (projection names and
// kind, where the 1/sqrt(d) scale applies, dropout) and the additive biases on the scores. GPT-2 brings
// its own projections (the fused c_attn) to the shared core, attend().
//
// Rows are [B*L, H] as in models/stack.h; the dots carry batch and head dims as DotGeneral batch
// dims (the permutes of PyTorch's implementation are absorbed into the dots' dimension numbers, as
// XLA does): scores [B, heads, Lq, Lk], context [B, heads, Lq, d].
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "models/layers.h"

namespace tpusim::models::layers {

enum class ScoreScale {
  kNone,     // T5: folded into the initialization
  kScores,   // scores * 1/sqrt(d) (BERT, GPT-2, BART, ...)
  kQuery,    // queries * 1/sqrt(d) before the scores (DistilBERT's MultiHeadSelfAttention)
};

// An attention module's names, as suffixes of its block's prefix.
struct AttentionNames {
  std::string scope{};             // prefix of the core's ops: scores, scale, softmax, context
  std::string q{}, k{}, v{}, o{};  // the query, key, value and output projections
  std::string dropout = ".dropout";  // on the probabilities, a suffix of `scope`
};

struct AttentionSpec {
  AttentionNames names{};  // full names (the block's prefix prepended)
  int64_t batch = 0, q_len = 0, kv_len = 0;  // B, Lq, Lk
  int64_t hidden = 0, heads = 0, head_dim = 0;
  Projection projection = Projection::kLinear;
  ScoreScale scale = ScoreScale::kScores;
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

// softmax(scale q k^T + biases) v on heads q [B, Lq, heads, d], k and v [B, Lk, heads, d], as rows
// [B*Lq, heads*d] (the context before the output projection).
int attend(const LayerContext& cx, const AttentionSpec& a, int q, int k, int v, const std::vector<ScoreBias>& biases);

// The whole module: projections, attend(), the output projection back to [B*Lq, hidden]. `q_rows`
// [B*Lq, hidden], `kv_rows` [B*Lk, hidden] (the same node for self-attention).
int attention(const LayerContext& cx, const AttentionSpec& a, int q_rows, int kv_rows, const std::vector<ScoreBias>& biases);

}  // namespace tpusim::models::layers
