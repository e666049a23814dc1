// Fusion rules (compiler/plan/fusion.h) on the kernels whose kernel structure we know from XLA.
#include <gtest/gtest.h>

#include <algorithm>

#include "base/config_error.h"
#include "compiler/plan/fusion.h"
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

// torch_xla's LayerNorm is a batch norm over the rows (models/kernels.cc): a transposed copy of x
// (with the sum as a second output), the sum of squares, the normalization in that layout, and
// the copy back with the affine: four passes over x-sized data.
TEST(Fusion, LayerNormIsABatchNormBetweenLayoutCopies) {
  auto p = plan("layernorm", {{"rows", 64}, {"cols", 256}});
  ASSERT_EQ(p.fusions.size(), 4u);
  EXPECT_EQ(p.fusions[0].kind, FusionKind::kLoop);
  EXPECT_EQ(p.fusions[0].merged_reduces.size(), 1u);  // the sum, computed as the copy is written
  EXPECT_EQ(p.fusions[1].kind, FusionKind::kReduce);  // the sum of squares
  EXPECT_EQ(p.fusions[2].kind, FusionKind::kLoop);    // the batch norm's normalization
  EXPECT_EQ(p.fusions[3].kind, FusionKind::kLoop);    // the copy back with gamma and beta
  EXPECT_EQ(p.fusions[3].inputs.size(), 3u);          // the normalized copy, gamma, beta
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

// 3 projections, scores(+max), sum, attention output, out-proj(+bias+residual), FFN1(+bias+ReLU),
// FFN2(+bias+residual), and per LayerNorm (two) its four kernels: copy(+sum), sum of squares,
// normalization, copy back.
TEST(Fusion, EncoderBlockKernelCount) {
  auto p = plan("encoder_block", {{"seq", 128}, {"hidden", 256}, {"heads", 4}, {"ffn", 1024}});
  EXPECT_EQ(p.fusions.size(), 17u);
  EXPECT_EQ(count_kind(p, FusionKind::kDot), 8);
  EXPECT_EQ(count_kind(p, FusionKind::kReduce), 3);
  EXPECT_EQ(count_kind(p, FusionKind::kLoop), 6);
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
