// unit + block: the collective statistics (sim/analysis/collective_stats.h): the interval union they
// are kept with, and hand-built programs with a known overlap on both engines.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "sim/base/clock.h"
#include "sim/base/interval_union.h"
#include "sim/engine/engine.h"
#include "sim/vpu/vpu_timing.h"
#include "tests/sim/test_hw.h"
#include "tests/sim/test_program.h"

namespace tpusim {
namespace {

TEST(IntervalUnion, MergesInAnyOrder) {
  IntervalUnion u;
  u.add(10, 20);
  u.add(30, 40);
  u.add(20, 25);  // touches the first: extends it
  u.add(0, 5);    // earlier than everything
  u.add(4, 11);   // bridges [0,5) and [10,25)
  u.add(50, 50);  // empty: nothing
  ASSERT_EQ(u.spans().size(), 2u);
  EXPECT_EQ(u.spans()[0].a, 0u);
  EXPECT_EQ(u.spans()[0].b, 25u);
  EXPECT_EQ(u.spans()[1].a, 30u);
  EXPECT_EQ(u.spans()[1].b, 40u);
  EXPECT_EQ(u.length(), 35u);
  u.add(26, 28);  // between the two, touching neither
  EXPECT_EQ(u.spans().size(), 3u);
  u.add(1, 100);  // covers all
  ASSERT_EQ(u.spans().size(), 1u);
  EXPECT_EQ(u.length(), 100u);
}

TEST(IntervalUnion, LengthOutside) {
  IntervalUnion c, f;
  c.add(0, 100);
  c.add(200, 300);
  f.add(10, 20);
  f.add(50, 210);  // covers the end of the first and the start of the second
  f.add(290, 400);
  // Outside f: [0,10) + [20,50) + [210,290) = 10 + 30 + 80.
  EXPECT_EQ(c.length_outside(f), 120u);
  EXPECT_EQ(f.length_outside(c), 200u);  // [100,200) + [300,400): [10,20) is inside c
}

// One core: a foreground VPU block A and, from the launch on, a collective's background DMA; a
// second VPU block B waits for the DMA. The core's own work covers [L, L + a) and [t, t + b)
// (t: the DMA's end, a and b: the blocks' issue cycles plus the VPU's pipeline latency), the
// all-reduce [L, t): busy = t - L, exposed = t - L - a. B ends the program: t = end - b.
isa::Program overlap_program(uint64_t a_vregs, uint64_t dma_bytes) {
  isa::Program p = test::make_program("collective overlap");
  test::Stream s(p.cores[0]);
  s.vpu({.alu_vregs = a_vregs}, {}, "A");
  const uint32_t d = s.async(s.dma_load(dma_bytes, {}, "all-reduce:load"));
  p.cores[0].instrs[d].collective = isa::Collective::kAllReduce;
  s.vpu({.alu_vregs = 200}, {d}, "B");
  return p;
}

uint64_t block_cycles(const HwConfig& hw, uint64_t alu_vregs) {
  return vpu_issue_cycles(hw.chip.core.vpu, {.alu_vregs = alu_vregs}) + hw.chip.core.vpu.pipeline_latency_cycles;
}

class CollectiveStatsEngines : public ::testing::TestWithParam<std::string> {};

TEST_P(CollectiveStatsEngines, ExposedIsTheCollectiveTimeWithoutOwnWork) {
  const HwConfig hw = test::v3_8_like();
  const uint64_t launch = hw.chip.core.sequencer.launch_cycles;
  const RunResult r = make_engine(GetParam(), hw)->run(overlap_program(200, 4ull << 20), nullptr);
  const uint64_t a = block_cycles(hw, 200), b = block_cycles(hw, 200);
  const CollectiveKindStats& ar = r.collectives[isa::Collective::kAllReduce];
  ASSERT_GT(r.device_cycles, launch + a + b + 1000);  // the DMA outlasts A by far
  EXPECT_EQ(ar.instructions, 1u);
  EXPECT_EQ(ar.bytes, 0u);  // a DMA sends nothing
  EXPECT_EQ(ar.busy_cycles, r.device_cycles - b - launch);
  EXPECT_EQ(ar.exposed_cycles, r.device_cycles - b - launch - a);
  EXPECT_DOUBLE_EQ(ar.exposed_s, Clock{hw.chip.core.clock_mhz}.seconds(ar.exposed_cycles));
  for (isa::Collective k : {isa::Collective::kAllGather, isa::Collective::kReduceScatter, isa::Collective::kAllToAll}) {
    EXPECT_EQ(r.collectives[k].instructions, 0u);
    EXPECT_EQ(r.collectives[k].busy_cycles, 0u);
  }
}

TEST_P(CollectiveStatsEngines, HiddenCollectiveIsNotExposed) {
  const HwConfig hw = test::v3_8_like();
  const uint64_t launch = hw.chip.core.sequencer.launch_cycles;
  // A runs 10^5 cycles, the DMA ~10^4: B waits for A's VPU, not for the all-reduce.
  const RunResult r = make_engine(GetParam(), hw)->run(overlap_program(200000, 4ull << 20), nullptr);
  const CollectiveKindStats& ar = r.collectives[isa::Collective::kAllReduce];
  EXPECT_GT(ar.busy_cycles, 5000u);
  EXPECT_LT(ar.busy_cycles, block_cycles(hw, 200000));
  EXPECT_EQ(ar.exposed_cycles, 0u);
  // B issues right behind A on the VPU (the DMA is long done): the all-reduce held nothing up.
  EXPECT_EQ(r.device_cycles, launch + block_cycles(hw, 200000) + vpu_issue_cycles(hw.chip.core.vpu, {.alu_vregs = 200}));
}

// Background work that is not a collective (an infeed) does not hide one: the same program with
// a second, unmarked background DMA as long as the collective's gives the same statistics.
TEST_P(CollectiveStatsEngines, BackgroundWorkDoesNotHideACollective) {
  const HwConfig hw = test::v3_8_like();
  isa::Program p = overlap_program(200, 4ull << 20);
  test::Stream s(p.cores[0]);
  s.async(s.dma_load(4ull << 20, {}, "infeed"));
  const auto engine = make_engine(GetParam(), hw);
  const RunResult with = engine->run(p, nullptr);
  const RunResult without = engine->run(overlap_program(200, 4ull << 20), nullptr);
  const CollectiveKindStats& ar = with.collectives[isa::Collective::kAllReduce];
  const uint64_t b = block_cycles(hw, 200);
  // The two DMAs share HBM, so the collective's may end later; its exposure follows it.
  EXPECT_GE(ar.busy_cycles, without.collectives[isa::Collective::kAllReduce].busy_cycles);
  EXPECT_GE(with.device_cycles, b + ar.busy_cycles);
  EXPECT_EQ(ar.exposed_cycles, ar.busy_cycles - block_cycles(hw, 200));
}

// Per mesh axis: two all-reduces, one after the other, along two axes (isa::Instr::collective_axis):
// each axis has its own's figures, the kind both's, and an axis nothing runs along nothing.
TEST_P(CollectiveStatsEngines, EachMeshAxisHasItsCollectivesTime) {
  const HwConfig hw = test::v3_8_like();
  isa::Program p = test::make_program("two axes");
  test::Stream s(p.cores[0]);
  const uint32_t d1 = s.dma_load(4ull << 20, {}, "all-reduce.1:load");
  const uint32_t d2 = s.dma_load(1ull << 20, {d1}, "all-reduce.2:load");
  p.cores[0].instrs[d1].collective = p.cores[0].instrs[d2].collective = isa::Collective::kAllReduce;
  p.cores[0].instrs[d1].collective_axis = 1;  // data
  p.cores[0].instrs[d2].collective_axis = 4;  // tensor
  const RunResult r = make_engine(GetParam(), hw)->run(p, nullptr);
  const CollectiveStats& c = r.collectives;
  const CollectiveKindStats& ar = c[isa::Collective::kAllReduce];
  EXPECT_EQ(c.axes[1].instructions, 1u);
  EXPECT_EQ(c.axes[4].instructions, 1u);
  EXPECT_GT(c.axes[1].busy_cycles, 2 * c.axes[4].busy_cycles);  // four times the bytes
  EXPECT_GT(c.axes[4].busy_cycles, 0u);
  EXPECT_EQ(c.axes[1].busy_cycles + c.axes[4].busy_cycles, ar.busy_cycles);  // one after the other
  EXPECT_EQ(c.axes[1].exposed_cycles + c.axes[4].exposed_cycles, ar.exposed_cycles);
  for (size_t a : {size_t(0), size_t(2), size_t(3), size_t(isa::kDcnAxis)}) EXPECT_EQ(c.axes[a].busy_cycles, 0u) << a;
}

INSTANTIATE_TEST_SUITE_P(BothEngines, CollectiveStatsEngines, ::testing::Values("systemc", "analytical"));

}  // namespace
}  // namespace tpusim
