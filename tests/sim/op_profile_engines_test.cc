// block: both engines give the same op profile (sim/analysis/op_profile.h) on the exact-cycle cases,
// where they agree on every completion: the same shared attribution from the same times.
#include <gtest/gtest.h>

#include <string>

#include "sim/engine/engine.h"
#include "tests/sim/exact_cycle_cases.h"
#include "tests/sim/test_hw.h"

namespace tpusim {
namespace {

// Every instruction of every stream a kernel of its own, named k0, k1, k2 in turn (so that
// entries merge), with some flops and HBM bytes so that the bounds differ.
isa::Program with_kernel_table(isa::Program p) {
  const isa::Label names[] = {isa::Label("k0"), isa::Label("k1"), isa::Label("k2")};
  for (isa::CoreProgram& cp : p.cores)
    for (uint32_t i = 0; i < cp.instrs.size(); ++i)
      cp.kernels.push_back({names[i % 3], i, i, uint64_t(i) * 1000000, uint64_t(i) * 4096, {}});
  return p;
}

TEST(OpProfileEngines, SystemcAndAnalyticalAgreeOnTheExactCycleCases) {
  auto systemc = make_engine("systemc", test::v3_8_like());
  auto analytical = make_engine("analytical", test::v3_8_like());
  for (const auto& c : test::exact_cycle_cases()) {
    const isa::Program p = with_kernel_table(c.program);
    const RunResult a = analytical->run(p, nullptr), s = systemc->run(p, nullptr);
    ASSERT_EQ(a.device_cycles, s.device_cycles) << c.name;
    const OpProfile &pa = a.op_profile, &ps = s.op_profile;
    EXPECT_EQ(pa.chip, ps.chip) << c.name;
    EXPECT_EQ(pa.core, ps.core) << c.name;
    EXPECT_EQ(pa.cycles, a.device_cycles) << c.name;
    ASSERT_EQ(pa.entries.size(), ps.entries.size()) << c.name;
    if (pa.entries.empty()) continue;  // a case without instructions has no kernel table
    uint64_t sum = 0;
    for (size_t e = 0; e < pa.entries.size(); ++e) {
      EXPECT_EQ(pa.entries[e].name, ps.entries[e].name) << c.name;
      EXPECT_EQ(pa.entries[e].count, ps.entries[e].count) << c.name;
      EXPECT_EQ(pa.entries[e].cycles, ps.entries[e].cycles) << c.name << " " << pa.entries[e].name;
      EXPECT_EQ(pa.entries[e].bound, ps.entries[e].bound) << c.name << " " << pa.entries[e].name;
      sum += pa.entries[e].cycles;
    }
    EXPECT_EQ(sum, a.device_cycles) << c.name;
  }
}

}  // namespace
}  // namespace tpusim
