// unit: the analytical engine (list schedule) on the exact-cycle cases, plus what only it does.
#include <gtest/gtest.h>

#include "sim/base/sim_error.h"
#include "sim/engine/engine.h"
#include "tests/sim/exact_cycle_cases.h"
#include "tests/sim/test_hw.h"

namespace tpusim {
namespace {

TEST(AnalyticalEngine, ExactCycleCases) {
  auto engine = make_engine("analytical", test::v3_8_like());
  for (const auto& c : test::exact_cycle_cases()) {
    RunResult r = engine->run(c.program, nullptr);
    EXPECT_EQ(r.device_cycles, c.device_cycles) << c.name;
    for (size_t i = 0; i < c.core_cycles.size(); ++i) EXPECT_EQ(r.cores.at(i).end_cycle, c.core_cycles[i]) << c.name;
  }
}

// No channels: a lone 32 KiB load gets the core's whole bandwidth:
// 2000 + 299 + ceil(32768 / 430.851 = 76.05) = 2376.
TEST(AnalyticalEngine, SmallTransferUsesTheAggregateBandwidth) {
  auto engine = make_engine("analytical", test::v3_8_like());
  auto p = test::make_program("small");
  test::Stream(p.cores[0]).dma_load(32768);
  EXPECT_EQ(engine->run(p, nullptr).device_cycles, 2376u);
}

// Four concurrent 256 KiB loads on one serial server: each takes ceil(262144 / 430.851) = 609;
// the server runs 2064..2673..3282..3891..4500, the last completes 4500 + 235 = 4735.
TEST(AnalyticalEngine, ConcurrentTransfersSerializeOnTheServer) {
  auto engine = make_engine("analytical", test::v3_8_like());
  auto p = test::make_program("four");
  test::Stream s(p.cores[0]);
  for (int i = 0; i < 4; ++i) s.dma_load(256 * 1024);
  EXPECT_EQ(engine->run(p, nullptr).device_cycles, 4735u);
}

TEST(AnalyticalEngine, StatsAndTrace) {
  auto engine = make_engine("analytical", test::v3_8_like());
  auto p = test::make_program("chain");
  for (auto& c : test::exact_cycle_cases())
    if (c.name == "chain") p = c.program;
  test::RecordingTrace trace;
  RunResult r = engine->run(p, &trace);
  ASSERT_EQ(r.device_cycles, 8282u);
  EXPECT_DOUBLE_EQ(r.device_time_s, 8282 / 940e6);
  // MXU: 256 rows streamed, flops 2*256*128*128; utilization = flops / (2*128*128 * 8282).
  EXPECT_EQ(test::stat(r, "slice.chip0.core0.mxu0", "busy_cycles"), 256);
  EXPECT_EQ(test::stat(r, "slice.chip0.core0.mxu0", "weight_load_cycles"), 16);
  EXPECT_EQ(test::stat(r, "slice.chip0.core0.mxu0", "flops"), 2.0 * 256 * 128 * 128);
  EXPECT_NEAR(test::stat(r, "slice.chip0.core0.mxu0", "utilization"), 256.0 / 8282, 1e-12);
  EXPECT_EQ(test::stat(r, "slice.chip0.core0.vpu", "busy_cycles"), 256);
  EXPECT_EQ(test::stat(r, "slice.chip0.core0.vpu", "alu_vregs"), 512);
  // DMA: two transfers of 299 + 2434 = 2733 cycles each.
  EXPECT_EQ(test::stat(r, "slice.chip0.core0.dma", "bytes"), 2.0 * test::kMiB);
  EXPECT_EQ(test::stat(r, "slice.chip0.core0.dma", "busy_cycles"), 2 * 2733);
  EXPECT_EQ(test::stat(r, "slice.chip0.core0.sequencer", "instructions"), 5);
  EXPECT_EQ(test::stat(r, "slice.chip0.core0.sequencer", "total_cycles"), 8282);
  EXPECT_EQ(test::stat(r, "slice.chip0.hbm", "bytes"), 2.0 * test::kMiB);
  EXPECT_NEAR(test::stat(r, "slice.chip0.hbm", "achieved_gbyte_per_s"), 2.0 * test::kMiB / (8282 / 940e6) / 1e9, 1e-9);
  EXPECT_EQ(test::stat(r, "slice", "device_cycles"), 8282);
  EXPECT_FALSE(r.stats.contains("slice.chip1.hbm"));  // idle chips are not reported

  auto dma = trace.on("slice.chip0", "core0.dma0");
  ASSERT_EQ(dma.size(), 2u);
  EXPECT_EQ(dma[0].start, 2000u);
  EXPECT_EQ(dma[0].dur, 2733u);
  EXPECT_EQ(dma[0].bytes, test::kMiB);
  EXPECT_EQ(dma[1].start, 5549u);
  auto mm = trace.on("slice.chip0", "core0.mxu0");
  ASSERT_EQ(mm.size(), 1u);
  EXPECT_EQ(mm[0].start, 4749u);
  EXPECT_EQ(mm[0].dur, 256u);
  EXPECT_EQ(trace.on("slice.chip0", "core0.mxu0.weights").size(), 1u);
  EXPECT_EQ(trace.on("slice.chip0", "core0.vpu").size(), 1u);
  EXPECT_EQ(trace.on("slice.chip0", "hbm.core0").size(), 2u);
}

TEST(AnalyticalEngine, BarrierDeadlockIsASimError) {
  auto engine = make_engine("analytical", test::v3_8_like());
  auto p = test::make_program("crossed", {{0, 0}, {0, 1}});
  test::Stream a(p.cores[0]), b(p.cores[1]);
  a.barrier(2, {}, "a1");
  a.barrier(1, {0}, "a2");
  b.barrier(1, {}, "b1");
  b.barrier(2, {0}, "b2");
  try {
    engine->run(p, nullptr);
    FAIL() << "expected a deadlock";
  } catch (const SimError& e) {
    EXPECT_NE(std::string(e.what()).find("deadlocked"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tpusim
