#include "models/attention.h"

#include "models/losses.h"

namespace tpusim::models::layers {

namespace {

// nn.Linear(in, out) on rows, with or without its bias.
int project(const LayerContext& cx, int x, int64_t in, int64_t out, bool bias, const std::string& name) {
  if (bias) return linear(cx, x, in, out, name);
  return cx.g.dot(x, weight(cx, name + ".weight", {out, in}), {{}, {}, {1}, {1}}, cx.precision, name);
}

}  // namespace

int attention(const LayerContext& cx, const AttentionSpec& a, int q_rows, int kv_rows, const std::vector<ScoreBias>& biases) {
  Graph& g = cx.g;
  const int64_t inner = a.heads * a.head_dim;
  const std::string& n = a.name;
  int q = g.reshape(project(cx, q_rows, a.hidden, inner, a.biases, n + "." + a.proj[0]), {a.batch, a.q_len, a.heads, a.head_dim});
  int k = g.reshape(project(cx, kv_rows, a.hidden, inner, a.biases, n + "." + a.proj[1]), {a.batch, a.kv_len, a.heads, a.head_dim});
  int v = g.reshape(project(cx, kv_rows, a.hidden, inner, a.biases, n + "." + a.proj[2]), {a.batch, a.kv_len, a.heads, a.head_dim});
  // scores[b, h, i, j] = scale * q[b, i, h]·k[b, j, h] + biases
  int s = g.dot(q, k, {{0, 2}, {0, 2}, {3}, {3}}, cx.precision, n + ".scores");
  if (a.scale != 1.0) s = g.ew(EwOp::kMul, s, constant(cx, a.scale), n + ".scale");
  for (const ScoreBias& b : biases) s = g.ew_bcast(EwOp::kAdd, s, b.node, b.dims, n + "." + b.name);
  int probs = dropout(cx, stable_softmax(g, s, 3, n + ".softmax"), a.dropout, n + ".attn_dropout");
  int ctx = g.dot(probs, v, {{0, 1}, {0, 2}, {3}, {1}}, cx.precision, n + ".context");  // [B, h, Lq, d]
  ctx = g.reshape(g.transpose(ctx, {0, 2, 1, 3}), {a.batch * a.q_len, inner});
  return project(cx, ctx, inner, a.hidden, a.biases, n + "." + a.proj[3]);
}

}  // namespace tpusim::models::layers
