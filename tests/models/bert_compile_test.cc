// The lead's compiler lowers a whole BERT training step (forward, backward, AdamW) without
// tripping on the training ops (gather, scatter-add, iota, compares, dropout masks, batched dots).
#include <gtest/gtest.h>

#include "compiler/compile.h"
#include "models/bert.h"
#include "models/families.h"
#include "tests/sim/test_hw.h"

namespace tpusim::models {
namespace {

uint64_t dot_macs(const Graph& g) {
  uint64_t macs = 0;
  for (const auto& n : g.nodes()) {
    if (n.kind != OpKind::kDot) continue;
    int64_t k = 1;
    for (int d : n.dot.lhs_contract) k *= g.node(n.inputs[0]).shape[d];
    macs += uint64_t(num_elements(n.shape)) * uint64_t(k);
  }
  return macs;
}

TEST(BertCompile, TinyTrainingStepCompiles) {
  const std::pair<Head, OptimizerConfig> cases[] = {
      {Head::kSequenceClassification, OptimizerConfig{}},
      {Head::kMaskedLm, OptimizerConfig{}},
      {Head::kSequenceClassification, OptimizerConfig{.first_step = true}},
      {Head::kMaskedLm, OptimizerConfig{.kind = OptimizerKind::kLamb, .max_grad_norm = 1.0}},
  };
  for (const auto& [head, opt] : cases) {
    BertTrainingStep s = build_training_step(find_preset("bert-tiny"),
                                             {.head = head, .batch = 2, .seq = 16, .max_predictions_per_seq = 3}, opt);
    const HwConfig hw = test::v3_8_like();
    isa::Program p = compiler::compile_graph(s.model.graph, hw, "bert_tiny_train", 0, 0);
    ASSERT_EQ(p.cores.size(), 1u);
    EXPECT_FALSE(p.cores[0].instrs.empty());
    EXPECT_GT(p.info.fusions, 0u);
    EXPECT_EQ(p.info.flops, 2 * dot_macs(s.model.graph));
  }
}

TEST(BertCompile, BertBaseStepsCompileAtEveryCommonBatchSize) {
  // At batch 16 (2048 rows) the LayerNorm backward fused into its dot needs an output tile spanning
  // all 2048 rows plus five [2048, 768] epilogue operands: it fits VMEM only with < 128 rows per
  // tile, which the tiling search falls back to instead of failing.
  const HwConfig hw = test::v3_8_like();
  for (int64_t batch : {4, 8, 12, 16, 32}) {
    SCOPED_TRACE(batch);
    BertTrainingStep s = build_training_step(find_preset("bert-base-cased"), {.batch = batch, .seq = 128}, {});
    isa::Program p = compiler::compile_graph(s.model.graph, hw, "bert_base_train", 0, 0);
    EXPECT_EQ(p.info.flops, 2 * dot_macs(s.model.graph));
  }
}

}  // namespace
}  // namespace tpusim::models
