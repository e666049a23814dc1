// Llama graphs (models/llama.h): the graph's parameters against the closed-form LlamaForCausalLM count
// of models/families.h (lm_head included: untied), one decoder layer's and the LM head's forward
// matmul FLOPs against the closed form, rotary embeddings, grouped-query attention and SwiGLU of a
// miniature Llama against direct formulas on the reference evaluator's values, and its gradients
// against finite differences.
#include <gtest/gtest.h>

#include <cmath>

#include "models/bert.h"
#include "models/families.h"
#include "models/llama.h"
#include "tests/models/fd_check.h"

namespace tpusim::models {
namespace {

ModelArch preset(const std::string& name) { return find_model_preset(name).value(); }

int find_node(const Graph& g, const std::string& name) {
  for (const auto& n : g.nodes())
    if (n.name == name) return n.id;
  ADD_FAILURE() << "no node " << name;
  return -1;
}

// 6,738,415,616 and 8,030,261,248: sum(p.numel() for p in LlamaForCausalLM.from_pretrained(...).parameters()).
TEST(Llama, ParameterCountsMatchPresets) {
  for (const char* name : {"meta-llama/Llama-2-7b-hf", "meta-llama/Meta-Llama-3-8B"}) {
    const ModelArch p = preset(name);
    const ModelGraph m = make_model(p)->build_forward({.batch = 1, .seq = 8, .dtype = DType::kBF16});
    EXPECT_EQ(count_parameters(m.graph), model_parameters(p)) << name;
    EXPECT_EQ(int64_t(m.units.size()), p.layers + 2) << name;
  }
  EXPECT_EQ(model_parameters(preset("meta-llama/Llama-2-7b-hf")), 6738415616u);
  EXPECT_EQ(model_parameters(preset("meta-llama/Meta-Llama-3-8B")), 8030261248u);
}

// Forward matmul FLOPs of one decoder layer on B*S rows: q_proj and o_proj 2 H^2 each, k_proj and
// v_proj 2 H (kv_heads hd) each, gate/up/down 2 H I each: 2 B S (2 H^2 + 2 H kv hd + 3 H I); scores and
// context 2 B S^2 H each (every query head attends; grouping shares K and V, not the work). LM head
// 2 B S H V.
TEST(Llama, LayerAndLmHeadFlopsMatchClosedForm) {
  const ModelArch p = preset("meta-llama/Meta-Llama-3-8B");
  const uint64_t B = 1, S = 256, H = 4096, KV = 8 * 128, I = 14336, V = 128256;
  const ModelGraph m = make_model(p)->build_forward({.batch = int64_t(B), .seq = int64_t(S), .dtype = DType::kBF16});
  uint64_t layer = 0, head = 0, total = 0;
  for (const auto& n : m.graph.nodes()) {
    if (n.kind != OpKind::kDot) continue;
    total += dot_flops(m.graph, n);
    if (n.name.rfind("model.layers.0.", 0) == 0) layer += dot_flops(m.graph, n);
    if (n.name == "lm_head") head += dot_flops(m.graph, n);
  }
  EXPECT_EQ(layer, 2 * B * S * (2 * H * H + 2 * H * KV + 3 * H * I) + 4 * B * S * S * H);
  EXPECT_EQ(head, 2 * B * S * H * V);
  EXPECT_EQ(total, 32 * layer + head);
  EXPECT_EQ(m.graph.node(m.logits).shape, (Dims{int64_t(B * S), int64_t(V)}));
}

TEST(Llama, RejectsBadShapes) {
  EXPECT_THROW(make_model(preset("meta-llama/Llama-2-7b-hf"))->build_forward({.batch = 1, .seq = 4097}), ConfigError);
  ModelArch p = preset("meta-llama/Meta-Llama-3-8B");
  p.kv_heads = 5;  // does not divide 32 heads
  EXPECT_THROW(make_model(p)->build_forward({.batch = 1, .seq = 8}), ConfigError);
}

TEST(Llama, ModuleClassesAsTransformersNamesThem) {
  const auto m = make_model(preset("meta-llama/Llama-2-7b-hf"));
  EXPECT_EQ(m->module_class(""), "LlamaForCausalLM");
  EXPECT_EQ(m->module_class("model.layers.3"), "LlamaDecoderLayer");
  EXPECT_EQ(m->module_class("model.layers.3.self_attn"), "LlamaAttention");
  EXPECT_EQ(m->module_class("model.layers.3.mlp"), "LlamaMLP");
  EXPECT_EQ(m->module_class("model.layers.3.input_layernorm"), "LlamaRMSNorm");
  EXPECT_EQ(m->module_class("model.norm"), "LlamaRMSNorm");
  EXPECT_EQ(m->module_class("model.layers.3.self_attn.k_proj"), "Linear");
  EXPECT_EQ(m->module_class("lm_head"), "Linear");
  EXPECT_EQ(m->module_class("model.embed_tokens"), "Embedding");
}

// A miniature Llama-3: 2 layers, hidden 16, 4 query heads sharing 2 key/value heads (hd 4), MLP 12,
// vocab 11, 8 positions; B = 2, S = 4, the second sequence padded at its last position.
ModelArch mini() {
  ModelArch p = preset("meta-llama/Meta-Llama-3-8B");
  p.name = "mini", p.layers = 2, p.hidden = 16, p.heads = 4, p.kv_heads = 2, p.head_dim = 4, p.intermediate = 12;
  p.vocab = 11, p.max_position = 8;
  return p;
}
constexpr int64_t kB = 2, kS = 4, kHeads = 4, kKv = 2, kHd = 4;

// LlamaRotaryEmbedding's tables for rope_theta 500000: cos/sin of p * theta^(-2i/hd), i < hd/2, twice.
double rope_angle(int64_t pos, int64_t i) { return double(pos) * std::pow(500000.0, -2.0 * double(i % (kHd / 2)) / kHd); }

std::map<int, test::Tensor> mini_inputs(const ModelGraph& m) {
  const std::vector<double> ids = {1, 5, 7, 3, 2, 10, 3, 0};
  std::map<int, test::Tensor> in;
  for (int i : m.inputs) {
    const Node& n = m.graph.node(i);
    std::vector<double> v;
    if (n.name == "input_ids") v = ids;
    if (n.name == "attention_mask") v = {1, 1, 1, 1, 1, 1, 1, 0};
    if (n.name == "labels") v = {ids[1], ids[2], ids[3], -100, ids[5], ids[6], -100, -100};
    if (n.name == "rope.cos" || n.name == "rope.sin")
      for (int64_t s = 0; s < kS; ++s)
        for (int64_t j = 0; j < kHd; ++j) v.push_back(n.name == "rope.cos" ? std::cos(rope_angle(s, j)) : std::sin(rope_angle(s, j)));
    EXPECT_EQ(int64_t(v.size()), num_elements(n.shape)) << n.name;
    in[i] = {n.shape, v};
  }
  return in;
}

// Rotary (q cos + rotate_half(q) sin), grouped-query attention with causal and padding masks, and
// SwiGLU, each recomputed from its inputs' values by the formulas of modeling_llama.py.
TEST(Llama, RotaryGroupedAttentionAndSwiGluMatchFormulas) {
  const ModelGraph m = make_model(mini())->build_forward({.batch = kB, .seq = kS, .training = false});
  const Graph& g = m.graph;
  const auto val = test::evaluate(g, test::random_inputs(g, mini_inputs(m), 5));
  const std::string at = "model.layers.0.self_attn";
  auto v_of = [&](const std::string& name) { return val[find_node(g, name)].v; };
  // Rotary on q [B, S, heads, hd] and k [B, S, kv, hd].
  std::vector<double> rq, rk;
  for (auto [proj, rot, heads] : {std::tuple{".q_proj", ".rotary_q", kHeads}, std::tuple{".k_proj", ".rotary_k", kKv}}) {
    const auto x = v_of(at + proj), y = v_of(at + rot);
    ASSERT_EQ(x.size(), size_t(kB * kS * heads * kHd));
    for (int64_t b = 0; b < kB; ++b)
      for (int64_t s = 0; s < kS; ++s)
        for (int64_t h = 0; h < heads; ++h)
          for (int64_t j = 0; j < kHd; ++j) {
            const int64_t row = ((b * kS + s) * heads + h) * kHd;
            const double rot_half = j < kHd / 2 ? -x[row + j + kHd / 2] : x[row + j - kHd / 2];
            const double want = x[row + j] * std::cos(rope_angle(s, j)) + rot_half * std::sin(rope_angle(s, j));
            EXPECT_NEAR(y[row + j], want, 1e-12) << rot << " b" << b << " s" << s << " h" << h << " j" << j;
          }
    (heads == kHeads ? rq : rk) = y;
  }
  // Attention: query head h reads key/value head h / (heads / kv) (repeat_kv), keys j <= i with
  // attention_mask 1. The context node is [B, kv, G*S, hd].
  const auto vv = v_of(at + ".v_proj"), ctx = v_of(at + ".context");
  const std::vector<double> mask = {1, 1, 1, 1, 1, 1, 1, 0};
  const int64_t G = kHeads / kKv;
  for (int64_t b = 0; b < kB; ++b)
    for (int64_t h = 0; h < kHeads; ++h)
      for (int64_t i = 0; i < kS; ++i) {
        const int64_t kvh = h / G;
        std::vector<double> w(kS, 0.0);
        double z = 0;
        for (int64_t j = 0; j <= i; ++j) {
          if (mask[b * kS + j] == 0) continue;
          double dotp = 0;
          for (int64_t d = 0; d < kHd; ++d)
            dotp += rq[((b * kS + i) * kHeads + h) * kHd + d] * rk[((b * kS + j) * kKv + kvh) * kHd + d];
          w[j] = std::exp(dotp / std::sqrt(double(kHd)));
          z += w[j];
        }
        for (int64_t d = 0; d < kHd; ++d) {
          double want = 0;
          for (int64_t j = 0; j < kS; ++j) want += w[j] / z * vv[((b * kS + j) * kKv + kvh) * kHd + d];
          const double got = ctx[(((b * kKv + kvh) * G + h % G) * kS + i) * kHd + d];
          EXPECT_NEAR(got, want, 1e-9) << "b" << b << " h" << h << " i" << i << " d" << d;
        }
      }
  // SwiGLU: silu(gate) * up.
  const auto gate = v_of("model.layers.0.mlp.gate_proj"), up = v_of("model.layers.0.mlp.up_proj");
  const auto gu = v_of("model.layers.0.mlp.gate_up");
  ASSERT_EQ(gu.size(), size_t(kB * kS * 12));
  for (size_t e = 0; e < gu.size(); ++e) EXPECT_NEAR(gu[e], gate[e] / (1 + std::exp(-gate[e])) * up[e], 1e-12);
}

TEST(Llama, CausalMaskHidesLaterTokens) {
  const ModelGraph m = make_model(mini())->build_forward({.batch = kB, .seq = kS, .training = false});
  auto in = test::random_inputs(m.graph, mini_inputs(m), 11);
  auto changed = in;
  for (const auto& [id, t] : in)
    if (m.graph.node(id).name == "input_ids") changed[id].v[3] = 9;  // the first sequence's last token
  const auto a = test::evaluate(m.graph, in, m.logits)[m.logits];
  const auto b = test::evaluate(m.graph, changed, m.logits)[m.logits];
  for (int64_t row = 0; row < kB * kS; ++row) {
    bool same = true;
    for (int64_t j = 0; j < 11; ++j) same = same && a.v[row * 11 + j] == b.v[row * 11 + j];
    EXPECT_EQ(same, row != 3) << "row " << row;
  }
}

TEST(Llama, GradientsMatchFiniteDifferences) {
  ModelGraph m = make_model(mini())->build_forward({.batch = kB, .seq = kS, .training = false});
  Gradients gr = build_backward(m.graph, m.loss, m.params);
  test::expect_gradients_match(m.graph, m.loss, gr, test::random_inputs(m.graph, mini_inputs(m), 7), 6);
}

}  // namespace
}  // namespace tpusim::models
