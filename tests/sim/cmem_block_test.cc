// block + fidelity: the chip's CMEM (sim/cmem/) serving DMAs that name it, on both engines.
//
// test_hw_cmem(): v3_8_like() (test_hw.h) plus a CMEM of 128 MiB, 2400 GB/s, 100 ns (the shipped
// v4 values; the structure is v3_8_like()'s, so it shares the elaborated SystemC slice).
// At 940 MHz: CMEM rate 2400e9 / 940e6 = 2553.19 B/cycle, latency ceil(100 * 0.94) = 94 cycles.
// 1 MiB: ceil(1048576 / 2553.19) = ceil(410.69) = 411 cycles (HBM: 2434, exact_cycle_cases.h).
#include <gtest/gtest.h>

#include <string>

#include "sim/base/sim_error.h"
#include "sim/cmem/cmem_timing.h"
#include "sim/engine/engine.h"
#include "sim/hbm/hbm_timing.h"
#include "sim/hw/resolved_hw.h"
#include "tests/sim/exact_cycle_cases.h"
#include "tests/sim/test_hw.h"

namespace tpusim {
namespace {

HwConfig test_hw_cmem() {
  HwConfig hw = test::v3_8_like();
  hw.chip.cmem = CmemParams{.size_mib = 128, .bandwidth_gbyte_per_s = 2400, .latency_ns = 100};
  return hw;
}

isa::Program one_dma(isa::MemSpace mem, isa::Op op = isa::Op::kDmaLoad, uint64_t bytes = test::kMiB) {
  auto p = test::make_program("one_dma");
  isa::Instr i;
  i.op = op;
  i.mem = mem;
  i.bytes = bytes;
  i.label = "x";
  p.cores[0].instrs.push_back(i);
  return p;
}

const char* const kEngines[] = {"systemc", "analytical"};

TEST(CmemTiming, FormulaValues) {
  const ChipParams chip = test_hw_cmem().chip;
  const ResolvedHw r = resolve_hw(test_hw_cmem());
  EXPECT_NEAR(r.cmem_bytes_per_cycle, 2400e3 / 940, 1e-9);
  EXPECT_EQ(cmem_transfer_cycles(r, test::kMiB), 411u);
  EXPECT_EQ(r.cmem_latency_cycles, 94u);
  EXPECT_EQ(r.cmem_dma_fixed_cycles, 64u + 94u);
  EXPECT_EQ(cmem_transfer_cycles(r, 0), 0u);
  EXPECT_FALSE(has_cmem(test::v3_8_like().chip));
  ChipParams off = chip;
  off.cmem->size_mib = 0;
  EXPECT_FALSE(has_cmem(off));
}

// 1 MiB from CMEM: 2000 + 64 + 411 + 94 = 2569 cycles; from HBM 4733 (2000 + 64 + 2434 + 235).
// Beyond the fixed parts, the ratio is the formulas' one: 2434 / 411.
TEST(CmemBlock, ALoadFromCmemIsFasterThanFromHbmByTheFormulasRatio) {
  const HwConfig hw = test_hw_cmem();
  for (const char* name : kEngines) {
    auto engine = make_engine(name, hw);
    const uint64_t from_cmem = engine->run(one_dma(isa::MemSpace::kCmem), nullptr).device_cycles;
    const uint64_t from_hbm = engine->run(one_dma(isa::MemSpace::kHbm), nullptr).device_cycles;
    EXPECT_EQ(from_cmem, 2569u) << name;
    EXPECT_EQ(from_hbm, 4733u) << name;
    const uint64_t launch = hw.chip.core.sequencer.launch_cycles;
    const ResolvedHw r = resolve_hw(hw);
    EXPECT_EQ(from_cmem - launch - r.cmem_dma_fixed_cycles, cmem_transfer_cycles(r, test::kMiB)) << name;
    EXPECT_EQ(from_hbm - launch - r.dma_fixed_cycles, hbm_transfer_cycles(r.hbm_core_bytes_per_cycle, test::kMiB)) << name;
  }
}

// Stats: the CMEM serves the bytes (slice.chip0.cmem), the HBM none; a store goes the same way.
TEST(CmemBlock, StatsAndTraceOfACmemStore) {
  for (const char* name : kEngines) {
    auto engine = make_engine(name, test_hw_cmem());
    test::RecordingTrace trace;
    RunResult r = engine->run(one_dma(isa::MemSpace::kCmem, isa::Op::kDmaStore), &trace);
    EXPECT_EQ(r.device_cycles, 2569u) << name;
    EXPECT_EQ(test::stat(r, "slice.chip0.cmem", "bytes"), test::kMiB) << name;
    EXPECT_EQ(test::stat(r, "slice.chip0.cmem", "transfers"), 1) << name;
    EXPECT_EQ(test::stat(r, "slice.chip0.cmem", "busy_cycles"), 411) << name;
    EXPECT_EQ(test::stat(r, "slice.chip0.hbm", "bytes"), 0) << name;
    EXPECT_EQ(test::stat(r, "slice.chip0.core0.dma", "stores"), 1) << name;
    EXPECT_EQ(test::stat(r, "slice.chip0.core0.dma", "busy_cycles"), 64 + 411 + 94) << name;
  }
}

// Back to back on the one server: two 1 MiB CMEM loads on two engines both start at 2064; the
// second waits for the first: 2064 + 2 * 411 + 94 = 2980. A concurrent HBM load (4733) is served
// by the HBM, unaffected. Both engines model this the same way (one core: no cross-core sharing).
TEST(CmemBlock, EnginesAgreeExactlyOnAMixedProgram) {
  auto p = test::make_program("mixed");
  test::Stream s(p.cores[0]);
  const uint32_t a = s.dma_load(test::kMiB, {}, "a");
  const uint32_t b = s.dma_load(test::kMiB, {}, "b");
  s.dma_load(test::kMiB, {}, "h");
  p.cores[0].instrs[a].mem = p.cores[0].instrs[b].mem = isa::MemSpace::kCmem;
  const uint32_t w = s.weights(0, 128, 128, {a, b});
  const uint32_t m = s.matmul(0, 256, 128, 128, {w});
  const uint32_t st = s.dma_store(512 * 1024, {m}, "out");
  p.cores[0].instrs[st].mem = isa::MemSpace::kCmem;
  // a, b: 2980 (above); weights 2980..2996, matmul streams 2996..3252, done 3508; store: 3508 +
  // 64 + ceil(524288 / 2553.19 = 205.3) = 206 + 94 = 3872; the HBM load ends at 4733.
  RunResult sc = make_engine("systemc", test_hw_cmem())->run(p, nullptr);
  RunResult an = make_engine("analytical", test_hw_cmem())->run(p, nullptr);
  EXPECT_EQ(sc.device_cycles, 4733u);
  EXPECT_EQ(an.device_cycles, sc.device_cycles);
  for (const char* key : {"bytes", "transfers", "busy_cycles"})
    EXPECT_EQ(test::stat(sc, "slice.chip0.cmem", key), test::stat(an, "slice.chip0.cmem", key)) << key;
  EXPECT_EQ(test::stat(sc, "slice.chip0.cmem", "busy_cycles"), 411 + 411 + 206);
  EXPECT_EQ(test::stat(sc, "slice.chip0.core0.dma", "busy_cycles"), test::stat(an, "slice.chip0.core0.dma", "busy_cycles"));

  // Without the HBM load the CMEM store ends the program: 3872 on both.
  p.cores[0].instrs[2].bytes = 0;
  p.cores[0].instrs[2].mem = isa::MemSpace::kCmem;  // zero bytes: fixed part only, 2000 + 158
  EXPECT_EQ(make_engine("systemc", test_hw_cmem())->run(p, nullptr).device_cycles, 3872u);
  EXPECT_EQ(make_engine("analytical", test_hw_cmem())->run(p, nullptr).device_cycles, 3872u);
}

// The two cores of a chip share its CMEM in the SystemC model: the same 1 MiB load on both
// queues the second behind the first (2064 + 822 + 94 = 2980); the analytical engine, which
// models no contention between cores, gives each 2569.
TEST(CmemBlock, CoresOfAChipShareItsCmemInSystemc) {
  auto p = test::make_program("two_cores", {{0, 0}, {0, 1}});
  for (auto& c : p.cores) {
    isa::Instr i;
    i.op = isa::Op::kDmaLoad;
    i.mem = isa::MemSpace::kCmem;
    i.bytes = test::kMiB;
    c.instrs.push_back(i);
  }
  EXPECT_EQ(make_engine("systemc", test_hw_cmem())->run(p, nullptr).device_cycles, 2980u);
  EXPECT_EQ(make_engine("analytical", test_hw_cmem())->run(p, nullptr).device_cycles, 2569u);
}

TEST(CmemBlock, ACmemDmaOnAChipWithoutCmemIsRejected) {
  HwConfig off = test_hw_cmem();
  off.chip.cmem->size_mib = 0;
  for (const HwConfig& hw : {test::v3_8_like(), off}) {
    for (const char* name : kEngines) {
      auto engine = make_engine(name, hw);
      try {
        engine->run(one_dma(isa::MemSpace::kCmem), nullptr);
        FAIL() << name << ": expected a SimError";
      } catch (const SimError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("CMEM DMA"), std::string::npos) << what;
        EXPECT_NE(what.find("no CMEM"), std::string::npos) << what;
      }
    }
  }
}

}  // namespace
}  // namespace tpusim
