// GPT-2 graphs (models/gpt2.h): the graph's parameters against the closed-form GPT2LMHeadModel count
// of models/families.h, one block's and the LM head's forward matmul FLOPs against the closed
// form, the causal mask (no position sees a later token), and gradients of a miniature GPT-2 (tied
// LM head, causal and padding masks, ignored labels) against finite differences.
#include <gtest/gtest.h>

#include "models/bert.h"
#include "models/families.h"
#include "models/gpt2.h"
#include "tests/models/fd_check.h"

namespace tpusim::models {
namespace {

ModelArch preset(const std::string& name) { return find_model_preset(name).value(); }

// The graph holds GPT2LMHeadModel's parameters, the LM head tied to wte (counted once): 124,439,808
// for gpt2 (sum(p.numel() for p in GPT2LMHeadModel.from_pretrained("gpt2").parameters())).
TEST(Gpt2, ParameterCountsMatchPresets) {
  for (const char* name : {"gpt2", "gpt2-medium", "gpt2-large"}) {
    const ModelArch p = preset(name);
    const ModelGraph m = make_model(p)->build_forward({.batch = 1, .seq = 8});
    EXPECT_EQ(count_parameters(m.graph), model_parameters(p)) << name;
    EXPECT_EQ(int64_t(m.units.size()), p.layers + 2) << name;
  }
  EXPECT_EQ(model_parameters(preset("gpt2")), 124439808u);
}

// Forward matmul FLOPs of one block: c_attn (3 H^2), c_proj (H^2), c_fc and mlp.c_proj (8 H^2) on
// B*S rows: 24 B S H^2; scores and context: 4 B S^2 H. The LM head: 2 B S H V (the [B*S, V] logits).
TEST(Gpt2, BlockAndLmHeadFlopsMatchClosedForm) {
  const ModelArch p = preset("gpt2");
  const uint64_t B = 2, S = 128, H = 768, V = 50257;
  const ModelGraph m = make_model(p)->build_forward({.batch = int64_t(B), .seq = int64_t(S)});
  uint64_t block = 0, head = 0, total = 0;
  for (const auto& n : m.graph.nodes()) {
    if (n.kind != OpKind::kDot) continue;
    total += dot_flops(m.graph, n);
    if (n.name.rfind("transformer.h.0.", 0) == 0) block += dot_flops(m.graph, n);
    if (n.name == "lm_head") head += dot_flops(m.graph, n);
  }
  EXPECT_EQ(block, 24 * B * S * H * H + 4 * B * S * S * H);
  EXPECT_EQ(head, 2 * B * S * H * V);
  EXPECT_EQ(total, 12 * block + head);
  const Node& logits = m.graph.node(m.logits);
  EXPECT_EQ(logits.shape, (Dims{int64_t(B * S), int64_t(V)}));
}

TEST(Gpt2, RejectsSequencesBeyondPositions) {
  EXPECT_THROW(make_model(preset("gpt2"))->build_forward({.batch = 1, .seq = 1025}), ConfigError);
  EXPECT_NO_THROW(make_model(preset("gpt2"))->build_forward({.batch = 1, .seq = 1024}));
}

// A miniature GPT-2: 2 blocks, hidden 8, 2 heads, vocab 11, 6 positions; B = 2, S = 4, the second
// sequence padded at its last position.
ModelArch mini() {
  ModelArch p = preset("gpt2");
  p.name = "mini", p.layers = 2, p.hidden = 8, p.heads = p.kv_heads = 2, p.head_dim = 4, p.intermediate = 12;
  p.vocab = 11, p.max_position = 6;
  return p;
}

std::map<int, test::Tensor> mini_inputs(const ModelGraph& m, std::vector<double> ids) {
  std::map<int, test::Tensor> in;
  for (int i : m.inputs) {
    const Node& n = m.graph.node(i);
    std::vector<double> v;
    if (n.name == "input_ids") v = ids;
    if (n.name == "attention_mask") v = {1, 1, 1, 1, 1, 1, 1, 0};
    // Shifted by the input pipeline: the next token, -100 at each sequence's end and at padding.
    if (n.name == "labels") v = {ids[1], ids[2], ids[3], -100, ids[5], ids[6], -100, -100};
    EXPECT_EQ(int64_t(v.size()), num_elements(n.shape)) << n.name;
    in[i] = {n.shape, v};
  }
  return in;
}

TEST(Gpt2, CausalMaskHidesLaterTokens) {
  const ModelGraph m = make_model(mini())->build_forward({.batch = 2, .seq = 4, .training = false});
  auto in = test::random_inputs(m.graph, mini_inputs(m, {1, 5, 7, 3, 2, 10, 3, 0}), 11);
  auto changed = in;
  for (const auto& [id, t] : in)
    if (m.graph.node(id).name == "input_ids") changed[id].v[3] = 9;  // the first sequence's last token
  const auto a = test::evaluate(m.graph, in, m.logits)[m.logits];
  const auto b = test::evaluate(m.graph, changed, m.logits)[m.logits];
  const int64_t V = 11;
  for (int64_t row = 0; row < 8; ++row) {
    bool same = true;
    for (int64_t j = 0; j < V; ++j) same = same && a.v[row * V + j] == b.v[row * V + j];
    EXPECT_EQ(same, row != 3) << "row " << row;  // only position 3 of sequence 0 sees the token
  }
}

TEST(Gpt2, GradientsMatchFiniteDifferences) {
  ModelGraph m = make_model(mini())->build_forward({.batch = 2, .seq = 4, .training = false});
  Gradients gr = build_backward(m.graph, m.loss, m.params);
  test::expect_gradients_match(m.graph, m.loss, gr,
                               test::random_inputs(m.graph, mini_inputs(m, {1, 5, 7, 3, 2, 10, 3, 0}), 7), 6);
}

}  // namespace
}  // namespace tpusim::models
