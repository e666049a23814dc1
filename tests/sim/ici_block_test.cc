// block: transfers on the SystemC model: the transfer queue, NoC, ICI routers and links, PCIe and
// hosts, exact cycles with derivations; contention on shared links and PCIe; recv semantics,
// deadlocks; stats and trace names.
//
// test::v3_8_ici() (tests/sim/test_hw.h): rates per cycle HBM 430.851 B per core, link 87.234,
// NoC 212.766, PCIe 17.021; latencies HBM 235, hop 940, NoC 94, PCIe 940; setup 64; launch
// 2000. A transfer taken at 2000 starts its stream at 2000 + 64 (+ 235 when it reads HBM).
#include <gtest/gtest.h>

#include "sim/xfer/xfer_channels.h"

#include <algorithm>

#include "sim/base/sim_error.h"
#include "sim/engine/engine.h"
#include "tests/sim/exact_cycle_cases.h"
#include "tests/sim/test_hw.h"

namespace tpusim {
namespace {

using test::kMiB;

std::unique_ptr<Engine> systemc() { return make_engine("systemc", test::v3_8_ici()); }
// The transfer unit with `channels` channels (v3_8_ici() has 5).
std::unique_ptr<Engine> systemc(uint32_t channels) {
  HwConfig hw = test::v3_8_ici();
  hw.chip.core.xfer.channels = channels;
  return make_engine("systemc", hw);
}

// Same chip, through the NoC: 2299 + ceil(1048576 / 212.766 = 4928.31) = 7228 (queue free),
// + 94 = 7322 (delivered: send and recv complete).
TEST(IciBlock, SendOverTheNoc) {
  auto engine = systemc();
  auto p = test::make_program("noc", {{0, 0}, {0, 1}});
  test::Stream(p.cores[0]).send(kMiB, 0, 1, 0, {}, "to_core1");
  test::Stream(p.cores[1]).recv(0, 0, 0);
  test::RecordingTrace trace;
  RunResult r = engine->run(p, &trace);
  EXPECT_EQ(r.cores[0].end_cycle, 7322u);
  EXPECT_EQ(r.cores[1].end_cycle, 7322u);
  EXPECT_EQ(test::stat(r, "slice.chip0.noc", "bytes"), kMiB);
  EXPECT_EQ(test::stat(r, "slice.chip0.noc", "packets"), 256);
  EXPECT_NEAR(test::stat(r, "slice.chip0.noc", "busy_cycles"), kMiB / (200e9 / 940e6), 1e-6);
  EXPECT_FALSE(r.stats.contains("slice.chip0.ici.x+"));  // idle blocks are not reported
  auto xfer = trace.on("slice.chip0", "core0.xfer0");  // channel 0
  ASSERT_EQ(xfer.size(), 1u);
  EXPECT_EQ(xfer[0].start, 2000u);
  EXPECT_EQ(xfer[0].dur, 7228u - 2000u);
  auto noc = trace.on("slice.chip0", "noc");
  ASSERT_EQ(noc.size(), 1u);  // one event for the message's trains
  EXPECT_EQ(noc[0].name, "to_core1");
  EXPECT_EQ(noc[0].start, 2299u);
  EXPECT_EQ(noc[0].dur, 7227u - 2299u);  // 2299 + 4928.31 rounded
  EXPECT_EQ(noc[0].bytes, kMiB);
}

// One hop (chip0 -> chip1 over chip0.ici.x+): 2299 + ceil(1048576 / 87.234 = 12020.26) = 14320,
// + 940 = 15260. Two hops (chip0 -> chip3: x+ then chip1.y+): cut-through, so only the latency
// doubles: 14320 + 1880 = 16200. One transfer channel, so the second send waits for the first.
TEST(IciBlock, SendOneAndTwoHops) {
  auto engine = systemc(1);
  auto p = test::make_program("hops", {{0, 0}, {1, 0}, {3, 1}});
  test::Stream a(p.cores[0]);
  a.send(kMiB, 1, 0, 0, {}, "one_hop");
  a.send(kMiB, 3, 1, 0, {}, "two_hops");  // queued behind the first: starts at 14320
  test::Stream(p.cores[1]).recv(0, 0, 0);
  test::Stream(p.cores[2]).recv(0, 0, 0);
  test::RecordingTrace trace;
  RunResult r = engine->run(p, &trace);
  EXPECT_EQ(r.cores[1].end_cycle, 15260u);
  // The second send starts when the first has left: 14320 + 64 + 235 + 12021 + 1880 = 28520.
  EXPECT_EQ(r.cores[2].end_cycle, 28520u);
  EXPECT_EQ(r.cores[0].end_cycle, 28520u);
  EXPECT_EQ(test::stat(r, "slice.chip0.ici.x+", "bytes"), 2 * kMiB);
  EXPECT_EQ(test::stat(r, "slice.chip1.ici.y+", "bytes"), kMiB);
  EXPECT_EQ(test::stat(r, "slice.chip1.ici.y+", "packets"), 256);
  EXPECT_NEAR(test::stat(r, "slice.chip1.ici.y+", "utilization"), kMiB / (82e9 / 940e6) / 28520, 1e-9);
  EXPECT_FALSE(r.stats.contains("slice.chip0.ici.y+"));
  EXPECT_EQ(test::stat(r, "slice.chip0.core0.xfer", "sends"), 2);
  EXPECT_EQ(test::stat(r, "slice.chip0.core0.xfer", "busy_cycles"), 2 * (64 + 235 + 12021));
  EXPECT_EQ(test::stat(r, "slice.chip0.core0.xfer", "channels"), 1 + XferChannels::kHostChannels);  // + the host queue's
  EXPECT_EQ(trace.on("slice.chip0", "core0.xfer0").size(), 2u);
  EXPECT_EQ(test::stat(r, "slice.chip3.core1.xfer", "recvs"), 1);
  EXPECT_EQ(test::stat(r, "slice.chip3.core1.xfer", "recv_bytes"), kMiB);
  EXPECT_EQ(test::stat(r, "slice.chip3.hbm", "bytes"), kMiB);  // the posted writes
  // The second hop starts one hop latency after the first: 16619 + 940.
  auto hop2 = trace.on("slice.chip1", "ici.y+");
  ASSERT_EQ(hop2.size(), 1u);
  EXPECT_EQ(hop2[0].name, "two_hops");
  EXPECT_EQ(hop2[0].start, 14320u + 64 + 235 + 940);
  EXPECT_EQ(trace.on("slice.chip0", "ici.x+").size(), 2u);
}

// Channels: the queue issues in stream order onto the first free channel. With 2 channels, two
// 1 MiB sends from chip0.core0 on different links (x+ to chip1, y+ to chip2) run at once, each in
// the lone time 2299 + 12021 + 940 = 15260 (their HBM reads, 2 x 87.2 B/cycle, stay below the
// core's 430.9); a third (to chip1 again) waits for the first free channel: channel 0 at 14320
// (its last byte left), so 14320 + 64 + 235 + 12021 + 940 = 27580.
TEST(IciBlock, ConcurrentSendsOnTheFirstFreeChannel) {
  auto engine = systemc(2);
  auto p = test::make_program("channels", {{0, 0}, {1, 0}, {2, 0}});
  test::Stream a(p.cores[0]);
  a.send(kMiB, 1, 0, 0, {}, "x");
  a.send(kMiB, 2, 0, 0, {}, "y");
  a.send(kMiB, 1, 0, 1, {}, "x_again");
  test::Stream b(p.cores[1]);
  b.recv(0, 0, 0);
  b.recv(0, 0, 1);
  test::Stream(p.cores[2]).recv(0, 0, 0);
  test::RecordingTrace trace;
  RunResult r = engine->run(p, &trace);
  EXPECT_EQ(r.cores[2].end_cycle, 15260u);
  EXPECT_EQ(r.cores[1].end_cycle, 27580u);
  EXPECT_EQ(r.cores[0].end_cycle, 27580u);
  auto ch0 = trace.on("slice.chip0", "core0.xfer0"), ch1 = trace.on("slice.chip0", "core0.xfer1");
  ASSERT_EQ(ch0.size(), 2u);
  ASSERT_EQ(ch1.size(), 1u);
  EXPECT_EQ(ch0[0].name, "x");
  EXPECT_EQ(ch0[0].start, 2000u);
  EXPECT_EQ(ch1[0].name, "y");
  EXPECT_EQ(ch1[0].start, 2000u);
  EXPECT_EQ(ch0[1].name, "x_again");
  EXPECT_EQ(ch0[1].start, 14320u);
  EXPECT_EQ(test::stat(r, "slice.chip0.core0.xfer", "busy_cycles"), 3 * (64 + 235 + 12021));
  EXPECT_EQ(test::stat(r, "slice.chip0.core0.xfer", "channels"), 2 + XferChannels::kHostChannels);  // + the host queue's
  EXPECT_NEAR(test::stat(r, "slice.chip0.core0.xfer", "utilization"), 3.0 * 12320 / (4.0 * 27580), 1e-12);
}

// Two 4 MiB flows from both cores of chip0 to chip1 share chip0.ici.x+: the link is busy back to
// back from 2299 for 8 MiB: 8388608 / 87.234 = 96162.09; the later flow is delivered at
// 2299 + 96162.09 + 940 -> 99402, twice the lone flow's stream (2299 + 48082 + 940 = 51321).
// The flows alternate trains of 64 KiB (751.27 cycles), so the earlier one ends one train before:
// 99401.09 - 751.27 -> 98650.
TEST(IciBlock, TwoFlowsOnOneLinkTakeTwiceAsLong) {
  auto engine = systemc();
  auto p = test::make_program("shared_link", {{0, 0}, {0, 1}, {1, 0}, {1, 1}});
  test::Stream(p.cores[0]).send(4 * kMiB, 1, 0, 0);
  test::Stream(p.cores[1]).send(4 * kMiB, 1, 1, 0);
  test::Stream(p.cores[2]).recv(0, 0, 0);
  test::Stream(p.cores[3]).recv(0, 1, 0);
  RunResult r = engine->run(p, nullptr);
  std::vector<uint64_t> ends = {r.cores[2].end_cycle, r.cores[3].end_cycle};
  std::sort(ends.begin(), ends.end());
  EXPECT_EQ(ends, (std::vector<uint64_t>{98650, 99402}));
  EXPECT_EQ(test::stat(r, "slice.chip0.ici.x+", "bytes"), 8 * kMiB);
  EXPECT_NEAR(test::stat(r, "slice.chip0.ici.x+", "utilization"), 96162.09 / 99402, 1e-6);
  // Alone, one flow takes 51321.
  auto q = test::make_program("alone", {{0, 0}, {1, 0}});
  test::Stream(q.cores[0]).send(4 * kMiB, 1, 0, 0);
  test::Stream(q.cores[1]).recv(0, 0, 0);
  EXPECT_EQ(engine->run(q, nullptr).device_cycles, 51321u);
}

// Flows on different links do not interfere: chip0 -> chip1 (x+) and chip0 -> chip2 (y+) at once.
TEST(IciBlock, FlowsOnDifferentLinksDoNotContend) {
  auto engine = systemc();
  auto p = test::make_program("two_links", {{0, 0}, {0, 1}, {1, 0}, {2, 0}});
  test::Stream(p.cores[0]).send(kMiB, 1, 0, 0);
  test::Stream(p.cores[1]).send(kMiB, 2, 0, 0);
  test::Stream(p.cores[2]).recv(0, 0, 0);
  test::Stream(p.cores[3]).recv(0, 1, 0);
  RunResult r = engine->run(p, nullptr);
  EXPECT_EQ(r.cores[2].end_cycle, 15260u);
  EXPECT_EQ(r.cores[3].end_cycle, 15260u);
}

// Host load 1 MiB: PCIe h2d from 2064 (no HBM read): 2064 + ceil(61603.84) = 63668, + 940 =
// 64608. Host store: reads HBM first: 2299 + 61604 + 940 = 64843. PCIe is full duplex: a load on
// core 0 and a store on core 1 at once do not slow each other down.
TEST(IciBlock, HostLoadAndStore) {
  auto engine = systemc();
  auto p = test::make_program("host", {{2, 0}, {2, 1}});
  test::Stream(p.cores[0]).host_load(kMiB, {}, "infeed");
  test::Stream(p.cores[1]).host_store(kMiB, {}, "outfeed");
  test::RecordingTrace trace;
  RunResult r = engine->run(p, &trace);
  EXPECT_EQ(r.cores[0].end_cycle, 64608u);
  EXPECT_EQ(r.cores[1].end_cycle, 64843u);
  EXPECT_EQ(test::stat(r, "slice.chip2.pcie.h2d", "bytes"), kMiB);
  EXPECT_EQ(test::stat(r, "slice.chip2.pcie.d2h", "bytes"), kMiB);
  EXPECT_EQ(test::stat(r, "slice.host0", "loads"), 1);
  EXPECT_EQ(test::stat(r, "slice.host0", "stores"), 1);
  EXPECT_EQ(test::stat(r, "slice.host0", "load_bytes"), kMiB);
  EXPECT_EQ(test::stat(r, "slice.chip2.core0.xfer", "host_loads"), 1);
  EXPECT_EQ(test::stat(r, "slice.chip2.core0.xfer", "host_load_bytes"), kMiB);
  EXPECT_EQ(test::stat(r, "slice.chip2.core1.xfer", "host_store_bytes"), kMiB);
  EXPECT_EQ(test::stat(r, "slice.chip2.hbm", "bytes"), 2 * kMiB);  // the load's writes, the store's reads
  auto h2d = trace.on("slice.chip2", "pcie.h2d");
  ASSERT_EQ(h2d.size(), 1u);
  EXPECT_EQ(h2d[0].name, "infeed");
  EXPECT_EQ(h2d[0].start, 2064u);
  EXPECT_EQ(trace.on("slice.chip2", "pcie.d2h").size(), 1u);
}

// Both cores of a chip share its PCIe link: two 1 MiB loads at once keep h2d busy from 2064 for
// 2 MiB / 17.021 = 123207.68: the later ends at 2064 + 123207.68 + 940 -> 126212, the earlier one
// train (64 KiB: 3850.24 cycles) before -> 122362; alone each takes 64608.
TEST(IciBlock, PcieIsSharedByTheChipsCores) {
  auto engine = systemc();
  auto p = test::make_program("two_loads", {{3, 0}, {3, 1}});
  test::Stream(p.cores[0]).host_load(kMiB);
  test::Stream(p.cores[1]).host_load(kMiB);
  RunResult r = engine->run(p, nullptr);
  std::vector<uint64_t> ends = {r.cores[0].end_cycle, r.cores[1].end_cycle};
  std::sort(ends.begin(), ends.end());
  EXPECT_EQ(ends, (std::vector<uint64_t>{122362, 126212}));
  EXPECT_EQ(test::stat(r, "slice.chip3.pcie.h2d", "bytes"), 2 * kMiB);
  EXPECT_FALSE(r.stats.contains("slice.chip3.pcie.d2h"));
  // Cores of different chips have their own PCIe links (one host for the v3-8's four chips).
  auto q = test::make_program("two_chips", {{0, 0}, {1, 0}});
  test::Stream(q.cores[0]).host_load(kMiB);
  test::Stream(q.cores[1]).host_load(kMiB);
  RunResult s = engine->run(q, nullptr);
  EXPECT_EQ(s.cores[0].end_cycle, 64608u);
  EXPECT_EQ(s.cores[1].end_cycle, 64608u);
  EXPECT_EQ(test::stat(s, "slice.host0", "loads"), 2);
}

// A recv completes at max(deps, data). Data at 7322 (1 MiB over the NoC, which also carries the
// zero-byte send of the second channel, early: core0 ends with the first at 7322); a recv depending on a
// VPU block done at 2000 + 5000 + 32 = 7032 completes at 7322; one depending on a block done at
// 2000 + 10000 + 32 = 12032 (queued behind the first: 7000..12000) completes at 12032.
TEST(IciBlock, RecvCompletesWhenItsDataAndDepsAreThere) {
  auto engine = systemc();
  auto p = test::make_program("recv_deps", {{0, 0}, {0, 1}});
  test::Stream a(p.cores[0]), b(p.cores[1]);
  a.send(kMiB, 0, 1, 0);
  a.send(0, 0, 1, 1);  // zero bytes, on the second channel at once
  uint32_t v1 = b.vpu({.alu_vregs = 10000});
  uint32_t r1 = b.recv(0, 0, 0, {v1});
  uint32_t v2 = b.vpu({.alu_vregs = 10000});
  uint32_t r2 = b.recv(0, 0, 1, {v2});
  b.vpu({.alu_vregs = 2}, {r1}, "after_r1");
  b.vpu({.alu_vregs = 2}, {r2}, "after_r2");
  test::RecordingTrace trace;
  RunResult r = engine->run(p, &trace);
  EXPECT_EQ(r.cores[0].end_cycle, 7322u);
  auto vpu = trace.on("slice.chip0", "core1.vpu");
  ASSERT_EQ(vpu.size(), 4u);
  EXPECT_EQ(vpu[2].name, "after_r1");
  EXPECT_EQ(vpu[2].start, 12000u);  // the VPU queue is in order: after the second block
  EXPECT_EQ(vpu[3].start, 12032u);  // waits for r2 (12032)
  EXPECT_EQ(r.cores[1].end_cycle, 12032u + 1 + 32);
  EXPECT_EQ(test::stat(r, "slice.chip0.core1.xfer", "recvs"), 2);
  EXPECT_EQ(test::stat(r, "slice.chip0.core1.sequencer", "instructions"), 6);
}

TEST(IciBlock, RecvDeadlockIsReportedAndTheModelRecovers) {
  auto engine = systemc();
  auto p = test::make_program("stuck", {{0, 0}, {1, 0}});
  test::Stream a(p.cores[0]), b(p.cores[1]);
  uint32_t ra = a.recv(1, 0, 1, {}, "a_waits");
  a.send(64, 1, 0, 2, {ra}, "a_sends");
  uint32_t rb = b.recv(0, 0, 2, {}, "b_waits");
  b.send(64, 0, 0, 1, {rb}, "b_sends");
  try {
    engine->run(p, nullptr);
    FAIL() << "expected a deadlock";
  } catch (const SimError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("program 'stuck' deadlocked: slice.chip0.core0 instruction #0 'a_waits' never completed: its "
                     "data never arrived: the matching send slice.chip1.core0 instruction #1 'b_sends' (send) never ran"),
              std::string::npos)
        << m;
  }
  auto q = test::make_program("fine", {{0, 0}, {0, 1}});
  test::Stream(q.cores[0]).send(kMiB, 0, 1, 0);
  test::Stream(q.cores[1]).recv(0, 0, 0);
  EXPECT_EQ(engine->run(q, nullptr).device_cycles, 7322u);
}

// Runs are independent: repeating a transfer program repeats its results and stats exactly, and
// the programs without transfers keep their exact cycles after it.
TEST(IciBlock, RunsBackToBackAreIdentical) {
  auto engine = systemc();
  auto p = test::make_program("mix", {{0, 0}, {0, 1}, {1, 0}, {3, 1}});
  test::Stream(p.cores[0]).send(3 * kMiB + 123, 3, 1, 0);
  test::Stream(p.cores[1]).send(kMiB, 1, 0, 0);
  test::Stream(p.cores[2]).recv(0, 1, 0);
  test::Stream s3(p.cores[3]);
  s3.recv(0, 0, 0);
  s3.host_store(1000);
  RunResult first = engine->run(p, nullptr);
  RunResult again = engine->run(p, nullptr);
  EXPECT_EQ(again.device_cycles, first.device_cycles);
  EXPECT_EQ(again.stats, first.stats);
  auto plain = make_engine("systemc", test::v3_8_like());
  for (const auto& c : test::exact_cycle_cases()) EXPECT_EQ(plain->run(c.program, nullptr).device_cycles, c.device_cycles);
}

}  // namespace
}  // namespace tpusim
