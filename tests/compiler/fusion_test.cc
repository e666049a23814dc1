// Fusion rules (compiler/fusion.h) on the kernels whose kernel structure we know from XLA.
#include <gtest/gtest.h>

#include <algorithm>

#include "compiler/fusion.h"
#include "config/config_error.h"
#include "models/kernels.h"

namespace tpusim::compiler {
namespace {

using models::KernelArgs;

FusionPlan plan(const std::string& kernel, std::map<std::string, uint64_t> shape) {
  return plan_fusions(models::build_kernel(KernelArgs{kernel, shape}));
}

int count_kind(const FusionPlan& p, FusionKind k) {
  return int(std::count_if(p.fusions.begin(), p.fusions.end(), [k](const Fusion& f) { return f.kind == k; }));
}

TEST(Fusion, MatmulIsOneDotKernel) {
  auto p = plan("matmul", {{"m", 256}, {"k", 128}, {"n", 64}});
  ASSERT_EQ(p.fusions.size(), 1u);
  EXPECT_EQ(p.fusions[0].kind, FusionKind::kDot);
  EXPECT_EQ(p.fusions[0].inputs.size(), 2u);
}

// mean and variance are dependent reductions (two kernels); normalize/scale/shift fuse into one
// element-wise kernel that recomputes x - mean instead of materializing it.
TEST(Fusion, LayerNormIsTwoReductionsAndOneLoop) {
  auto p = plan("layernorm", {{"rows", 64}, {"cols", 256}});
  ASSERT_EQ(p.fusions.size(), 3u);
  EXPECT_EQ(count_kind(p, FusionKind::kReduce), 2);
  EXPECT_EQ(count_kind(p, FusionKind::kLoop), 1);
  EXPECT_EQ(p.fusions.back().kind, FusionKind::kLoop);
}

// max, then sum(exp(x - max)), then exp(x - max) / sum: exp is recomputed, never stored.
TEST(Fusion, SoftmaxRecomputesExpInsteadOfStoringIt) {
  auto p = plan("softmax", {{"rows", 64}, {"cols", 256}});
  ASSERT_EQ(p.fusions.size(), 3u);
  EXPECT_EQ(p.fusions[0].kind, FusionKind::kReduce);
  EXPECT_EQ(p.fusions[1].kind, FusionKind::kReduce);
  EXPECT_EQ(p.fusions[2].kind, FusionKind::kLoop);
  // The last kernel reads x and both reductions: three inputs.
  EXPECT_EQ(p.fusions[2].inputs.size(), 3u);
}

// scores = k.q^T with the scale as epilogue and the max reduction as a second output; the sum
// reduction; then the second dot with the softmax normalization as its operand prologue.
TEST(Fusion, AttentionMergesMaxIntoScoresAndSoftmaxIntoSecondDot) {
  auto p = plan("attention", {{"heads", 4}, {"seq", 128}, {"head_dim", 64}});
  ASSERT_EQ(p.fusions.size(), 3u);
  EXPECT_EQ(p.fusions[0].kind, FusionKind::kDot);
  EXPECT_EQ(p.fusions[0].merged_reduces.size(), 1u);
  EXPECT_EQ(p.fusions[1].kind, FusionKind::kReduce);
  EXPECT_EQ(p.fusions[2].kind, FusionKind::kDot);
  EXPECT_GT(p.fusions[2].nodes.size(), 4u);  // dot + sub, exp, div, broadcasts
}

// 3 projections, scores(+max), sum, attention output, out-proj(+bias+residual, +LN mean),
// LN1 variance, LN1 normalize, FFN1(+bias+ReLU), FFN2(+bias+residual, +LN mean), LN2 variance,
// LN2 normalize.
TEST(Fusion, EncoderBlockKernelCount) {
  auto p = plan("encoder_block", {{"seq", 128}, {"hidden", 256}, {"heads", 4}, {"ffn", 1024}});
  EXPECT_EQ(p.fusions.size(), 13u);
  EXPECT_EQ(count_kind(p, FusionKind::kDot), 8);
  EXPECT_EQ(count_kind(p, FusionKind::kReduce), 3);
  EXPECT_EQ(count_kind(p, FusionKind::kLoop), 2);
}

TEST(Fusion, KernelNamesAreUnique) {
  auto p = plan("encoder_block", {{"seq", 128}, {"hidden", 256}, {"heads", 4}, {"ffn", 1024}});
  std::set<std::string> names;
  for (const auto& f : p.fusions) EXPECT_TRUE(names.insert(f.name).second) << f.name;
}

TEST(KernelSpecs, UnknownKernelListsKnownOnes) {
  try {
    models::build_kernel(KernelArgs{"matmull", {{"m", 1}}});
    FAIL();
  } catch (const ConfigError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("matmull"), std::string::npos);
    EXPECT_NE(m.find("matmul, layernorm"), std::string::npos);
  }
}

TEST(KernelSpecs, ShapeKeysAreChecked) {
  EXPECT_THROW(models::build_kernel(KernelArgs{"matmul", {{"m", 8}, {"k", 8}}}), ConfigError);              // missing n
  EXPECT_THROW(models::build_kernel(KernelArgs{"matmul", {{"m", 8}, {"k", 0}, {"n", 8}}}), ConfigError);    // zero
  EXPECT_THROW(models::build_kernel(KernelArgs{"softmax", {{"rows", 8}, {"cols", 8}, {"x", 1}}}), ConfigError);  // extra
  EXPECT_THROW(models::build_kernel(KernelArgs{"encoder_block", {{"seq", 8}, {"hidden", 100}, {"heads", 3}, {"ffn", 8}}}),
               ConfigError);  // heads must divide hidden
}

}  // namespace
}  // namespace tpusim::compiler
