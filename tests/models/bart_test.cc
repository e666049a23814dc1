// BART graphs (models/bart.h): the graph's parameters against the closed-form count of
// models/families.h (BartModel = BartForConditionalGeneration's parameters: the LM head is tied
// and final_logits_bias a buffer), one encoder and one decoder layer's forward matmul FLOPs against
// the closed form, and gradients of a miniature BART (learned positions with offset 2, post-LN
// layers, cross-attention with biases and scaled scores, the tied LM head) against finite differences.
#include <gtest/gtest.h>

#include "models/bart.h"
#include "models/bert.h"
#include "models/families.h"
#include "tests/models/fd_check.h"

namespace tpusim::models {
namespace {

ModelArch preset(const std::string& name) { return find_model_preset(name).value(); }

TEST(Bart, ParameterCountMatchesPreset) {
  const ModelArch p = preset("facebook/bart-large");
  const ModelGraph m = make_model(p)->build_forward({.batch = 1, .seq = 8, .target = 4});
  EXPECT_EQ(count_parameters(m.graph), model_parameters(p));
  EXPECT_EQ(model_parameters(p), 406291456u);
  EXPECT_EQ(int64_t(m.units.size()), p.layers + p.decoder_layers + 3);
  for (int id : m.params) EXPECT_EQ(m.graph.node(id).name.find("final_logits_bias"), std::string::npos);
}

// Forward matmul FLOPs (biases are element-wise adds): an encoder layer on B*S rows 8 B S H^2
// (q, k, v, out) + 4 B S^2 H (scores, context) + 4 B S H I (fc1, fc2); a decoder layer on B*T rows
// 8 B T H^2 + 4 B T^2 H (self-attention), 4 B T H^2 + 4 B S H^2 + 4 B T S H (cross-attention: q and
// out on the target, k and v on the encoder output), 4 B T H I; the LM head 2 B T H V.
TEST(Bart, LayerAndLmHeadFlopsMatchClosedForm) {
  const ModelArch p = preset("facebook/bart-large");
  const uint64_t B = 1, S = 64, T = 16, H = 1024, I = 4096, V = 50265;
  const ModelGraph m = make_model(p)->build_forward({.batch = int64_t(B), .seq = int64_t(S), .target = int64_t(T)});
  uint64_t enc = 0, dec = 0, head = 0, total = 0;
  for (const auto& n : m.graph.nodes()) {
    if (n.kind != OpKind::kDot) continue;
    total += dot_flops(m.graph, n);
    if (n.name.rfind("model.encoder.layers.3.", 0) == 0) enc += dot_flops(m.graph, n);
    if (n.name.rfind("model.decoder.layers.3.", 0) == 0) dec += dot_flops(m.graph, n);
    if (n.name == "lm_head") head += dot_flops(m.graph, n);
  }
  EXPECT_EQ(enc, 8 * B * S * H * H + 4 * B * S * S * H + 4 * B * S * H * I);
  EXPECT_EQ(dec, 8 * B * T * H * H + 4 * B * T * T * H + 4 * B * T * H * H + 4 * B * S * H * H + 4 * B * T * S * H +
                     4 * B * T * H * I);
  EXPECT_EQ(head, 2 * B * T * H * V);
  EXPECT_EQ(total, 12 * enc + 12 * dec + head);
}

TEST(Bart, RejectsLengthsBeyondPositions) {
  const auto m = make_model(preset("facebook/bart-large"));
  EXPECT_THROW(m->build_forward({.batch = 1, .seq = 1025, .target = 8}), ConfigError);
  EXPECT_THROW(m->build_forward({.batch = 1, .seq = 8, .target = 1025}), ConfigError);
  EXPECT_THROW(m->build_forward({.batch = 1, .seq = 8, .target = 0}), ConfigError);
}

TEST(Bart, GradientsMatchFiniteDifferences) {
  ModelArch p = preset("facebook/bart-large");
  p.name = "mini", p.layers = 2, p.decoder_layers = 2, p.hidden = 8, p.heads = p.kv_heads = 2, p.head_dim = 4;
  p.intermediate = 12, p.vocab = 11, p.max_position = 6;
  ModelGraph m = make_model(p)->build_forward({.batch = 2, .seq = 5, .target = 4, .training = false});
  std::map<int, test::Tensor> in;
  for (int i : m.inputs) {
    const Node& n = m.graph.node(i);
    std::vector<double> v;
    if (n.name == "input_ids") v = {0, 5, 7, 3, 2, 0, 3, 4, 1, 1};
    if (n.name == "attention_mask") v = {1, 1, 1, 1, 1, 1, 1, 1, 0, 0};
    if (n.name == "decoder_input_ids") v = {2, 4, 6, 9, 2, 8, 2, 1};
    if (n.name == "labels") v = {4, 6, 9, 2, 8, 2, 2, -100};
    ASSERT_EQ(int64_t(v.size()), num_elements(n.shape)) << n.name;
    in[i] = {n.shape, v};
  }
  Gradients gr = build_backward(m.graph, m.loss, m.params);
  test::expect_gradients_match(m.graph, m.loss, gr, test::random_inputs(m.graph, in, 13), 6);
}

}  // namespace
}  // namespace tpusim::models
