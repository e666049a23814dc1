// block / fidelity: data-center-network stores (isa::Instr::dcn, multislice) on both engines: the
// SystemC path (transfer queue -> PCIe d2h -> the host's network interface, a bandwidth stage shared
// by its chips, then the DCN latency) in exact cycles, the analytical engine's per-core share when
// every core of the host sends at once, the stats and the rejection on a chip without chip.dcn.
//
// test::v3_8_ici() (tests/sim/test_hw.h) plus chip.dcn 4 GB/s per chip, 10 us: per cycle (940 MHz)
// PCIe 17.021 B, the host's NICs (4 chips) 17.021 B, a core's share (8 cores) 2.128 B; latencies
// PCIe 940, DCN 9400; HBM 235, setup 64, launch 2000.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "sim/engine/engine.h"
#include "sim/hw/resolved_hw.h"
#include "sim/ici/ici_timing.h"
#include "tests/sim/test_hw.h"
#include "tests/sim/test_program.h"

namespace tpusim {
namespace {

constexpr uint64_t kMiB = 1 << 20;

HwConfig with_dcn() {
  HwConfig hw = test::v3_8_ici();
  hw.chip.dcn = DcnParams{.bandwidth_gbyte_per_s = 4, .latency_us = 10};
  hw.multislice.slices = 2;
  return hw;
}

isa::Program every_core_sends(uint64_t bytes) {
  auto p = test::make_program("dcn", {{0, 0}, {0, 1}, {1, 0}, {1, 1}, {2, 0}, {2, 1}, {3, 0}, {3, 1}});
  for (auto& c : p.cores) test::Stream(c).dcn_store(bytes);
  return p;
}

TEST(Dcn, ResolvedRatesAreTheHostsNicsAndACoresShare) {
  const ResolvedHw r = resolve_hw(with_dcn());
  EXPECT_NEAR(r.dcn_host_bytes_per_cycle, 16e9 / 940e6, 1e-9);  // 4 chips x 4 GB/s
  EXPECT_NEAR(r.dcn_core_bytes_per_cycle, 16e9 / 940e6 / 8, 1e-9);
  EXPECT_EQ(r.dcn_latency_cycles, 9400u);
  // The one rule both engines read: the slowest stage (here the core's share), PCIe's latency plus
  // the DCN's.
  const TransferEstimate e = host_transfer_estimate(with_dcn(), r, false, kMiB, true);
  EXPECT_EQ(e.stream_cycles, uint64_t(std::ceil(double(kMiB) / r.dcn_core_bytes_per_cycle)));
  EXPECT_EQ(e.path_cycles, 940u + 9400u);
  EXPECT_EQ(e.read_cycles, 235u);
}

// Alone on the SystemC model a DCN store streams at the slowest stage of its path: PCIe and the
// host's NICs both carry 17.021 B/cycle, so it ends as a host store (2299 + 61604 + 940 = 64843,
// tests/sim/ici_block_test.cc) plus the DCN's 9400: 74243.
TEST(Dcn, AloneOnSystemcItIsAHostStorePlusTheNetworksLatency) {
  auto engine = make_engine("systemc", with_dcn());
  auto p = test::make_program("one", {{2, 0}});
  test::Stream(p.cores[0]).dcn_store(kMiB);
  const RunResult r = engine->run(p, nullptr);
  EXPECT_EQ(r.cores[0].end_cycle, 74243u);
  EXPECT_EQ(test::stat(r, "slice.host0.dcn", "bytes"), kMiB);
  EXPECT_EQ(test::stat(r, "slice.host0", "dcn_bytes"), kMiB);
  EXPECT_EQ(test::stat(r, "slice.host0", "dcn_sends"), 1);
  EXPECT_EQ(test::stat(r, "slice.host0", "stores"), 0);
  EXPECT_EQ(test::stat(r, "slice.chip2.pcie.d2h", "bytes"), kMiB);
}

// Every core of the host sends at once (an SPMD collective's DCN step): SystemC shares the host's
// NICs among the 8 flows train by train; the analytical engine gives each core its 1/8 share from
// the start. Both end when the NICs have carried 8 MiB: 2299 + 8 MiB / 17.021 (492,830) + 10,340.
TEST(Dcn, EveryCoreOfTheHostAtOnceTheEnginesAgree) {
  const isa::Program p = every_core_sends(kMiB);
  const RunResult sc = make_engine("systemc", with_dcn())->run(p, nullptr);
  const RunResult an = make_engine("analytical", with_dcn())->run(p, nullptr);
  const double expected = 2299 + 8.0 * double(kMiB) / (16e9 / 940e6) + 940 + 9400;
  EXPECT_NEAR(double(an.device_cycles), expected, 2);
  EXPECT_NEAR(double(sc.device_cycles), expected, 0.01 * expected);
  for (const RunResult* r : {&sc, &an}) {
    EXPECT_EQ(test::stat(*r, "slice.host0.dcn", "bytes"), 8 * kMiB);
    EXPECT_EQ(test::stat(*r, "slice.host0", "dcn_bytes"), 8 * kMiB);
    EXPECT_EQ(test::stat(*r, "slice.host0", "dcn_sends"), 8);
    EXPECT_EQ(test::stat(*r, "slice.chip1.pcie.d2h", "bytes"), 2 * kMiB);
  }
}

TEST(Dcn, AChipWithoutADcnSectionRejectsTheProgram) {
  HwConfig hw = with_dcn();
  hw.chip.dcn.reset();
  for (const char* name : {"systemc", "analytical"}) {
    try {
      make_engine(name, hw)->run(every_core_sends(kMiB), nullptr);
      ADD_FAILURE() << name << " ran a DCN store without chip.dcn";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find("data-center-network store"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("chip.dcn"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace tpusim
