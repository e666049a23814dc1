// block: DMA engines and the simple HBM (channels as bandwidth servers) through the SystemC engine.
//
// v3_8_like(): per_core ownership, so core c of a chip owns channels [16c, 16c+16), each serving
// 900e9 * 0.9 / 32 / 940e6 = 26.928 B/cycle (= 430.851 / 16). Requests are 32 KiB chunks sent
// round-robin over the core's channels; a request's data arrives 235 cycles after its service.
#include <gtest/gtest.h>

#include <algorithm>

#include "sim/engine/engine.h"
#include "tests/sim/exact_cycle_cases.h"
#include "tests/sim/test_hw.h"

namespace tpusim {
namespace {

// 1 MiB = 32 chunks: 2 per channel of core 0, each channel busy 65536 / 26.928 = 2433.73 cycles
// from 2064 (= 2000 launch + 64 setup): done ceil(2064 + 2433.73) + 235 = 4733.
TEST(DmaHbmBlock, OneMiBLoadSpreadsOverTheCoresChannels) {
  auto engine = make_engine("systemc", test::v3_8_like());
  auto p = test::make_program("dma");
  test::Stream(p.cores[0]).dma_load(test::kMiB, {}, "load_x");
  test::RecordingTrace trace;
  RunResult r = engine->run(p, &trace);
  ASSERT_EQ(r.device_cycles, 4733u);

  const std::string dma = "slice.chip0.core0.dma";
  EXPECT_EQ(test::stat(r, dma, "transfers"), 1);
  EXPECT_EQ(test::stat(r, dma, "loads"), 1);
  EXPECT_EQ(test::stat(r, dma, "bytes"), test::kMiB);
  EXPECT_EQ(test::stat(r, dma, "busy_cycles"), 2733);
  EXPECT_NEAR(test::stat(r, dma, "utilization"), 2733.0 / (4 * 4733), 1e-12);
  for (int ch = 0; ch < 16; ++ch) {
    const std::string c = "slice.chip0.hbm.ch" + std::to_string(ch);
    EXPECT_EQ(test::stat(r, c, "bytes"), 65536) << c;
    EXPECT_EQ(test::stat(r, c, "requests"), 2) << c;
    EXPECT_NEAR(test::stat(r, c, "busy_cycles"), 65536 / (900e9 * 0.9 / 32 / 940e6), 1e-6) << c;
  }
  EXPECT_EQ(test::stat(r, "slice.chip0.hbm.ch16", "bytes"), 0);  // core 1's channels
  EXPECT_EQ(test::stat(r, "slice.chip0.hbm", "bytes"), test::kMiB);
  EXPECT_EQ(test::stat(r, "slice.chip0.hbm", "requests"), 32);
  const double gbps = test::kMiB / (4733 / 940e6) / 1e9;
  EXPECT_NEAR(test::stat(r, "slice.chip0.hbm", "achieved_gbyte_per_s"), gbps, 1e-9);
  EXPECT_NEAR(test::stat(r, "slice.chip0.hbm", "utilization"), gbps / 900, 1e-12);

  auto engine_ev = trace.on("slice.chip0", "core0.dma0");
  ASSERT_EQ(engine_ev.size(), 1u);
  EXPECT_EQ(engine_ev[0].name, "load_x");
  EXPECT_EQ(engine_ev[0].start, 2000u);
  EXPECT_EQ(engine_ev[0].dur, 2733u);
  EXPECT_EQ(engine_ev[0].bytes, test::kMiB);
  // One event per channel for the transfer's two back-to-back requests: 2064..round(4497.73).
  auto ch3 = trace.on("slice.chip0", "hbm.ch3");
  ASSERT_EQ(ch3.size(), 1u);
  EXPECT_EQ(ch3[0].start, 2064u);
  EXPECT_EQ(ch3[0].dur, 4498u - 2064u);
  EXPECT_EQ(ch3[0].bytes, 65536u);
  EXPECT_TRUE(trace.on("slice.chip0", "hbm.ch16").empty());
}

// A transfer uses only the channels its requests land on: 32 KiB is one request on one channel
// at 1/16 of the core's bandwidth: 32768 / 26.928 = 1216.87 -> 2000 + 64 + 1217 + 235 = 3516
// (the analytical engine, with no channels, says 2376).
TEST(DmaHbmBlock, ASmallTransferSeesOneChannel) {
  auto engine = make_engine("systemc", test::v3_8_like());
  auto p = test::make_program("small");
  test::Stream(p.cores[0]).dma_load(32768);
  EXPECT_EQ(engine->run(p, nullptr).device_cycles, 3516u);
}

// Four concurrent 256 KiB loads (8 requests each) on four engines: the round-robin pointer
// carries over, so A takes channels 0-7, B 8-15, C 0-7 again, D 8-15 again. A and B: one
// request per channel, 2064 + 1216.87 -> 3281, + 235 = 3516; C and D queue behind them:
// 2064 + 2433.73 -> 4498, + 235 = 4733.
TEST(DmaHbmBlock, ConcurrentTransfersContendPerChannel) {
  auto engine = make_engine("systemc", test::v3_8_like());
  auto p = test::make_program("four");
  test::Stream s(p.cores[0]);
  for (int i = 0; i < 4; ++i) s.dma_load(256 * 1024, {}, "t" + std::to_string(i));
  test::RecordingTrace trace;
  RunResult r = engine->run(p, &trace);
  EXPECT_EQ(r.device_cycles, 4733u);
  std::vector<uint64_t> ends;
  for (int e = 0; e < 4; ++e) {
    auto ev = trace.on("slice.chip0", "core0.dma" + std::to_string(e));
    ASSERT_EQ(ev.size(), 1u);
    EXPECT_EQ(ev[0].start, 2000u);
    ends.push_back(ev[0].start + ev[0].dur);
  }
  EXPECT_EQ(ends, (std::vector<uint64_t>{3516, 3516, 4733, 4733}));
  EXPECT_EQ(test::stat(r, "slice.chip0.core0.dma", "busy_cycles"), 2 * 1516 + 2 * 2733);
}

// shared ownership (v4-like): each core sees all 32 channels and the whole chip bandwidth
// (861.70 B/cycle): a lone 1 MiB load = one request per channel, 32768 / 26.928 = 1216.87 ->
// 2000 + 299 + 1217 = 3516. Two cores loading at once queue on the same channels: the second
// one's requests wait for the first's: 2064 + 2433.73 -> 4498, + 235 = 4733. (The analytical
// engine gives each core its own server, so both would end at 3516 there.)
TEST(DmaHbmBlock, SharedOwnershipMakesCoresContend) {
  HwConfig hw = test::v3_8_like();
  hw.chip.hbm.ownership = HbmOwnership::kShared;
  auto engine = make_engine("systemc", hw);
  auto p = test::make_program("shared", {{1, 0}, {1, 1}});
  test::Stream(p.cores[0]).dma_load(test::kMiB);
  RunResult alone = engine->run(p, nullptr);
  EXPECT_EQ(alone.cores[1].end_cycle, 2000u);  // empty stream
  EXPECT_EQ(alone.cores[0].end_cycle, 3516u);
  test::Stream(p.cores[1]).dma_load(test::kMiB);
  RunResult both = engine->run(p, nullptr);
  std::vector<uint64_t> ends = {both.cores[0].end_cycle, both.cores[1].end_cycle};
  std::sort(ends.begin(), ends.end());
  EXPECT_EQ(ends, (std::vector<uint64_t>{3516, 4733}));
  EXPECT_EQ(test::stat(both, "slice.chip1.hbm.ch0", "requests"), 2);
}

TEST(DmaHbmBlock, StoresAreCountedSeparately) {
  auto engine = make_engine("systemc", test::v3_8_like());
  auto p = test::make_program("store");
  test::Stream s(p.cores[0]);
  s.dma_store(2 * test::kMiB);
  s.dma_load(0);
  RunResult r = engine->run(p, nullptr);
  // 2 MiB: 4 requests per channel, 2 * 2433.73 = 4867.46 -> 2000 + 299 + 4868 = 7167.
  EXPECT_EQ(r.device_cycles, 7167u);
  EXPECT_EQ(test::stat(r, "slice.chip0.core0.dma", "stores"), 1);
  EXPECT_EQ(test::stat(r, "slice.chip0.core0.dma", "store_bytes"), 2 * test::kMiB);
  EXPECT_EQ(test::stat(r, "slice.chip0.core0.dma", "loads"), 1);
  EXPECT_EQ(test::stat(r, "slice.chip0.core0.dma", "load_bytes"), 0);
}

}  // namespace
}  // namespace tpusim
