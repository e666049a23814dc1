// block: MXU and VPU stats and trace events through the SystemC engine.
#include <gtest/gtest.h>

#include "sim/engine/engine.h"
#include "tests/sim/exact_cycle_cases.h"
#include "tests/sim/test_hw.h"

namespace tpusim {
namespace {

// W (k=128) 2000..2016; M1 streams 2016..2272, M2 2272..2528 (done 2784).
TEST(MxuBlock, StatsAndTraceOfPipelinedMatmuls) {
  auto engine = make_engine("systemc", test::v3_8_like());
  auto p = test::make_program("mxu");
  test::Stream s(p.cores[0]);
  uint32_t w = s.weights(1, 128, 128, {}, "w");
  s.matmul(1, 256, 128, 128, {w}, 1, "m1");
  s.matmul(1, 256, 128, 96, {w}, 1, "m2");
  test::RecordingTrace trace;
  RunResult r = engine->run(p, &trace);
  ASSERT_EQ(r.device_cycles, 2784u);
  const std::string mxu = "slice.chip0.core0.mxu1";
  EXPECT_EQ(test::stat(r, mxu, "busy_cycles"), 512);
  EXPECT_EQ(test::stat(r, mxu, "weight_load_cycles"), 16);
  EXPECT_EQ(test::stat(r, mxu, "matmuls"), 2);
  EXPECT_EQ(test::stat(r, mxu, "weight_loads"), 1);
  EXPECT_EQ(test::stat(r, mxu, "rows"), 512);
  // Useful flops: 2*256*128*128 + 2*256*128*96; peak 2*128*128 per cycle over 2784 cycles.
  const double flops = 2.0 * 256 * 128 * 128 + 2.0 * 256 * 128 * 96;
  EXPECT_EQ(test::stat(r, mxu, "flops"), flops);
  EXPECT_NEAR(test::stat(r, mxu, "utilization"), flops / (2.0 * 128 * 128 * 2784), 1e-12);
  EXPECT_NEAR(test::stat(r, mxu, "stream_utilization"), 512.0 / 2784, 1e-12);
  EXPECT_EQ(test::stat(r, "slice.chip0.core0.mxu0", "matmuls"), 0);

  auto stream = trace.on("slice.chip0", "core0.mxu1");
  ASSERT_EQ(stream.size(), 2u);
  EXPECT_EQ(stream[0].name, "m1");
  EXPECT_EQ(stream[0].start, 2016u);
  EXPECT_EQ(stream[0].dur, 256u);
  EXPECT_EQ(stream[1].start, 2272u);
  auto weights = trace.on("slice.chip0", "core0.mxu1.weights");
  ASSERT_EQ(weights.size(), 1u);
  EXPECT_EQ(weights[0].start, 2000u);
  EXPECT_EQ(weights[0].dur, 16u);
}

// Three blocks back to back (in order): ALU-bound 500, EUP-bound 800, XLU-bound 880 cycles:
// 2000..2500..3300..4180, the last done 4180 + 32 = 4212.
TEST(VpuBlock, SlotBoundOccupancyAndStats) {
  auto engine = make_engine("systemc", test::v3_8_like());
  auto p = test::make_program("vpu");
  test::Stream s(p.cores[0]);
  s.vpu({.alu_vregs = 1000, .eup_vregs = 100, .vld_vregs = 300, .vst_vregs = 300}, {}, "alu");
  s.vpu({.alu_vregs = 1000, .eup_vregs = 200}, {}, "eup");
  s.vpu({.alu_vregs = 1000, .eup_vregs = 150, .xlu_vregs = 110}, {}, "xlu");
  test::RecordingTrace trace;
  RunResult r = engine->run(p, &trace);
  ASSERT_EQ(r.device_cycles, 4212u);
  const std::string vpu = "slice.chip0.core0.vpu";
  EXPECT_EQ(test::stat(r, vpu, "busy_cycles"), 500 + 800 + 880);
  EXPECT_EQ(test::stat(r, vpu, "blocks"), 3);
  EXPECT_EQ(test::stat(r, vpu, "alu_vregs"), 3000);
  EXPECT_EQ(test::stat(r, vpu, "eup_vregs"), 450);
  EXPECT_EQ(test::stat(r, vpu, "xlu_vregs"), 110);
  EXPECT_EQ(test::stat(r, vpu, "vld_vregs"), 300);
  EXPECT_EQ(test::stat(r, vpu, "vst_vregs"), 300);
  EXPECT_NEAR(test::stat(r, vpu, "utilization"), 2180.0 / 4212, 1e-12);
  auto ev = trace.on("slice.chip0", "core0.vpu");
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[1].name, "eup");
  EXPECT_EQ(ev[1].start, 2500u);
  EXPECT_EQ(ev[1].dur, 800u);
  EXPECT_EQ(ev[2].start, 3300u);
}

}  // namespace
}  // namespace tpusim
