// Flash attention in the graph IR (models/graph.h, Graph::attention): its values equal eager
// attention's (softmax of masked scores times v), its gradients (the backward kernel's parts, wired
// by autodiff) equal finite differences of the forward, with grouped-query heads, the causal mask
// and a sliding window; the block pairs it computes (causal and window blocks skipped); a Llama
// built with flash attention has no [S, S] tensor.
#include <gtest/gtest.h>

#include <cmath>

#include "models/families.h"
#include "models/graph.h"
#include "models/llama.h"
#include "tests/models/fd_check.h"

namespace tpusim::models {
namespace {

using test::Tensor;

// loss = sum(attention(q, k, v) * w) for a fixed random w: every output element matters.
struct Case {
  Graph g;
  int q = -1, k = -1, v = -1, w = -1, out = -1, loss = -1;
};

Case make_case(int64_t heads, int64_t kv_heads, int64_t s, int64_t d, AttentionAttrs a) {
  Case c;
  c.q = c.g.parameter("q", {1, heads, s, d}, DType::kF32, ParamRole::kTrainable);
  c.k = c.g.parameter("k", {1, kv_heads, s, d}, DType::kF32, ParamRole::kTrainable);
  c.v = c.g.parameter("v", {1, kv_heads, s, d}, DType::kF32, ParamRole::kTrainable);
  c.w = c.g.parameter("w", {1, heads, s, d}, DType::kF32);
  c.out = c.g.attention(c.q, c.k, c.v, a).out;
  int x = c.g.ew(EwOp::kMul, c.out, c.w);
  for (int dim = 3; dim >= 0; --dim) x = c.g.reduce(x, dim, ReduceOp::kSum);
  c.loss = x;
  c.g.mark_output(c.loss);
  return c;
}

TEST(FlashAttention, ValuesAreSoftmaxOfTheMaskedScoresTimesV) {
  AttentionAttrs a;
  a.scale = 0.5;
  Case c = make_case(4, 2, 5, 3, a);
  const auto in = test::random_inputs(c.g, {}, 7);
  const auto val = test::evaluate(c.g, in);
  // Query head 3 reads key/value head 1; query 2 sees keys 0..2.
  const Tensor &q = in.at(c.q), &k = in.at(c.k), &v = in.at(c.v);
  auto at = [](const Tensor& t, int64_t h, int64_t i, int64_t d) { return t.v[size_t((h * t.shape[2] + i) * t.shape[3] + d)]; };
  std::vector<double> p;
  double z = 0;
  for (int64_t j = 0; j <= 2; ++j) {
    double s = 0;
    for (int64_t d = 0; d < 3; ++d) s += at(q, 3, 2, d) * at(k, 1, j, d);
    p.push_back(std::exp(0.5 * s));
    z += p.back();
  }
  for (int64_t d = 0; d < 3; ++d) {
    double o = 0;
    for (int64_t j = 0; j <= 2; ++j) o += p[size_t(j)] / z * at(v, 1, j, d);
    EXPECT_NEAR(at(val[size_t(c.out)], 3, 2, d), o, 1e-12);
  }
}

TEST(FlashAttention, GradientsMatchFiniteDifferences) {
  for (const auto& [causal, window] : {std::pair{true, int64_t(0)}, std::pair{false, int64_t(0)}, std::pair{true, int64_t(3)}}) {
    AttentionAttrs a;
    a.causal = causal;
    a.window = window;
    a.scale = 0.7;
    Case c = make_case(4, 2, 6, 3, a);
    const Gradients grads = build_backward(c.g, c.loss, {c.q, c.k, c.v});
    int parts = 0;
    for (const Node& n : c.g.nodes()) parts += n.kind == OpKind::kAttention && n.attention.part >= AttentionPart::kDq;
    EXPECT_EQ(parts, 3);  // one backward call: dq, dk, dv
    test::expect_gradients_match(c.g, c.loss, grads, test::random_inputs(c.g, {}, 11));
  }
}

// Blocks of 2 over 6 queries and keys: 9 pairs; causal skips the 3 above the diagonal, of the 6
// left the 3 on it are masked in part; a window of 3 also skips (2, 0).
TEST(FlashAttention, BlockPairsSkipWhatTheMaskHidesWhole) {
  AttentionAttrs a;
  a.block_q = a.block_kv = 2;
  a.causal = false;
  EXPECT_EQ(attention_blocks(6, 6, a).size(), 9u);
  a.causal = true;
  const auto causal = attention_blocks(6, 6, a);
  ASSERT_EQ(causal.size(), 6u);
  int masked = 0;
  for (const AttentionBlock& b : causal) masked += b.masked;
  EXPECT_EQ(masked, 3);
  a.window = 3;
  EXPECT_EQ(attention_blocks(6, 6, a).size(), 5u);
  // FLOPs: 2 matmuls of 2 x 2 x hd per computed pair and (batch, head); the backward 7.
  Graph g;
  const int q = g.parameter("q", {1, 2, 6, 4}, DType::kBF16), k = g.parameter("k", {1, 1, 6, 4}, DType::kBF16);
  a.window = 0;
  const Graph::AttentionValues o = g.attention(q, k, k, a);
  EXPECT_EQ(attention_flops(g, g.node(o.out)), 2u * 2 * (6 * 2 * 2) * 4 * 2);
  EXPECT_EQ(attention_flops(g, g.node(o.lse)), 0u);
}

TEST(FlashAttention, LlamaWithFlashAttentionHasNoSquareTensor) {
  ModelArch arch = with_overrides(find_preset("meta-llama/Meta-Llama-3-8B"), {.layers = 2, .hidden = 256, .heads = 8});
  StepShape s;
  s.batch = 2;
  s.seq = 1024;
  s.dtype = DType::kBF16;
  s.flash_attention = true;
  const ModelGraph m = make_model(arch)->build_forward(s);
  int attention = 0;
  for (const Node& n : m.graph.nodes()) {
    attention += n.kind == OpKind::kAttention;
    int64_t big = 0;
    for (int64_t d : n.shape) big += d == 1024;
    EXPECT_LT(big, 2) << n.name;  // no [.., S, S]
  }
  EXPECT_EQ(attention, 4);  // out and lse per layer
}

}  // namespace
}  // namespace tpusim::models
