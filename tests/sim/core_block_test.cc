// block: what makes a program fail on the TensorCore (VMEM plan, weight buffers, deadlock), and
// that the elaborated model stays usable afterwards.
#include <gtest/gtest.h>

#include "sim/base/sim_error.h"
#include "sim/engine/engine.h"
#include "tests/sim/exact_cycle_cases.h"
#include "tests/sim/test_hw.h"

namespace tpusim {
namespace {

std::string run_error(Engine& engine, const isa::Program& p) {
  try {
    engine.run(p, nullptr);
  } catch (const SimError& e) {
    return e.what();
  }
  return "";
}

isa::Program good_program() {
  auto p = test::make_program("good");
  test::Stream(p.cores[0]).dma_load(test::kMiB);
  return p;
}

TEST(CoreBlock, VmemOverflowIsASimErrorWithLabelSizeAndFreeBytes) {
  auto engine = make_engine("systemc", test::v3_8_like());
  auto p = test::make_program("too-big", {{0, 0}, {1, 1}});
  test::Stream(p.cores[0]).vpu({.alu_vregs = 2});
  test::Stream s(p.cores[1]);
  s.vpu({.alu_vregs = 2});
  s.alloc(0, 10 * test::kMiB, 0, 0, "weights");
  s.alloc(10 * test::kMiB, 8 * test::kMiB, 0, 0, "activations");
  std::string e = run_error(*engine, p);
  EXPECT_NE(e.find("out of VMEM on slice.chip1.core1.vmem"), std::string::npos) << e;
  EXPECT_NE(e.find("'activations' (8388608 bytes"), std::string::npos) << e;
  EXPECT_NE(e.find("6291456 bytes free"), std::string::npos) << e;  // 16 MiB - 10 MiB
  // Nothing was armed: the next program runs normally.
  EXPECT_EQ(engine->run(good_program(), nullptr).device_cycles, 4733u);
}

TEST(CoreBlock, OverlappingLiveVmemBuffersAreASimError) {
  auto engine = make_engine("systemc", test::v3_8_like());
  auto p = test::make_program("overlap");
  test::Stream s(p.cores[0]);
  s.vpu({});
  s.vpu({});
  s.alloc(0, test::kMiB, 0, 1, "q");
  s.alloc(test::kMiB - 1, 16, 1, 1, "k");
  std::string e = run_error(*engine, p);
  EXPECT_NE(e.find("VMEM buffers overlap on slice.chip0.core0.vmem: 'q'"), std::string::npos) << e;
  EXPECT_NE(e.find("'k' (16 bytes at offset 1048575"), std::string::npos) << e;
}

TEST(CoreBlock, WeightBufferOverflowIsASimError) {
  auto engine = make_engine("systemc", test::v3_8_like());
  auto p = test::make_program("three-tiles");
  test::Stream s(p.cores[0]);
  uint32_t w0 = s.weights(0, 128, 128);
  s.weights(0, 128, 128);
  s.matmul(0, 8, 128, 128, {w0});
  s.weights(0, 128, 128);
  EXPECT_NE(run_error(*engine, p).find("MXU weight buffers exceeded"), std::string::npos);
}

// Crossed barriers: core 0 waits in barrier 2 then 1, core 1 in 1 then 2.
TEST(CoreBlock, BarrierDeadlockIsReportedAndTheModelRecovers) {
  auto engine = make_engine("systemc", test::v3_8_like());
  auto p = test::make_program("crossed", {{0, 0}, {0, 1}});
  test::Stream a(p.cores[0]), b(p.cores[1]);
  a.barrier(2, {}, "a_first");
  a.barrier(1, {0}, "a_second");
  b.barrier(1, {}, "b_first");
  b.barrier(2, {0}, "b_second");
  std::string e = run_error(*engine, p);
  EXPECT_NE(e.find("program 'crossed' deadlocked: slice.chip0.core0 instruction #0 'a_first' never completed"),
            std::string::npos)
      << e;
  EXPECT_EQ(engine->run(good_program(), nullptr).device_cycles, 4733u);
}

// The barrier of exact case "barrier": chip3.core1 reaches it at 2132 (after a 100-cycle VPU
// block and its 32-cycle latency) and waits until chip0.core0 reaches it at 4733.
TEST(CoreBlock, BarrierWaitsAreTraced) {
  auto engine = make_engine("systemc", test::v3_8_like());
  for (const auto& c : test::exact_cycle_cases()) {
    if (c.name != "barrier") continue;
    test::RecordingTrace trace;
    engine->run(c.program, &trace);
    auto waiting = trace.on("slice.chip3", "core1.sync");
    ASSERT_EQ(waiting.size(), 1u);
    EXPECT_EQ(waiting[0].start, 2132u);
    EXPECT_EQ(waiting[0].dur, 4733u - 2132u);
    auto last = trace.on("slice.chip0", "core0.sync");
    ASSERT_EQ(last.size(), 1u);
    EXPECT_EQ(last[0].start, 4733u);
    EXPECT_EQ(last[0].dur, 0u);
  }
}

}  // namespace
}  // namespace tpusim
