// fidelity: the SystemC model against the analytical engine.
//  * Contention-free programs (DMAs serialised by deps and sized to a whole number of chunk
//    rounds over the core's channels, MXU/VPU chains, several cores, barriers): exact agreement.
//    Both use the same formulas; SystemC's per-channel bandwidth then adds up to the core's.
//  * A double-buffered tiled matmul, where loads overlap compute and several DMAs are in flight:
//    within 3% (tolerance stated here). Differences come from channel-level queueing and from
//    rounding per transfer (analytical) vs per channel busy period (SystemC).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "sim/engine/engine.h"
#include "tests/sim/exact_cycle_cases.h"
#include "tests/sim/test_hw.h"
#include "tests/sim/tiled_matmul.h"

namespace tpusim {
namespace {

// 16 channels per core x 32 KiB chunks: transfers of a multiple of 512 KiB load every channel
// of the core equally.
constexpr uint64_t kChunkRound = 16 * 32768;

struct Engines {
  std::unique_ptr<Engine> sc = make_engine("systemc", test::v3_8_like());
  std::unique_ptr<Engine> an = make_engine("analytical", test::v3_8_like());
};

void expect_exact(Engines& e, const isa::Program& p) {
  RunResult a = e.an->run(p, nullptr);
  RunResult s = e.sc->run(p, nullptr);
  EXPECT_EQ(s.device_cycles, a.device_cycles) << p.name;
  ASSERT_EQ(s.cores.size(), a.cores.size());
  for (size_t i = 0; i < a.cores.size(); ++i) EXPECT_EQ(s.cores[i].end_cycle, a.cores[i].end_cycle) << p.name;
  // Per-block stats agree too (HBM per-channel groups exist only in SystemC).
  for (auto& [key, group] : a.stats.items()) {
    ASSERT_TRUE(s.stats.contains(key)) << key;
    for (auto& [stat, value] : group.items()) {
      EXPECT_NEAR(s.stats[key][stat]["value"].get<double>(), value["value"].get<double>(),
                  1e-9 * std::max(1.0, std::abs(value["value"].get<double>())))
          << p.name << " " << key << "." << stat;
    }
  }
}

TEST(Fidelity, ExactCycleCasesAgree) {
  Engines e;
  for (const auto& c : test::exact_cycle_cases()) expect_exact(e, c.program);
}

// Both engines emit the same events on the unit tracks (HBM tracks differ by design: channels
// "hbm.chN" in SystemC, one server "hbm.coreN" in the analytical engine).
TEST(Fidelity, TraceEventsOfUnitsAgree) {
  Engines e;
  auto key = [](const test::RecordedEvent& ev) {
    return ev.process + "/" + ev.track + "/" + ev.name + "/" + std::to_string(ev.start) + "/" +
           std::to_string(ev.dur) + "/" + std::to_string(ev.bytes);
  };
  for (const auto& c : test::exact_cycle_cases()) {
    test::RecordingTrace ta, ts;
    e.an->run(c.program, &ta);
    e.sc->run(c.program, &ts);
    std::vector<std::string> a, s;
    for (const auto& ev : ta.events)
      if (!ev.track.starts_with("hbm.")) a.push_back(key(ev));
    for (const auto& ev : ts.events)
      if (!ev.track.starts_with("hbm.")) s.push_back(key(ev));
    std::sort(a.begin(), a.end());
    std::sort(s.begin(), s.end());
    EXPECT_EQ(s, a) << c.name;
  }
}

// Random contention-free programs: per core, a serial DMA chain interleaved with MXU and VPU work
// that depends on random earlier results. Seeded, so reproducible.
TEST(Fidelity, RandomContentionFreeProgramsAgreeExactly) {
  Engines e;
  std::mt19937 rng(1234);
  auto pick = [&](uint32_t n) { return std::uniform_int_distribution<uint32_t>(0, n - 1)(rng); };
  for (int round = 0; round < 20; ++round) {
    auto p = test::make_program("random" + std::to_string(round), {{0, 0}, {0, 1}, {3, 0}});
    for (auto& core : p.cores) {
      test::Stream s(core);
      int64_t last_dma = -1;
      std::vector<int64_t> last_weights(2, -1), matmuls_since(2, 0);
      std::vector<std::vector<uint32_t>> tile_users(2);
      for (int i = 0; i < 60; ++i) {
        const uint32_t n = s.size();
        const uint32_t dep = n ? pick(n) : 0;
        switch (pick(4)) {
          case 0: {  // DMA: serialised behind the previous DMA, so no bandwidth contention
            uint64_t bytes = kChunkRound * (1 + pick(3));
            uint32_t idx = pick(2) ? s.dma_load(bytes) : s.dma_store(bytes);
            if (last_dma >= 0) s.add_dep(idx, uint32_t(last_dma));
            if (n) s.add_dep(idx, dep);
            last_dma = idx;
            break;
          }
          case 1: {  // weights, depending on all users of the tile it replaces (2 buffers)
            uint32_t m = pick(2);
            uint32_t idx = s.weights(m, 8 * (1 + pick(16)), 128);
            for (uint32_t u : tile_users[m]) s.add_dep(idx, u);
            tile_users[m].clear();
            last_weights[m] = idx;
            break;
          }
          case 2: {
            uint32_t m = pick(2);
            if (last_weights[m] < 0) break;
            uint32_t idx = s.matmul(m, 1 + pick(512), 128, 128, {uint32_t(last_weights[m])}, pick(2) ? 1 : 3);
            if (n) s.add_dep(idx, dep);
            tile_users[m].push_back(idx);
            break;
          }
          default: {
            uint32_t idx = s.vpu({.alu_vregs = pick(2000), .eup_vregs = pick(300), .xlu_vregs = pick(100),
                                  .vld_vregs = pick(500), .vst_vregs = pick(500)});
            if (n) s.add_dep(idx, dep);
          }
        }
      }
    }
    expect_exact(e, p);
  }
}

double relative_gap(Engines& e, const isa::Program& p, RunResult* sc_out = nullptr) {
  RunResult a = e.an->run(p, nullptr);
  RunResult s = e.sc->run(p, nullptr);
  if (sc_out) *sc_out = s;
  ::testing::Test::RecordProperty(p.name + "_systemc_cycles", std::to_string(s.device_cycles));
  ::testing::Test::RecordProperty(p.name + "_analytical_cycles", std::to_string(a.device_cycles));
  return std::abs(double(s.device_cycles) - double(a.device_cycles)) / double(a.device_cycles);
}

isa::Program one_core(const std::string& name, test::TiledMatmul t) {
  isa::Program p;
  p.name = name;
  p.cores.push_back(test::tiled_matmul_stream(t));
  return p;
}

// Short M (128 rows per stream) makes DMA and compute comparable, and the C panels are 32 KiB
// stores; all 8 cores of the slice run.
isa::Program bandwidth_heavy_slice() {
  isa::Program p;
  p.name = "matmul_m128_slice";
  for (uint32_t chip = 0; chip < 4; ++chip)
    for (uint32_t core = 0; core < 2; ++core)
      p.cores.push_back(test::tiled_matmul_stream({.m = 128, .k = 2048, .n = 1024}, chip, core));
  return p;
}

// With the test config's 32 KiB requests (dma.chunk_bytes), a 256 KiB load covers only 8 of the
// core's 16 channels, so SystemC finishes concurrent transfers together (per-channel FCFS) where
// the analytical server finishes them one after the other; with in-order DMA issue and 4
// engines this shifts later issues. Tolerance: 3%. (Measured: 1.7% and 2.8%.)
TEST(Fidelity, DoubleBufferedTiledMatmulWithin3Percent) {
  Engines e;
  EXPECT_LT(relative_gap(e, one_core("matmul_1024", {.m = 1024, .k = 1024, .n = 1024})), 0.03);
  EXPECT_LT(relative_gap(e, one_core("matmul_512x2048x2048", {.m = 512, .k = 2048, .n = 2048})), 0.03);
}

// With requests of the HBM interleave granularity (2 KiB), every transfer of >= 32 KiB covers all
// of the core's channels and the two engines agree closely even when DMA-bound, small stores
// included. Tolerance: 0.5%. (Measured: <= 0.02%.) At 32 KiB the bandwidth-heavy program is ~29%
// slower in SystemC, because each 32 KiB store occupies one channel at 1/16 of the bandwidth:
// dma.chunk_bytes must be the real interleave granularity (the SystemC cost does not depend on
// it: one b_transport per transfer).
TEST(Fidelity, TiledMatmulsAtTheInterleaveGranularityWithinHalfAPercent) {
  HwConfig hw = test::v3_8_like();
  hw.chip.core.dma.chunk_bytes = 2048;
  Engines e{make_engine("systemc", hw), make_engine("analytical", hw)};
  EXPECT_LT(relative_gap(e, one_core("matmul_1024", {.m = 1024, .k = 1024, .n = 1024})), 0.005);
  EXPECT_LT(relative_gap(e, one_core("matmul_512x2048x2048", {.m = 512, .k = 2048, .n = 2048})), 0.005);
  RunResult s;
  EXPECT_LT(relative_gap(e, bandwidth_heavy_slice(), &s), 0.005);
  EXPECT_GT(test::stat(s, "slice.chip3.hbm", "utilization"), 0.5);  // really bandwidth-heavy
}

}  // namespace
}  // namespace tpusim
