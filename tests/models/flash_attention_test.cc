// Flash attention in the graph IR (models/graph.h, Graph::attention): its values equal eager
// attention's (softmax of masked scores times v), its gradients (the backward kernel's parts, wired
// by autodiff) equal finite differences of the forward, with grouped-query heads, the causal mask
// and a sliding window; the block pairs it computes (causal and window blocks skipped); a Llama
// built with flash attention has no [S, S] tensor.
#include <gtest/gtest.h>

#include <cmath>

#include "base/config_error.h"
#include "models/autodiff.h"
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

// A small Llama (2 layers, hidden 256, 8 heads) and a bf16 flash attention step of 2 x 1,024 tokens.
ModelArch small_llama() {
  return with_overrides(find_preset("meta-llama/Meta-Llama-3-8B"), {.layers = 2, .hidden = 256, .heads = 8});
}
StepShape flash_step() {
  StepShape s;
  s.batch = 2;
  s.seq = 1024;
  s.dtype = DType::kBF16;
  s.flash_attention = true;
  return s;
}

// A sequence-parallel replica's block: 4 queries at positions 4..7 of 8 keys, blocks of 2. Causal:
// queries 4-5 see key blocks 0 and 1 whole, 2 in part, not 3; queries 6-7 all four, 3 in part.
TEST(FlashAttention, QueriesOffsetAmongTheKeys) {
  AttentionAttrs a;
  a.block_q = a.block_kv = 2;
  a.q_offset = 4;
  const auto blocks = attention_blocks(4, 8, a);
  ASSERT_EQ(blocks.size(), 7u);
  int masked = 0;
  for (const AttentionBlock& b : blocks) masked += b.masked;
  EXPECT_EQ(masked, 2);
  EXPECT_TRUE(blocks[2].masked && blocks[2].i == 0 && blocks[2].j == 2);
  // The values and gradients of such a call (the evaluator masks key j > q_offset + i).
  Graph g;
  const int q = g.parameter("q", {1, 2, 3, 3}, DType::kF32, ParamRole::kTrainable);
  const int k = g.parameter("k", {1, 1, 6, 3}, DType::kF32, ParamRole::kTrainable);
  const int v = g.parameter("v", {1, 1, 6, 3}, DType::kF32, ParamRole::kTrainable);
  const int w = g.parameter("w", {1, 2, 3, 3}, DType::kF32);
  AttentionAttrs b;
  b.q_offset = 3;
  b.scale = 0.6;
  int x = g.ew(EwOp::kMul, g.attention(q, k, v, b).out, w);
  for (int dim = 3; dim >= 0; --dim) x = g.reduce(x, dim, ReduceOp::kSum);
  g.mark_output(x);
  const Gradients grads = build_backward(g, x, {q, k, v});
  test::expect_gradients_match(g, x, grads, test::random_inputs(g, {}, 5));
  // The queries must lie among the keys: 3 from position 4 of 6 do not.
  b.q_offset = 4;
  EXPECT_THROW(g.attention(q, k, v, b), std::invalid_argument);
}

// Sequence parallelism (StepShape::mesh with a sequence axis): one replica's block of the tokens,
// the keys and values all-gathered along the sequence groups for the kernel, whose queries start at
// the last block (the replica with the most work); the gradients reduce-scattered back.
TEST(FlashAttention, SequenceParallelLlamaGathersKeysAndValues) {
  const ModelArch arch = small_llama();
  StepShape s = flash_step();
  s.mesh.size = {1, 2, 4, 1};  // fsdp 2 x sequence 4: groups of 4 consecutive replicas
  ModelGraph m = make_model(arch)->build_forward(s);
  int gathers = 0, attention = 0;
  for (const Node& n : m.graph.nodes()) {
    if (n.name == "input_ids") {
      EXPECT_EQ(n.shape, (Dims{2, 256}));
    }
    if (n.kind == OpKind::kCollective) {
      ++gathers;
      EXPECT_EQ(n.collective.op, CollectiveOp::kAllGather);
      EXPECT_EQ(n.collective.groups, (std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
      EXPECT_EQ(n.collective.replicas, 8);
      EXPECT_EQ(n.shape[2], 1024);
    }
    if (n.kind == OpKind::kAttention && n.attention.part == AttentionPart::kOut) {
      ++attention;
      EXPECT_EQ(n.attention.q_offset, 768);
      EXPECT_EQ(m.graph.node(n.inputs[0]).shape[2], 256);
    }
  }
  EXPECT_EQ(gathers, 4);  // k and v per layer
  EXPECT_EQ(attention, 2);
  const Gradients grads = build_backward(m.graph, m.loss, m.params);
  int scatters = 0;
  for (const Node& n : m.graph.nodes()) scatters += n.kind == OpKind::kCollective && n.collective.op == CollectiveOp::kReduceScatter;
  EXPECT_EQ(scatters, 4);
  // Load-balanced (MaxText's context_parallel_load_balance): replica 0's chunks 0 and 7 of 8, each
  // of 128 queries, one kernel call each, at positions 0 and 896.
  s.sequence_load_balance = true;
  const ModelGraph lb = make_model(arch)->build_forward(s);
  std::vector<int64_t> offsets;
  for (const Node& n : lb.graph.nodes())
    if (n.kind == OpKind::kAttention && n.attention.part == AttentionPart::kOut) {
      offsets.push_back(n.attention.q_offset);
      EXPECT_EQ(lb.graph.node(n.inputs[0]).shape[2], 128);
    }
  EXPECT_EQ(offsets, (std::vector<int64_t>{0, 896, 0, 896}));
  s.seq = 1020;  // divisible by 4, not by 8
  EXPECT_THROW(make_model(arch)->build_forward(s), ConfigError);
  s.sequence_load_balance = false;
  s.seq = 1024;
  // A sequence that does not split evenly, eager attention, a family without the axis: refused.
  s.seq = 1022;
  EXPECT_THROW(make_model(arch)->build_forward(s), ConfigError);
  s.seq = 1024;
  s.flash_attention = false;
  EXPECT_THROW(make_model(arch)->build_forward(s), ConfigError);
  s.flash_attention = true;
  EXPECT_THROW(make_model(find_preset("gpt2"))->build_forward(s), ConfigError);
}

TEST(FlashAttention, LlamaWithFlashAttentionHasNoSquareTensor) {
  const ModelGraph m = make_model(small_llama())->build_forward(flash_step());
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
