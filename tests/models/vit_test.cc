// ViT (models/vit.h): the built graph's parameters against the closed-form count, one encoder
// layer's forward matmul FLOPs against the closed form, gradients of a miniature ViT against finite
// differences (patch projection, the [CLS] concatenation by scatter-adds, pre-norm layers, head), the
// module tree, and the fixed-sequence rule.
#include <gtest/gtest.h>

#include "base/config_error.h"
#include "models/autodiff.h"
#include "models/bert.h"
#include "models/families.h"
#include "models/vit.h"
#include "tests/models/fd_check.h"

namespace tpusim::models {
namespace {

ModelArch vit_base() { return *find_model_preset("google/vit-base-patch16-224"); }
std::unique_ptr<Model> vit_base(int64_t num_labels) {
  return make_model(vit_base(), {.head = Head::kImageClassification, .num_labels = num_labels});
}

// ViTForImageClassification: the graph's trainable parameters are ViTModel's (model_parameters) minus
// its pooler plus the classifier. The hub checkpoint (1000 ImageNet classes) has 86,567,656.
TEST(Vit, ParametersMatchClosedForm) {
  for (int64_t labels : {1000, 10}) {
    const auto m = vit_base(labels);
    ModelGraph g = m->build_forward({.batch = 2, .seq = 197});
    EXPECT_EQ(count_parameters(g.graph), vit_classification_parameters(vit_base(), labels)) << labels;
  }
  EXPECT_EQ(vit_classification_parameters(vit_base(), 1000), 86567656u);
}

// One encoder layer's forward: q, k, v and the attention output (4 Linear(H, H)) and the MLP
// (Linear(H, I), Linear(I, H)) on B·S rows, and the two attention dots (scores and context,
// 2·B·S²·H each): 2·B·S·(4·H² + 2·H·I) + 4·B·S²·H. The patch projection: 2·B·N·(C·p²)·H.
TEST(Vit, LayerForwardFlopsMatchClosedForm) {
  const auto m = vit_base(1000);
  const uint64_t B = 4, S = 197, N = 196, H = 768, I = 3072, K = 3 * 16 * 16;
  ModelGraph g = m->build_forward({.batch = int64_t(B), .seq = int64_t(S)});
  uint64_t layer0 = 0, patch = 0;
  int dots = 0;
  for (const Node& n : g.graph.nodes()) {
    if (n.kind != OpKind::kDot) continue;
    if (n.name.rfind("vit.encoder.layer.0.", 0) == 0) layer0 += dot_flops(g.graph, n), ++dots;
    if (n.name.rfind("vit.embeddings.", 0) == 0) patch += dot_flops(g.graph, n);
  }
  EXPECT_EQ(dots, 8);
  EXPECT_EQ(layer0, 2 * B * S * (4 * H * H + 2 * H * I) + 4 * B * S * S * H);
  EXPECT_EQ(patch, 2 * B * N * K * H);
}

// A miniature ViT (1 layer, hidden 8, 2 heads, 8x8 one-channel images in 4x4 patches: S = 5) in
// double precision: every parameter's gradient against central finite differences.
class MiniVit : public ::testing::TestWithParam<int64_t> {};

TEST_P(MiniVit, GradientsMatchFiniteDifferences) {
  ModelArch a{.name = "mini-vit", .family = ModelFamily::kVit, .counted_class = "ViTModel", .layers = 1, .hidden = 8, .heads = 2,
              .kv_heads = 2, .head_dim = 4, .intermediate = 12, .image_size = 8, .patch_size = 4, .channels = 1};
  const auto m = make_model(a, {.head = Head::kImageClassification, .num_labels = GetParam()});
  ModelGraph g = m->build_forward({.batch = 2, .seq = 5, .training = false});
  Gradients gr = build_backward(g.graph, g.loss, g.params);
  std::map<int, test::Tensor> in;
  for (int i : g.inputs) {
    const Node& n = g.graph.node(i);
    if (n.name == "labels" && n.dtype == DType::kS32) in[i] = {n.shape, {2, 0}};
  }
  test::expect_gradients_match(g.graph, g.loss, gr, test::random_inputs(g.graph, in, 11), 6);
}

INSTANTIATE_TEST_SUITE_P(Heads, MiniVit, ::testing::Values(3, 1));  // cross-entropy; regression (MSE)

TEST(Vit, UnitsAndModuleTree) {
  const auto m = vit_base(10);
  ModelGraph g = m->build_forward({.batch = 1, .seq = 197});
  ASSERT_EQ(g.units.size(), 14u);
  EXPECT_EQ(g.units.front().name, "vit.embeddings");
  EXPECT_EQ(g.units[1].name, "vit.encoder.layer.0");
  EXPECT_TRUE(g.units[1].layer);
  EXPECT_EQ(g.units.back().name, "heads");
  EXPECT_EQ(g.units.back().last, int(g.graph.nodes().size()) - 1);
  EXPECT_EQ(m->module_class(""), "ViTForImageClassification");
  EXPECT_EQ(m->module_class("vit.encoder.layer.3"), "ViTLayer");
  EXPECT_EQ(m->module_class("vit.encoder.layer.3.attention"), "ViTAttention");
  EXPECT_EQ(m->module_class("vit.encoder.layer.3.attention.attention"), "ViTSelfAttention");
  EXPECT_EQ(m->module_class("vit.encoder.layer.3.attention.output"), "ViTSelfOutput");
  EXPECT_EQ(m->module_class("vit.encoder.layer.3.output"), "ViTOutput");
  EXPECT_EQ(m->module_class("vit.encoder.layer.3.layernorm_before"), "LayerNorm");
  EXPECT_EQ(m->module_class("vit.embeddings.patch_embeddings.projection"), "Conv2d");
}

TEST(Vit, SequenceIsFixedByTheImage) {
  const auto m = vit_base(10);
  EXPECT_THROW(m->build_forward({.batch = 1, .seq = 128}), ConfigError);
  EXPECT_THROW(m->build_forward({.batch = 0, .seq = 197}), ConfigError);
}

}  // namespace
}  // namespace tpusim::models
