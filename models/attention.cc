#include "models/attention.h"

#include <cmath>

#include "models/losses.h"

namespace tpusim::models::layers {

int attend(const LayerContext& cx, const AttentionSpec& a, int q, int k, int v, const std::vector<ScoreBias>& biases) {
  Graph& g = cx.g;
  const std::string& n = a.names.scope;
  // scores[b, h, i, j] = scale * q[b, i, h]·k[b, j, h] + biases
  int s = g.dot(q, k, {{0, 2}, {0, 2}, {3}, {3}}, cx.precision, n + ".scores");
  if (a.scale == ScoreScale::kScores) s = g.ew(EwOp::kMul, s, constant(cx, 1.0 / std::sqrt(double(a.head_dim))), n + ".scale");
  for (const ScoreBias& b : biases) s = g.ew_bcast(EwOp::kAdd, s, b.node, b.dims, n + "." + b.name);
  int probs = dropout(cx, stable_softmax(g, s, 3, n + ".softmax"), a.dropout, n + a.names.dropout);
  // context[b, h, i, d] = sum_j probs[b, h, i, j] v[b, j, h, d]; then permuted to [B, Lq, heads, d].
  int ctx = g.dot(probs, v, {{0, 1}, {0, 2}, {3}, {1}}, cx.precision, n + ".context");
  return g.reshape(g.transpose(ctx, {0, 2, 1, 3}), {a.batch * a.q_len, a.heads * a.head_dim});
}

int attention(const LayerContext& cx, const AttentionSpec& a, int q_rows, int kv_rows, const std::vector<ScoreBias>& biases) {
  Graph& g = cx.g;
  const int64_t inner = a.heads * a.head_dim;
  const AttentionNames& n = a.names;
  int q = project(cx, q_rows, a.hidden, inner, a.projection, n.q);
  if (a.scale == ScoreScale::kQuery) q = g.ew(EwOp::kMul, q, constant(cx, 1.0 / std::sqrt(double(a.head_dim))), n.q + ".scale");
  q = g.reshape(q, {a.batch, a.q_len, a.heads, a.head_dim});
  int k = g.reshape(project(cx, kv_rows, a.hidden, inner, a.projection, n.k), {a.batch, a.kv_len, a.heads, a.head_dim});
  int v = g.reshape(project(cx, kv_rows, a.hidden, inner, a.projection, n.v), {a.batch, a.kv_len, a.heads, a.head_dim});
  return project(cx, attend(cx, a, q, k, v, biases), inner, a.hidden, a.projection, n.o);
}

}  // namespace tpusim::models::layers
