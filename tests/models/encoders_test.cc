// RoBERTa, DistilBERT and ALBERT graphs (models/encoders.h): parameter counts against the closed
// form of model_presets and the published sequence-classification models, ALBERT's one shared layer,
// one layer's forward matmul FLOPs, and gradients of miniature models against finite differences.
#include <gtest/gtest.h>

#include <set>
#include <tuple>

#include "base/config_error.h"
#include "models/autodiff.h"
#include "models/bert.h"
#include "models/families.h"
#include "models/encoders.h"
#include "tests/models/fd_check.h"

namespace tpusim::models {
namespace {

ModelArch preset(const std::string& name) { return *find_model_preset(name); }

// The graph builds the ForSequenceClassification class (2 labels): the base class's closed-form count
// (model_parameters, pooler included) with the head, and `sum(p.numel() for p in model.parameters())`
// of the published roberta-base (124,647,170), distilbert-base-uncased (66,955,010) and
// albert-base-v2 (11,685,122) classifiers.
TEST(EncoderModels, ParameterCountsMatchClosedFormAndPublishedModels) {
  for (const char* name : {"roberta-base", "roberta-large", "distilbert-base-uncased", "albert-base-v2",
                           "albert-xxlarge-v2"}) {
    const auto m = make_model(preset(name), {.num_labels = 2});
    const ModelGraph g = m->build_forward({.batch = 1, .seq = 8});
    EXPECT_EQ(count_parameters(g.graph), encoder_classification_parameters(preset(name), 2)) << name;
    std::set<std::string> names;
    for (int p : g.params) EXPECT_TRUE(names.insert(g.graph.node(p).name).second) << g.graph.node(p).name;
  }
  auto count = [](const char* name) {
    return count_parameters(make_model(preset(name), {.num_labels = 2})->build_forward({.batch = 1, .seq = 8}).graph);
  };
  EXPECT_EQ(count("roberta-base"), 124647170u);
  EXPECT_EQ(count("distilbert-base-uncased"), 66955010u);
  EXPECT_EQ(count("albert-base-v2"), 11685122u);
}

// XForMaskedLM: the closed form, and the published roberta-base (124,697,433) and
// distilbert-base-uncased (66,985,530) masked-LM models; the decoder is the word embedding (tied).
TEST(EncoderModels, MaskedLmParameterCounts) {
  for (const char* name : {"roberta-base", "distilbert-base-uncased", "albert-base-v2", "albert-xxlarge-v2"}) {
    const auto m = make_model(preset(name), {.head = Head::kMaskedLm});
    const ModelGraph g = m->build_forward({.batch = 1, .seq = 8});
    EXPECT_EQ(count_parameters(g.graph), encoder_masked_lm_parameters(preset(name))) << name;
    EXPECT_EQ(g.graph.node(g.logits).shape, (Dims{8, preset(name).vocab})) << name;  // every token
  }
  auto count = [](const char* name) {
    return count_parameters(
        make_model(preset(name), {.head = Head::kMaskedLm})->build_forward({.batch = 1, .seq = 8}).graph);
  };
  EXPECT_EQ(count("roberta-base"), 124697433u);
  EXPECT_EQ(count("distilbert-base-uncased"), 66985530u);
}

// ALBERT: one layer's parameters, used by every application; its gradient sums over them.
TEST(EncoderModels, AlbertSharesOneLayer) {
  const ModelArch p = preset("albert-base-v2");
  const ModelGraph g = make_model(p, {.num_labels = 2})->build_forward({.batch = 2, .seq = 16});
  const std::string shared = "albert.encoder.albert_layer_groups.0.albert_layers.0.";
  int shared_params = 0, query_uses = 0;
  for (int id : g.params) shared_params += g.graph.node(id).name.rfind(shared, 0) == 0;
  EXPECT_EQ(shared_params, 16);  // q, k, v, dense, ffn, ffn_output (weight + bias), two LayerNorms
  for (const auto& n : g.graph.nodes())
    if (n.kind == OpKind::kDot && n.name == shared + "attention.query") ++query_uses;
  EXPECT_EQ(query_uses, int(p.layers));
  ASSERT_EQ(g.units.size(), size_t(p.layers) + 2);
  for (size_t u = 1; u <= size_t(p.layers); ++u) {
    EXPECT_TRUE(g.units[u].layer);
    int owned = 0;  // parameters created inside the unit's range: all in the first application
    for (int id : g.params) owned += id >= g.units[u].first && id <= g.units[u].last;
    EXPECT_EQ(owned, u == 1 ? 16 : 0) << g.units[u].name;
  }
  EXPECT_EQ(g.modules->module_class("albert.encoder.albert_layer_groups.0.albert_layers.0"), "AlbertLayer");
  EXPECT_EQ(g.modules->module_class("albert.encoder.albert_layer_groups.0"), "AlbertLayerGroup");
}

// One layer's forward matmuls: q, k, v, output 4·2·B·S·H², FFN 2·2·B·S·H·I, scores and context
// 2·2·B·S²·H. ALBERT's shared layer: `layers` times that under its one prefix.
TEST(EncoderModels, LayerForwardFlopsMatchClosedForm) {
  const uint64_t B = 4, S = 64;
  for (auto [name, prefix] : {std::pair{"roberta-base", "roberta.encoder.layer.0."},
                              std::pair{"distilbert-base-uncased", "distilbert.transformer.layer.0."},
                              std::pair{"albert-base-v2", "albert.encoder.albert_layer_groups.0."}}) {
    const ModelArch p = preset(name);
    const ModelGraph g = make_model(p, {.num_labels = 2})->build_forward({.batch = int64_t(B), .seq = int64_t(S)});
    uint64_t flops = 0;
    for (const auto& n : g.graph.nodes())
      if (n.kind == OpKind::kDot && n.name.rfind(prefix, 0) == 0) flops += dot_flops(g.graph, n);
    const uint64_t H = uint64_t(p.hidden), I = uint64_t(p.intermediate);
    const uint64_t layer = 8 * B * S * H * H + 4 * B * S * H * I + 4 * B * S * S * H;
    EXPECT_EQ(flops, (p.shared_layers ? uint64_t(p.layers) : 1) * layer) << name;
  }
}

TEST(EncoderModels, RejectsBadShapes) {
  const auto roberta = make_model(preset("roberta-base"), {.num_labels = 2});
  EXPECT_NO_THROW(roberta->build_forward({.batch = 1, .seq = 512}));
  EXPECT_THROW(roberta->build_forward({.batch = 1, .seq = 513}), ConfigError);  // rows 0 and 1 are not positions
  EXPECT_THROW(make_model(find_preset("gpt2"), {.num_labels = 2}), ConfigError);  // GPT-2 has no classifier
}

// Miniature models (2 layers, hidden 8, 2 heads) in double precision: every parameter's gradient
// against central finite differences, with padding in the attention mask (RoBERTa: its position ids),
// both heads (masked_lm: some labels -100, ignored).
class MiniEncoder : public ::testing::TestWithParam<std::tuple<ModelFamily, Head>> {};

TEST_P(MiniEncoder, GradientsMatchFiniteDifferences) {
  const auto [f, head] = GetParam();
  ModelArch p{.name = "mini", .family = f, .counted_class = "", .layers = 2, .hidden = 8, .heads = 2, .kv_heads = 2, .head_dim = 4,
              .intermediate = 12, .vocab = 11, .max_position = 6, .type_vocab = 2, .embedding_size = 8};
  if (f == ModelFamily::kRoberta) p.type_vocab = 1;
  if (f == ModelFamily::kDistilBert) p.type_vocab = 0;
  if (f == ModelFamily::kAlbert) p.embedding_size = 4, p.shared_layers = true, p.activation = Activation::kGeluNew;
  const int64_t B = 2, S = 4;
  ModelGraph m = make_model(p, {.head = head, .num_labels = 3})->build_forward({.batch = B, .seq = S, .training = false});
  Gradients gr = build_backward(m.graph, m.loss, m.params);
  std::map<int, test::Tensor> in;
  for (int i : m.inputs) {
    const Node& n = m.graph.node(i);
    std::vector<double> v;
    if (n.name == "input_ids") v = {1, 5, 7, 0, 2, 10, 3, 0};
    if (n.name == "token_type_ids") v = {0, 0, 1, 1, 0, 1, 1, 0};
    if (n.name == "attention_mask") v = {1, 1, 1, 1, 1, 1, 1, 0};
    if (n.name == "labels") v = head == Head::kMaskedLm ? std::vector<double>{-100, 4, -100, 9, 6, -100, 1, -100}
                                                               : std::vector<double>{2, 0};
    ASSERT_EQ(int64_t(v.size()), num_elements(n.shape)) << n.name;
    in[i] = {n.shape, v};
  }
  test::expect_gradients_match(m.graph, m.loss, gr, test::random_inputs(m.graph, in, 7), 6);
}

INSTANTIATE_TEST_SUITE_P(Families, MiniEncoder,
                         ::testing::Combine(::testing::Values(ModelFamily::kRoberta, ModelFamily::kDistilBert,
                                                              ModelFamily::kAlbert),
                                            ::testing::Values(Head::kSequenceClassification,
                                                              Head::kMaskedLm)),
                         [](const auto& info) {
                           return family_name(std::get<0>(info.param)) +
                                  (std::get<1>(info.param) == Head::kMaskedLm ? "_masked_lm" : "_classification");
                         });

}  // namespace
}  // namespace tpusim::models
