// The dot tiling on its own (compiler/lower/dot_tiling.h), without a ProgramBuilder: the decisions for
// shapes of lowering_test.cc pinned (a change to the cost model that moves them should be a
// deliberate one), and the search's rules on hand-built problems.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "compiler/compile.h"
#include "compiler/lower/dot_parts.h"
#include "compiler/lower/dot_tiling.h"
#include "compiler/plan/fusion.h"
#include "config/hw_loader.h"

namespace tpusim::compiler {
namespace {

HwConfig v3() { return load_hw_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/v3-8.yaml"); }

// The problem of the first dot kernel of a kernel graph, as the lowering builds it.
DotProblem problem_of(const std::string& kernel, std::map<std::string, uint64_t> shape, const HwConfig& hw,
                      const std::string& dtype = "f32", const std::string& precision = "default") {
  KernelRequest r{kernel, std::move(shape), models::parse_float_dtype(dtype).value(),
                  models::parse_dot_precision(precision).value()};
  const models::Graph g = build_kernel_graph(r, hw);
  const FusionPlan plan = plan_fusions(g);
  auto f = std::find_if(plan.fusions.begin(), plan.fusions.end(), [](const Fusion& x) { return x.kind == FusionKind::kDot; });
  EXPECT_NE(f, plan.fusions.end());
  return split_dot_kernel(g, *f, hw.chip.core.vpu).problem;
}

DotTiling tiling_of(const DotProblem& p, const HwConfig& hw) {
  return choose_dot_tiling(p, hw, hw.chip.core.vmem.size_bytes());
}

// What every tiling must satisfy: it covers the problem and its buffers fit in VMEM.
void check_tiling(const DotTiling& t, const DotProblem& p, uint64_t vmem_bytes) {
  ASSERT_TRUE(t.fits);
  EXPECT_EQ(t.r, t.stream_lhs ? p.m : p.n);
  EXPECT_EQ(t.c, t.stream_lhs ? p.n : p.m);
  EXPECT_EQ(t.k, p.k);
  EXPECT_GE(t.row_tiles * t.tr, t.r);
  EXPECT_LT((t.row_tiles - 1) * t.tr, t.r);
  EXPECT_GE(t.col_tiles * t.tc, t.c);
  EXPECT_GE(t.k_blocks * t.tk, t.k);
  EXPECT_EQ(t.steps, uint64_t(t.batch * t.row_tiles * t.col_tiles * t.k_blocks));
  EXPECT_LE(t.streamed_buffer_bytes + t.stationary_buffer_bytes + t.fixed_buffer_bytes, vmem_bytes);
  EXPECT_GE(t.acc_tiles, 2u);
  EXPECT_LE(t.acc_tiles, 4u);
  EXPECT_GE(t.accumulate_lag_steps, 1u);
  EXPECT_LE(t.accumulate_lag_steps, 4u);
}

// The decision for a lowering_test.cc shape: orientation, tile sizes, residency, pipelining.
struct Pinned {
  bool stream_lhs;
  int64_t tr, tc, tk;
  bool streamed_resident, stationary_resident;
  uint32_t acc_tiles;
  size_t lag;
  uint64_t steps;
};

void expect_tiling(const DotTiling& t, const Pinned& want) {
  EXPECT_EQ(t.stream_lhs, want.stream_lhs);
  EXPECT_EQ(t.tr, want.tr);
  EXPECT_EQ(t.tc, want.tc);
  EXPECT_EQ(t.tk, want.tk);
  EXPECT_EQ(t.streamed_resident, want.streamed_resident);
  EXPECT_EQ(t.stationary_resident, want.stationary_resident);
  EXPECT_EQ(t.acc_tiles, want.acc_tiles);
  EXPECT_EQ(t.accumulate_lag_steps, want.lag);
  EXPECT_EQ(t.steps, want.steps);
}

TEST(DotTiling, SquareMatmulKeepsBothOperandsResident) {
  const auto hw = v3();
  const DotProblem p = problem_of("matmul", {{"m", 1024}, {"k", 1024}, {"n", 1024}}, hw);
  EXPECT_EQ(p.m, 1024);
  EXPECT_EQ(p.k, 1024);
  EXPECT_EQ(p.n, 1024);
  EXPECT_EQ(p.passes, 1u);
  const DotTiling t = tiling_of(p, hw);
  check_tiling(t, p, hw.chip.core.vmem.size_bytes());
  expect_tiling(t, {true, 512, 256, 256, true, true, 2, 2, 32});
}

TEST(DotTiling, HighPrecisionTriplesThePassesAndReshapesTheTiles) {
  const auto hw = v3();
  const DotProblem def = problem_of("matmul", {{"m", 512}, {"k", 512}, {"n", 512}}, hw);
  const DotProblem high = problem_of("matmul", {{"m", 512}, {"k", 512}, {"n", 512}}, hw, "f32", "high");
  EXPECT_EQ(def.passes, 1u);
  EXPECT_EQ(high.passes, 3u);
  expect_tiling(tiling_of(def, hw), {true, 256, 256, 128, true, true, 2, 2, 16});
  expect_tiling(tiling_of(high, hw), {true, 256, 128, 256, true, true, 2, 2, 16});
  EXPECT_GT(tiling_of(high, hw).est_cycles, tiling_of(def, hw).est_cycles);
}

TEST(DotTiling, LessVmemGivesUpResidencyThenShrinksTheTiles) {
  const auto hw = v3();
  const DotProblem p = problem_of("matmul", {{"m", 2048}, {"k", 2048}, {"n", 2048}}, hw);
  const DotTiling full = tiling_of(p, hw);
  check_tiling(full, p, hw.chip.core.vmem.size_bytes());
  expect_tiling(full, {true, 512, 512, 512, false, true, 2, 2, 64});
  const DotTiling small = choose_dot_tiling(p, hw, 2u << 20);
  check_tiling(small, p, 2u << 20);
  expect_tiling(small, {true, 256, 256, 256, false, false, 2, 2, 512});
  EXPECT_GT(small.est_cycles, full.est_cycles);
}

TEST(DotTiling, RaggedShapeStreamsTheRhsInPaddedTiles) {
  const auto hw = v3();
  const DotProblem p = problem_of("matmul", {{"m", 1000}, {"k", 77}, {"n", 300}}, hw);
  const DotTiling t = tiling_of(p, hw);
  check_tiling(t, p, hw.chip.core.vmem.size_bytes());
  // The rhs streams (its 300 rows in one tile rounded to 8 sublanes); K = 77 is one MXU-deep block.
  expect_tiling(t, {false, 304, 128, 128, true, true, 4, 3, 8});
  EXPECT_EQ(t.rows_in(0), 300);
  EXPECT_EQ(t.cols_in(7), 1000 - 7 * 128);
  EXPECT_EQ(t.depth_in(0), 77);
}

TEST(DotTiling, AttentionBatchesOverHeads) {
  const auto hw = v3();
  const DotProblem p = problem_of("attention", {{"heads", 16}, {"seq", 512}, {"head_dim", 64}}, hw);
  EXPECT_EQ(p.batch, 16);
  const DotTiling t = tiling_of(p, hw);
  check_tiling(t, p, hw.chip.core.vmem.size_bytes());
  expect_tiling(t, {true, 512, 256, 128, true, true, 4, 2, 32});
}

// A hand-built bf16 problem [m x k] . [k x n] with an fp32 output and no fused ops.
DotProblem plain(int64_t m, int64_t k, int64_t n) {
  DotProblem p;
  p.m = m;
  p.k = k;
  p.n = n;
  p.operands[0].large_bytes = uint64_t(m * k * 2);
  p.operands[1].large_bytes = uint64_t(k * n * 2);
  p.out_bytes = uint64_t(m * n * 4);
  p.out_elems = m * n;
  return p;
}

TEST(DotTiling, NothingFitsInATinyVmem) {
  const auto hw = v3();
  EXPECT_FALSE(choose_dot_tiling(plain(1024, 1024, 1024), hw, 4096).fits);
}

TEST(DotTiling, ASmallInputWithoutRoomIsStreamedWithItsOperand) {
  const auto hw = v3();
  DotProblem p = plain(1024, 1024, 1024);
  // Two inputs of the rhs held whole: 1 MiB fits beside the tiles in 4 MiB, 6 MiB does not.
  p.operands[1].small_bytes = {1u << 20, 6u << 20};
  const DotTiling t = choose_dot_tiling(p, hw, 4u << 20);
  check_tiling(t, p, 4u << 20);
  EXPECT_TRUE(t.streamed_small[0].empty());
  EXPECT_EQ(t.streamed_small[1], std::vector<size_t>{1});
  // With room for both, both stay whole.
  EXPECT_TRUE(choose_dot_tiling(p, hw, 16u << 20).streamed_small[1].empty());
}

TEST(DotTiling, AMergedReductionsLineStaysInOneTile) {
  const auto hw = v3();
  DotProblem p = plain(2048, 1024, 2048);
  p.merged_reduces = true;
  p.reduce_spans_n = true;  // a reduction along N: each output row's line is reduced whole
  p.reduce_out_bytes = 2048 * 4;
  const DotTiling t = tiling_of(p, hw);
  check_tiling(t, p, hw.chip.core.vmem.size_bytes());
  // N is the columns when the lhs streams, the rows otherwise: either way one tile spans it.
  EXPECT_EQ(t.stream_lhs ? t.col_tiles : t.row_tiles, 1);
}

TEST(DotTiling, StepsRunKInnermostThenColumnsRowsAndBatches) {
  DotTiling t;
  t.batch = 2;
  t.row_tiles = 2;
  t.col_tiles = 3;
  t.k_blocks = 2;
  t.steps = 24;
  const std::vector<DotStep> s = dot_steps(t);
  ASSERT_EQ(s.size(), 24u);
  EXPECT_EQ(s[1].k, 1);
  EXPECT_EQ(s[2].j, 1);
  EXPECT_EQ(s[2].k, 0);
  EXPECT_EQ(s[6].i, 1);
  EXPECT_EQ(s[12].b, 1);
  EXPECT_EQ(s[23].b * 100 + s[23].i * 10 + s[23].j, 112);
  EXPECT_EQ(s[23].k, 1);
}

}  // namespace
}  // namespace tpusim::compiler
