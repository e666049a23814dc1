// The op profile (sim/analysis/op_profile.h): the attribution rule with hand-worked values, the kernel
// table's checks and JSON, and a profile from the analytical engine with exact cycles.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "sim/analysis/op_profile.h"
#include "sim/analysis/program_plan.h"
#include "sim/base/sim_error.h"
#include "sim/engine/engine.h"
#include "test_hw.h"
#include "test_program.h"

namespace tpusim {
namespace {

// A kernel-table entry (name, instruction range, flops, HBM bytes; no VPU work).
isa::KernelRange kr(const char* name, uint32_t first, uint32_t last, uint64_t flops = 0, uint64_t hbm_bytes = 0) {
  isa::KernelRange k;
  k.name = isa::Label(name);
  k.first_instr = first;
  k.last_instr = last;
  k.flops = flops;
  k.hbm_bytes = hbm_bytes;
  return k;
}


using test::Stream;

SegmentTiming fg(uint64_t ready, uint64_t end) { return {ready, end, false, true}; }
SegmentTiming bg(uint64_t ready, uint64_t end) { return {ready, end, true, true}; }

TEST(OpProfile, AttributionRuleByHand) {
  // Launch at 100. K0, K2, K3 run one after another; C1 is a background collective from 300 to
  // 900; K4 (the optimizer) waits for it; I5, background, ends last (an infeed).
  const std::vector<SegmentTiming> s = {
      fg(100, 300),  // K0: 300 - 100
      bg(300, 900),  // C1: the wait of K4 (900 - 700), nothing of its own otherwise
      fg(300, 500),  // K2: 500 - 300
      fg(500, 700),  // K3: 700 - 500
      fg(900, 950),  // K4: ready 900 > frontier 700: the gap goes to C1 (ended at 900); then 950 - 900
      bg(100, 1000), // I5: the tail after the last foreground end, 1000 - 950
  };
  EXPECT_EQ(attribute_cycles(s, 100), (std::vector<uint64_t>{200, 200, 200, 200, 50, 50}));
}

TEST(OpProfile, AWaitWithoutABackgroundSegmentEndingInItStaysWithTheKernel) {
  // K1 is ready only at 400 (say a barrier inside it): no background segment ended in (200, 400]
  // (C2 ends at 600, after K1 started), so K1 keeps its wait. C2 then adds its tail beyond K1's
  // end (600 - 500); a segment never recorded gets nothing.
  const std::vector<SegmentTiming> s = {fg(0, 200), fg(400, 500), bg(150, 600), {0, 0, false, false}};
  EXPECT_EQ(attribute_cycles(s, 0), (std::vector<uint64_t>{200, 300, 100, 0}));
}

TEST(OpProfile, OverlappingForegroundKernelsAreNotCountedTwice) {
  // K1 ends before K0 does (it ran beside it): it gets 0; K2 gets its end past K0's.
  const std::vector<SegmentTiming> s = {fg(10, 100), fg(10, 80), fg(100, 130)};
  EXPECT_EQ(attribute_cycles(s, 10), (std::vector<uint64_t>{90, 0, 30}));
}

TEST(OpProfile, RecorderCutsTheStreamIntoKernelsAndNamedRunsOutsideThem) {
  isa::Program p = test::make_program("p");
  Stream s(p.cores[0]);
  s.host_load(64, {}, "infeed:next batch");  // 0: outside, "infeed"
  s.vpu({}, {}, "a:x");                      // 1..2: kernel a
  s.vpu({}, {1}, "a:y");
  s.vpu({.alu_vregs = 8}, {2}, "glue");     // 3: outside, "glue"
  s.vpu({}, {3}, "b:x");                     // 4: kernel b
  p.cores[0].kernels = {kr("a", 1, 2, 10, 20), kr("b", 4, 4, 0, 0)};
  const HwConfig hw = test::v3_8_like();
  ProgramPlan plan;
  plan.build(p, hw);
  OpProfileRecorder rec;
  rec.reset(plan.cores()[0]);
  ASSERT_TRUE(rec.active());
  // Times in ps from an origin of 1000 ps, 1000 ps per cycle: instruction i is ready at cycle
  // 2 + 2i and completes at cycle 3 + 2i (launch: 2 cycles).
  for (uint32_t i = 0; i < 5; ++i) rec.record(i, 1000 + 1000 * (2 + 2 * i), 1000 + 1000 * (3 + 2 * i));
  const OpProfile prof = rec.profile(plan.cores()[0], hw, resolve_hw(hw), 2, 11, 1000, 1000);
  std::map<std::string, OpProfileEntry> by;
  uint64_t sum = 0;
  for (const OpProfileEntry& e : prof.entries) {
    by[e.name] = e;
    sum += e.cycles;
  }
  ASSERT_EQ(by.size(), 5u);
  EXPECT_EQ(sum, 11u);
  EXPECT_EQ(by["(launch)"].cycles, 2u);
  // The infeed (background: a host transfer) ends at 3. Kernel a is ready at 4, after the
  // frontier (the launch, 2): the infeed ended in (2, 4], so it gets that wait, 4 - 2, and a gets
  // 7 - 4; glue is ready at 8, after a's end, but nothing background ended in (7, 8]: it keeps
  // its wait, 9 - 7; b likewise 11 - 9.
  EXPECT_EQ(by["infeed"].cycles, 2u);
  EXPECT_EQ(by["infeed"].bound, OpBound::kIci);
  EXPECT_EQ(by["a"].cycles, 3u);
  EXPECT_EQ(by["a"].flops, 10u);
  EXPECT_EQ(by["a"].hbm_bytes, 20u);
  EXPECT_EQ(by["a"].count, 1u);
  EXPECT_EQ(by["glue"].cycles, 2u);
  EXPECT_DOUBLE_EQ(by["glue"].vpu_bound_s, 4 / 940e6);  // outside the kernels: read from the instruction
  EXPECT_EQ(by["b"].cycles, 2u);
  EXPECT_EQ(by["b"].bound, OpBound::kFixed);  // no work at all
}

TEST(OpProfile, KernelTableMustBeOrderedAndInsideTheStream) {
  const HwConfig hw = test::v3_8_like();
  auto program = [](std::vector<isa::KernelRange> kernels) {
    isa::Program p = test::make_program("p");
    Stream s(p.cores[0]);
    for (int i = 0; i < 4; ++i) s.vpu({}, {}, "v");
    p.cores[0].kernels = std::move(kernels);
    return p;
  };
  ProgramPlan plan;
  EXPECT_NO_THROW(plan.build(program({kr("a", 0, 1), kr("b", 3, 3)}), hw));
  EXPECT_THROW(plan.build(program({kr("a", 0, 2), kr("b", 2, 3)}), hw), SimError);  // overlap
  EXPECT_THROW(plan.build(program({kr("a", 2, 3), kr("b", 0, 1)}), hw), SimError);  // order
  EXPECT_THROW(plan.build(program({kr("a", 0, 4)}), hw), SimError);                           // past the end
}

TEST(OpProfile, KernelTableJsonIsOmittedWhenEmpty) {
  isa::Program p = test::make_program("p");
  Stream s(p.cores[0]);
  s.vpu({}, {}, "a:v");
  nlohmann::json j = p;
  EXPECT_FALSE(j["cores"][0].contains("kernels"));  // serialized as before the table existed
  p.cores[0].kernels = {kr("a", 0, 0, 7, 9)};
  j = p;
  ASSERT_TRUE(j["cores"][0].contains("kernels"));
  const isa::Program back = j.get<isa::Program>();
  ASSERT_EQ(back.cores[0].kernels.size(), 1u);
  EXPECT_EQ(back.cores[0].kernels[0].name, "a");
  EXPECT_EQ(back.cores[0].kernels[0].flops, 7u);
  EXPECT_EQ(back.cores[0].kernels[0].hbm_bytes, 9u);
}

// Chained VPU kernels on the analytical engine (launch 2000 cycles; a VPU block completes
// issue + 32 cycles after it starts; 2 ALU slots). Peak rates: 2 x 128 x 128 x 2 = 65536 flop per
// cycle; HBM 900e9 / 2 cores / 940e6 = 478.72 bytes per cycle (efficiency 1).
TEST(OpProfile, AnalyticalEngineExactCyclesAndBounds) {
  isa::Program p = test::make_program("p");
  Stream s(p.cores[0]);
  s.vpu({.alu_vregs = 200}, {}, "a:v");    // 0: 2000 .. 2000 + 100 + 32 = 2132
  s.vpu({.alu_vregs = 400}, {0}, "b:v");   // 1: 2132 .. 2364
  s.vpu({.alu_vregs = 100}, {1}, "a2:v");  // 2: 2364 .. 2446 (kernel named "a" again)
  s.vpu({}, {2}, "d:v");                   // 3: 2446 .. 2478
  s.vpu({.alu_vregs = 20}, {3}, "e:v");    // 4: 2478 .. 2520
  // The table's VPU work is the instructions' (what the compiler's ProgramBuilder records).
  p.cores[0].kernels = {{isa::Label("a"), 0, 0, 0, 0, {.alu_vregs = 200}},
                        {isa::Label("b"), 1, 1, 220 * 65536, 0, {.alu_vregs = 400}},  // compute bound 220 cycles
                        {isa::Label("a"), 2, 2, 0, 0, {.alu_vregs = 100}},
                        kr("d", 3, 3),
                        {isa::Label("e"), 4, 4, 0, 14362, {.alu_vregs = 20}}};  // memory bound 30.0 cycles
  const HwConfig hw = test::v3_8_like();
  const RunResult r = make_engine("analytical", hw)->run(p, nullptr);
  ASSERT_EQ(r.device_cycles, 2520u);
  const OpProfile& prof = r.op_profile;
  EXPECT_EQ(prof.cycles, 2520u);
  std::map<std::string, OpProfileEntry> by;
  for (const OpProfileEntry& e : prof.entries) by[e.name] = e;
  ASSERT_EQ(by.size(), 5u);
  EXPECT_EQ(prof.entries.front().name, "(launch)");  // decreasing time
  EXPECT_EQ(by["(launch)"].cycles, 2000u);
  EXPECT_EQ(by["a"].cycles, 132u + 82u);
  EXPECT_EQ(by["a"].count, 2u);
  EXPECT_EQ(by["a"].bound, OpBound::kVpu);  // vpu 100 + 50 cycles, time 214 <= 2 x 150
  EXPECT_DOUBLE_EQ(by["a"].vpu_bound_s, 150 / 940e6);
  EXPECT_EQ(by["b"].cycles, 232u);
  EXPECT_EQ(by["b"].bound, OpBound::kMxu);  // compute 220 > vpu 200
  EXPECT_NEAR(by["b"].compute_bound_s, 220 / 940e6, 1e-15);
  EXPECT_EQ(by["d"].cycles, 32u);
  EXPECT_EQ(by["d"].bound, OpBound::kFixed);  // no bound at all: the VPU's latency
  EXPECT_EQ(by["e"].cycles, 42u);
  EXPECT_EQ(by["e"].bound, OpBound::kHbm);  // memory 30 > vpu 10, time 42 <= 60
  EXPECT_NEAR(by["e"].memory_bound_s, 14362 / (900e9 / 2), 1e-15);
  EXPECT_NEAR(prof.time_s, r.device_time_s, 1e-15);
}

TEST(OpProfile, GroupsMergeKernelsThatDifferOnlyInNumbers) {
  EXPECT_EQ(op_group_name("bert.encoder.layer.11.output.dense.grad_rhs"), "bert.encoder.layer.*.output.dense.grad_rhs");
  EXPECT_EQ(op_group_name("reduce_sum.178"), "reduce_sum.*");
  EXPECT_EQ(op_group_name("all-reduce"), "all-reduce");
  EXPECT_EQ(op_group_name("7.a.x2"), "7.a.x2");  // a leading number and a mixed part stay
  OpProfile p;
  p.time_s = 1;
  auto entry = [](std::string name, uint64_t cycles, double t, double compute, double vpu) {
    OpProfileEntry e;
    e.name = std::move(name);
    e.count = 1;
    e.cycles = cycles;
    e.time_s = t;
    e.compute_bound_s = compute;
    e.vpu_bound_s = vpu;
    return e;
  };
  p.entries = {entry("l.0.mm", 30, 0.3, 0.25, 0.1), entry("x", 25, 0.25, 0, 0.2), entry("l.1.mm", 20, 0.2, 0.05, 0.15)};
  const OpProfile g = group_op_profile(p);
  ASSERT_EQ(g.entries.size(), 2u);
  EXPECT_EQ(g.entries[0].name, "l.*.mm");
  EXPECT_EQ(g.entries[0].count, 2u);
  EXPECT_EQ(g.entries[0].cycles, 50u);
  EXPECT_DOUBLE_EQ(g.entries[0].compute_bound_s, 0.3);
  EXPECT_DOUBLE_EQ(g.entries[0].vpu_bound_s, 0.25);
  EXPECT_EQ(g.entries[0].bound, OpBound::kMxu);  // of the sums: compute 0.3 > vpu 0.25, time 0.5 <= 0.6
  EXPECT_EQ(g.entries[1].name, "x");
  EXPECT_EQ(g.entries[1].bound, OpBound::kVpu);
}

TEST(OpProfile, NoKernelTableNoProfile) {
  isa::Program p = test::make_program("p");
  Stream s(p.cores[0]);
  s.vpu({.alu_vregs = 200}, {}, "a:v");
  const RunResult r = make_engine("analytical", test::v3_8_like())->run(p, nullptr);
  EXPECT_TRUE(r.op_profile.entries.empty());
  EXPECT_EQ(r.op_profile.cycles, r.device_cycles);
}

}  // namespace
}  // namespace tpusim
