// T5 graphs (models/t5.h) and the shared attention (models/attention.h): the graph's parameters
// against the closed-form T5ForConditionalGeneration count of models/families.h, one encoder
// and one decoder block's forward matmul FLOPs against the closed form, the relative-position
// buckets against transformers' _relative_position_bucket, and gradients of a miniature T5
// (relative position bias, causal mask, cross-attention, tied and scaled LM head) and of a
// BART-shaped cross-attention (biases, scaled scores, a padding bias) against finite differences.
#include <gtest/gtest.h>

#include "models/attention.h"
#include "models/bert.h"
#include "models/families.h"
#include "models/losses.h"
#include "models/t5.h"
#include "tests/models/fd_check.h"

namespace tpusim::models {
namespace {

ModelArch preset(const std::string& name) { return find_model_preset(name).value(); }

// T5ForConditionalGeneration holds `shared` once (the encoder's and decoder's embed_tokens and the
// LM head are tied to it): 60,506,624 for t5-small (sum(p.numel() for p in model.parameters())).
TEST(T5, ParameterCountsMatchPresets) {
  for (const char* name : {"t5-small", "t5-base"}) {
    const ModelArch p = preset(name);
    const ModelGraph m = make_model(p)->build_forward({.batch = 1, .seq = 8, .target = 4});
    EXPECT_EQ(count_parameters(m.graph), model_parameters(p)) << name;
    EXPECT_EQ(int64_t(m.units.size()), p.layers + p.decoder_layers + 3) << name;
    // Only the first block of each stack holds a relative_attention_bias table.
    int tables = 0;
    for (int id : m.params) tables += m.graph.node(id).name.find("relative_attention_bias") != std::string::npos;
    EXPECT_EQ(tables, 2) << name;
  }
  EXPECT_EQ(model_parameters(preset("t5-small")), 60506624u);
}

// Forward matmul FLOPs, with inner = heads x d_kv and I = d_ff. An encoder block on B*S rows:
// q, k, v, o 8 B S H inner; scores and context 4 B S^2 inner; wi and wo 4 B S H I. A decoder block
// on B*T rows: self-attention 8 B T H inner + 4 B T^2 inner; cross-attention q, o on the target
// 4 B T H inner, k, v on the encoder output 4 B S H inner, scores and context 4 B T S inner; the FFN
// 4 B T H I. The LM head: 2 B T H V.
TEST(T5, BlockAndLmHeadFlopsMatchClosedForm) {
  const ModelArch p = preset("t5-small");
  const uint64_t B = 2, S = 96, T = 32, H = 512, inner = 8 * 64, I = 2048, V = 32128;
  const ModelGraph m = make_model(p)->build_forward({.batch = int64_t(B), .seq = int64_t(S), .target = int64_t(T)});
  uint64_t enc = 0, dec = 0, head = 0, total = 0;
  for (const auto& n : m.graph.nodes()) {
    if (n.kind != OpKind::kDot) continue;
    total += dot_flops(m.graph, n);
    if (n.name.rfind("encoder.block.1.", 0) == 0) enc += dot_flops(m.graph, n);
    if (n.name.rfind("decoder.block.1.", 0) == 0) dec += dot_flops(m.graph, n);
    if (n.name == "lm_head") head += dot_flops(m.graph, n);
  }
  EXPECT_EQ(enc, 8 * B * S * H * inner + 4 * B * S * S * inner + 4 * B * S * H * I);
  EXPECT_EQ(dec, 8 * B * T * H * inner + 4 * B * T * T * inner + 4 * B * T * H * inner + 4 * B * S * H * inner +
                     4 * B * T * S * inner + 4 * B * T * H * I);
  EXPECT_EQ(head, 2 * B * T * H * V);
  EXPECT_EQ(total, 6 * enc + 6 * dec + head);
  EXPECT_EQ(m.graph.node(m.logits).shape, (Dims{int64_t(B * T), int64_t(V)}));
}

// transformers T5Attention._relative_position_bucket(relative_position, bidirectional, 32, 128),
// worked by hand: half the buckets exact, half logarithmic up to 128.
TEST(T5, RelativeBucketsMatchTransformers) {
  EXPECT_EQ(t5_relative_bucket(0, true, 32), 0);
  EXPECT_EQ(t5_relative_bucket(1, true, 32), 17);     // a later key: the upper half
  EXPECT_EQ(t5_relative_bucket(-1, true, 32), 1);
  EXPECT_EQ(t5_relative_bucket(7, true, 32), 23);
  EXPECT_EQ(t5_relative_bucket(8, true, 32), 24);     // 8 + floor(log(8/8) / log(16) * 8)
  EXPECT_EQ(t5_relative_bucket(-20, true, 32), 10);   // 8 + floor(log(2.5) / log(16) * 8) = 8 + 2
  EXPECT_EQ(t5_relative_bucket(200, true, 32), 31);   // capped at 15 in its half
  EXPECT_EQ(t5_relative_bucket(5, false, 32), 0);     // causal: a later key is bucket 0
  EXPECT_EQ(t5_relative_bucket(-3, false, 32), 3);
  EXPECT_EQ(t5_relative_bucket(-40, false, 32), 23);  // 16 + floor(log(2.5) / log(8) * 16) = 16 + 7
  EXPECT_EQ(t5_relative_bucket(-1000, false, 32), 31);
}

// A miniature T5: 2 + 2 blocks, d_model 8, 2 heads of d_kv 4, d_ff 12, vocab 11, 8 buckets.
ModelArch mini() {
  ModelArch p = preset("t5-small");
  p.name = "mini", p.layers = 2, p.decoder_layers = 2, p.hidden = 8, p.heads = p.kv_heads = 2, p.head_dim = 4;
  p.intermediate = 12, p.vocab = 11, p.relative_buckets = 8;
  return p;
}

// B = 2, S = 5 (the second source padded at its last two positions), T = 4 (the second target's
// last label -100).
std::map<int, test::Tensor> mini_inputs(const ModelGraph& m) {
  std::map<int, test::Tensor> in;
  for (int i : m.inputs) {
    const Node& n = m.graph.node(i);
    std::vector<double> v;
    if (n.name == "input_ids") v = {1, 5, 7, 3, 2, 10, 3, 4, 0, 0};
    if (n.name == "attention_mask") v = {1, 1, 1, 1, 1, 1, 1, 1, 0, 0};
    if (n.name == "decoder_input_ids") v = {0, 4, 6, 9, 0, 8, 2, 0};
    if (n.name == "labels") v = {4, 6, 9, 1, 8, 2, 1, -100};
    EXPECT_EQ(int64_t(v.size()), num_elements(n.shape)) << n.name;
    in[i] = {n.shape, v};
  }
  return in;
}

// The graph's bucket composition (f32 ops on iotas, truncated to s32) against the reference, seen
// through the gather: table row r holds r in every head.
TEST(T5, GraphBucketsMatchReference) {
  ModelArch p = mini();
  p.relative_buckets = 32;
  const int64_t S = 150, T = 140;  // beyond max_distance 128: the capped buckets too
  const ModelGraph m = make_model(p)->build_forward({.batch = 1, .seq = S, .target = T, .training = false});
  std::map<int, test::Tensor> fixed;
  for (int i : m.inputs) fixed[i] = {m.graph.node(i).shape, std::vector<double>(size_t(num_elements(m.graph.node(i).shape)), 1)};
  for (int id : m.params) {
    const Node& n = m.graph.node(id);
    if (n.name.find("relative_attention_bias") == std::string::npos) continue;
    test::Tensor t{n.shape, {}};
    for (int64_t r = 0; r < n.shape[0]; ++r)
      for (int64_t h = 0; h < n.shape[1]; ++h) t.v.push_back(double(r));
    fixed[id] = t;
  }
  const auto in = test::random_inputs(m.graph, fixed, 3);
  int checked = 0;
  for (const Node& n : m.graph.nodes()) {
    if (n.kind != OpKind::kGather || n.name.find("relative_attention_bias") == std::string::npos) continue;
    const bool enc = n.name.rfind("encoder.", 0) == 0;
    const int64_t L = enc ? S : T;
    const auto v = test::evaluate(m.graph, in, n.id)[n.id];
    ASSERT_EQ(n.shape, (Dims{L, L, p.heads}));
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < L; ++j)
        ASSERT_EQ(int64_t(v.v[size_t((i * L + j) * p.heads)]), t5_relative_bucket(j - i, enc, 32)) << n.name << " " << i << "," << j;
    ++checked;
  }
  EXPECT_EQ(checked, 2);
}

TEST(T5, GradientsMatchFiniteDifferences) {
  ModelGraph m = make_model(mini())->build_forward({.batch = 2, .seq = 5, .target = 4, .training = false});
  Gradients gr = build_backward(m.graph, m.loss, m.params);
  test::expect_gradients_match(m.graph, m.loss, gr, test::random_inputs(m.graph, mini_inputs(m), 7), 6);
}

// The decoder is causal: changing the last decoder input changes no earlier position's logits.
TEST(T5, DecoderIsCausal) {
  const ModelGraph m = make_model(mini())->build_forward({.batch = 2, .seq = 5, .target = 4, .training = false});
  auto in = test::random_inputs(m.graph, mini_inputs(m), 11);
  auto changed = in;
  for (const auto& [id, t] : in)
    if (m.graph.node(id).name == "decoder_input_ids") changed[id].v[3] = 5;  // target 0, position 3
  const auto a = test::evaluate(m.graph, in, m.logits)[m.logits];
  const auto b = test::evaluate(m.graph, changed, m.logits)[m.logits];
  for (int64_t row = 0; row < 8; ++row) {
    bool same = true;
    for (int64_t j = 0; j < 11; ++j) same = same && a.v[row * 11 + j] == b.v[row * 11 + j];
    EXPECT_EQ(same, row != 3) << "row " << row;
  }
}

// Cross-attention with BART's parameters (projection biases, scores scaled by head_dim^-0.5) and a
// padding bias over the keys, on tiny shapes: B = 2, Lq = 3, Lk = 4, hidden 6, 2 heads of 3.
TEST(Attention, CrossAttentionGradientsMatchFiniteDifferences) {
  Graph g;
  std::vector<int> params, inputs;
  const DotPrecision precision = DotPrecision::kDefault;
  layers::LayerContext cx{g, params, inputs, DType::kF32, std::nullopt, precision, false};
  const int q = g.parameter("decoder_rows", {6, 6}, DType::kF32, ParamRole::kTrainable);
  const int kv = g.parameter("encoder_rows", {8, 6}, DType::kF32, ParamRole::kTrainable);
  const int pad = g.parameter("padding_bias", {2, 4}, DType::kF32, ParamRole::kInput);
  params = {q, kv};
  const layers::AttentionSpec a{.names = {"encoder_attn", "encoder_attn.q_proj", "encoder_attn.k_proj",
                                          "encoder_attn.v_proj", "encoder_attn.out_proj"},
                                .batch = 2, .q_len = 3, .kv_len = 4, .hidden = 6, .heads = 2, .head_dim = 3,
                                .projection = layers::Projection::kLinear, .scale = layers::ScoreScale::kScores,
                                .dropout = 0.1};
  const int out = layers::attention(cx, a, q, kv, {{pad, {0, 3}, "padding_mask"}});
  EXPECT_EQ(g.node(out).shape, (Dims{6, 6}));
  EXPECT_EQ(params.size(), 2u + 8u);  // the two streams, four weights and four biases
  const int loss = reduce_all(g, g.ew(EwOp::kMul, out, out, "square"));
  Gradients gr = build_backward(g, loss, params);
  auto in = test::random_inputs(g, {{pad, {{2, 4}, {0, 0, 0, -1e9, 0, 0, 0, 0}}}}, 5);
  test::expect_gradients_match(g, loss, gr, in, 8);
}

}  // namespace
}  // namespace tpusim::models
