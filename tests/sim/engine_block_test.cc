// block: the SystemC engine end to end — the exact-cycle cases, reuse of the one elaborated
// slice across runs and engines, and reconfiguration of numeric parameters.
#include <gtest/gtest.h>

#include "base/config_error.h"
#include "sim/engine/engine.h"
#include "tests/sim/exact_cycle_cases.h"
#include "tests/sim/test_hw.h"

namespace tpusim {
namespace {

TEST(SystemcEngine, ExactCycleCases) {
  auto engine = make_engine("systemc", test::v3_8_like());
  EXPECT_EQ(engine->name(), "systemc");
  for (const auto& c : test::exact_cycle_cases()) {
    RunResult r = engine->run(c.program, nullptr);
    EXPECT_EQ(r.device_cycles, c.device_cycles) << c.name;
    for (size_t i = 0; i < c.core_cycles.size(); ++i) EXPECT_EQ(r.cores.at(i).end_cycle, c.core_cycles[i]) << c.name;
  }
}

// The training driver runs thousands of programs on one engine: every run starts at its own
// cycle 0 with fresh stats, so repeating a sequence of programs repeats the results exactly.
TEST(SystemcEngine, ProgramsRunBackToBackGiveIdenticalResults) {
  auto engine = make_engine("systemc", test::v3_8_like());
  auto cases = test::exact_cycle_cases();
  std::vector<RunResult> first;
  for (const auto& c : cases) first.push_back(engine->run(c.program, nullptr));
  for (size_t i = 0; i < cases.size(); ++i) {
    RunResult again = engine->run(cases[i].program, nullptr);
    EXPECT_EQ(again.device_cycles, first[i].device_cycles) << cases[i].name;
    EXPECT_EQ(again.stats, first[i].stats) << cases[i].name;
  }
}

// make_engine may be called repeatedly in one process: engines with the same structure share
// the elaborated slice; numeric parameters are re-applied whenever another engine runs.
TEST(SystemcEngine, EnginesShareTheSliceAndReapplyTheirParameters) {
  HwConfig fast = test::v3_8_like();
  fast.chip.hbm.bandwidth_gbyte_per_s = 1800;
  auto slow_engine = make_engine("systemc", test::v3_8_like());
  auto fast_engine = make_engine("systemc", fast);
  auto p = test::make_program("dma");
  test::Stream(p.cores[0]).dma_load(test::kMiB);
  // 1800e9 * 0.9 / 2 / 940e6 = 861.70 B/cycle: ceil(1048576 / 861.70) = 1217; 2000 + 299 + 1217.
  EXPECT_EQ(fast_engine->run(p, nullptr).device_cycles, 3516u);
  EXPECT_EQ(slow_engine->run(p, nullptr).device_cycles, 4733u);
  EXPECT_EQ(fast_engine->run(p, nullptr).device_cycles, 3516u);
}

TEST(SystemcEngine, ADifferentStructureInTheSameProcessIsAClearError) {
  auto engine = make_engine("systemc", test::v3_8_like());
  HwConfig other = test::v3_8_like();
  other.name = "one-mxu";
  other.chip.core.mxu.count = 1;
  try {
    make_engine("systemc", other);
    FAIL();
  } catch (const ConfigError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("elaborated once per process"), std::string::npos) << m;
    EXPECT_NE(m.find("'one-mxu' (4 chips x 2 cores x 1 MXUs"), std::string::npos) << m;
  }
}

TEST(SystemcEngine, StatsTreeIsKeyedByHierarchicalName) {
  auto engine = make_engine("systemc", test::v3_8_like());
  auto p = test::make_program("one", {{2, 1}});
  test::Stream s(p.cores[0]);
  uint32_t w = s.weights(1, 128, 128);
  s.matmul(1, 256, 128, 128, {w});
  RunResult r = engine->run(p, nullptr);
  for (const char* key : {"slice", "slice.chip2.core1.sequencer", "slice.chip2.core1.mxu0", "slice.chip2.core1.mxu1",
                          "slice.chip2.core1.vpu", "slice.chip2.core1.vmem", "slice.chip2.core1.dma",
                          "slice.chip2.hbm", "slice.chip2.hbm.ch31"}) {
    EXPECT_TRUE(r.stats.contains(key)) << key;
  }
  EXPECT_FALSE(r.stats.contains("slice.chip0.hbm"));  // idle chip
  EXPECT_FALSE(r.stats.contains("slice.chip2.core0.sequencer"));  // idle core
  EXPECT_EQ(r.stats["slice.chip2.core1.mxu1"]["busy_cycles"]["unit"], "cycles");
  EXPECT_EQ(r.cores.at(0).chip, 2u);
  EXPECT_EQ(r.cores.at(0).core, 1u);
}

}  // namespace
}  // namespace tpusim
