// Exact vector-unit work of reductions, transposes and broadcasts (compiler/lower/vector_cost.cc), and
// the cycles the VPU formula (sim/vpu/vpu_timing.h) gives them, with the derivation per case.
#include <gtest/gtest.h>

#include "compiler/lower/vector_cost.h"
#include "models/graph.h"
#include "sim/vpu/vpu_timing.h"

namespace tpusim::compiler {
namespace {

using models::DType;
using models::Graph;
using models::ReduceOp;

// TPU v3 VPU: 8 x 128 vregs, 2 ALU slots, 1 load and 1 store slot; XLU at 4 cycles per vreg and
// EUP at 4 (values chosen for the arithmetic here, not the shipped calibration).
VpuParams vpu() {
  VpuParams p;
  p.sublanes = 8;
  p.lanes = 128;
  p.alu_slots = 2;
  p.vld_slots = 1;
  p.vst_slots = 1;
  p.eup_cycles_per_vreg = 4;
  p.xlu_cycles_per_vreg = 4;
  p.pipeline_latency_cycles = 48;
  return p;
}

// Row reduction of [64, 768] f32 over its 768 lanes: 8 row groups of 6 vregs each. The ALUs add
// each group's 6 vregs into one (5 adds x 8 = 40); the XLU reduces each group's lanes once (8).
// VPU cycles: max(ceil(40 / 2) = 20 ALU, 8 x 4 = 32 XLU) = 32.
TEST(VectorCost, LaneReductionIsOneXluPassPerRowGroup) {
  Graph g;
  const int x = g.parameter("x", {64, 768}, DType::kF32);
  const int r = g.reduce(x, 1, ReduceOp::kSum);
  const isa::VpuWork w = node_work(g, g.node(r), vpu());
  EXPECT_EQ(w.alu_vregs, 40u);
  EXPECT_EQ(w.xlu_vregs, 8u);
  EXPECT_EQ(w.eup_vregs, 0u);
  EXPECT_EQ(vpu_issue_cycles(vpu(), w), 32u);
}

// The same reduction over a 128-lane row: one vreg per group, nothing for the ALUs to combine
// (0 adds), one XLU pass per group: 64 rows = 8 groups -> 8 x 4 = 32 cycles.
TEST(VectorCost, LaneReductionOfOneVregPerRowNeedsNoAdds) {
  Graph g;
  const int x = g.parameter("x", {64, 128}, DType::kF32);
  const isa::VpuWork w = node_work(g, g.node(g.reduce(x, 1, ReduceOp::kMax)), vpu());
  EXPECT_EQ(w.alu_vregs, 0u);
  EXPECT_EQ(w.xlu_vregs, 8u);
  EXPECT_EQ(vpu_issue_cycles(vpu(), w), 32u);
}

// Reduction over the major (sublane) dimension of [768, 2048] (the batch-norm layout of a
// LayerNorm): 96 x 16 = 1536 vregs added element-wise, then a log2(8) = 3-step sublane tree on
// the 2 output vregs ([2048] = 16 x 128 lanes: 2 vregs of 8 x 128): 1536 + 3 x 2 = 1542 ALU ops,
// no XLU. Cycles: ceil(1542 / 2) = 771.
TEST(VectorCost, SublaneReductionIsElementwiseAddsAndAShortTree) {
  Graph g;
  const int x = g.parameter("x", {768, 2048}, DType::kF32);
  const isa::VpuWork w = node_work(g, g.node(g.reduce(x, 0, ReduceOp::kSum)), vpu());
  EXPECT_EQ(w.alu_vregs, 1542u);
  EXPECT_EQ(w.xlu_vregs, 0u);
  EXPECT_EQ(vpu_issue_cycles(vpu(), w), 771u);
}

// A transpose that moves the minor dimension goes through the XLU one vreg at a time:
// [256, 384] f32 = 32 x 3 = 96 vregs -> 96 x 4 = 384 cycles.
TEST(VectorCost, MinorTransposeIsOneXluPassPerVreg) {
  Graph g;
  const int x = g.parameter("x", {256, 384}, DType::kF32);
  const isa::VpuWork w = node_work(g, g.node(g.transpose(x, {1, 0})), vpu());
  EXPECT_EQ(w.xlu_vregs, 96u);
  EXPECT_EQ(vpu_issue_cycles(vpu(), w), 384u);
}

// exp: one EUP pass plus 2 ALU ops (range reduction, scaling) per vreg: [64, 256] = 16 vregs ->
// max(16 x 4 = 64 EUP, ceil(32 / 2) = 16 ALU) = 64 cycles.
TEST(VectorCost, ExpIsEupBound) {
  Graph g;
  const int x = g.parameter("x", {64, 256}, DType::kF32);
  const isa::VpuWork w = node_work(g, g.node(g.ew(models::EwOp::kExp, x)), vpu());
  EXPECT_EQ(w.eup_vregs, 16u);
  EXPECT_EQ(w.alu_vregs, 32u);
  EXPECT_EQ(vpu_issue_cycles(vpu(), w), 64u);
}

}  // namespace
}  // namespace tpusim::compiler
