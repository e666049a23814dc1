// unit: decoding of transfers (program_plan.h): units, send/recv pairing and the errors of a
// program whose transfers do not match; the analytical engine's transfer semantics.
#include <gtest/gtest.h>

#include "sim/analysis/program_plan.h"
#include "sim/base/sim_error.h"
#include "sim/engine/engine.h"
#include "tests/sim/exact_cycle_cases.h"
#include "tests/sim/test_hw.h"

namespace tpusim {
namespace {

std::string plan_error(const isa::Program& p) {
  ProgramPlan plan;
  try {
    plan.build(p, test::v3_8_ici());
  } catch (const SimError& e) {
    return e.what();
  }
  return "";
}

TEST(TransferPlan, UnitsAndPairs) {
  auto p = test::make_program("pairs", {{0, 0}, {1, 1}});
  test::Stream a(p.cores[0]), b(p.cores[1]);
  a.send(100, 1, 1, 7);       // 0
  a.host_load(10);            // 1
  a.recv(1, 1, 8);            // 2
  a.host_store(10);           // 3
  b.recv(0, 0, 7);            // 0
  b.vpu({.alu_vregs = 2});    // 1
  b.send(5, 0, 0, 8, {0});    // 2
  ProgramPlan plan;
  plan.build(p, test::v3_8_ici());
  const CorePlan& ca = plan.cores()[0];
  const CorePlan& cb = plan.cores()[1];
  EXPECT_EQ(ca.unit[0], UnitIndex::kXfer);
  EXPECT_EQ(ca.unit[1], UnitIndex::kHost);  // host transfers: the host queue, beside the transfer queue
  EXPECT_EQ(ca.unit[2], UnitIndex::kRecv);
  EXPECT_EQ(ca.unit[3], UnitIndex::kHost);
  EXPECT_EQ(ca.queues.size(UnitIndex::kXfer), 1u);
  EXPECT_EQ(ca.queues.size(UnitIndex::kHost), 2u);
  EXPECT_TRUE(ca.has_transfers);
  EXPECT_EQ(ca.match_instr(0), 0u);
  EXPECT_EQ(ca.match_slot(0), 1u);
  EXPECT_EQ(cb.match_instr(0), 0u);
  EXPECT_EQ(cb.match_slot(0), 0u);
  EXPECT_EQ(ca.match_instr(2), 2u);
  EXPECT_EQ(cb.match_instr(2), 2u);
  EXPECT_EQ(ca.match_instr(1), kNoIndex);  // host transfers have no peer
  EXPECT_EQ(cb.match_instr(1), kNoIndex);
}

TEST(TransferPlan, ProgramsWithoutTransfersAreUnchanged) {
  for (const auto& c : test::exact_cycle_cases()) {
    ProgramPlan plan;
    plan.build(c.program, test::v3_8_like());
    for (const CorePlan& cp : plan.cores()) EXPECT_FALSE(cp.has_transfers) << c.name;
  }
}

TEST(TransferPlan, SendWithoutRecvNamesTheSend) {
  auto p = test::make_program("lonely", {{0, 0}, {0, 1}});
  test::Stream(p.cores[0]).send(64, 0, 1, 3, {}, "grad_send");
  const std::string e = plan_error(p);
  EXPECT_NE(e.find("invalid program: slice.chip0.core0 instruction #0 'grad_send' (send) has no matching recv"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("no recv from slice.chip0.core0 on slice.chip0.core1 with tag 3"), std::string::npos) << e;
}

TEST(TransferPlan, RecvWithoutSendNamesTheRecv) {
  auto p = test::make_program("lonely", {{0, 0}, {2, 1}});
  test::Stream(p.cores[1]).recv(0, 0, 9, {}, "grad_recv");
  test::Stream(p.cores[0]).send(64, 2, 1, 8, {}, "wrong_tag");
  const std::string e = plan_error(p);
  EXPECT_NE(e.find("slice.chip2.core1 instruction #0 'grad_recv' (recv) has no matching send"), std::string::npos) << e;
  EXPECT_NE(e.find("no send from slice.chip0.core0 to slice.chip2.core1 with tag 9"), std::string::npos) << e;
}

// A send to a core that has no stream in the program has no recv either.
TEST(TransferPlan, SendToACoreWithoutAStreamHasNoRecv) {
  auto p = test::make_program("nobody");
  test::Stream(p.cores[0]).send(64, 3, 1, 0, {}, "into_the_void");
  EXPECT_NE(plan_error(p).find("'into_the_void' (send) has no matching recv"), std::string::npos);
}

TEST(TransferPlan, PeerOutOfRange) {
  auto p = test::make_program("range");
  test::Stream(p.cores[0]).send(64, 4, 0, 0, {}, "far");
  std::string e = plan_error(p);
  EXPECT_NE(e.find("'far' (send) sends to chip 4 core 0, but the slice has 4 chips of 2 cores"), std::string::npos) << e;
  auto q = test::make_program("range");
  test::Stream(q.cores[0]).recv(1, 2, 0, {}, "odd");
  e = plan_error(q);
  EXPECT_NE(e.find("'odd' (recv) receives from chip 1 core 2, but the slice has 4 chips of 2 cores"), std::string::npos)
      << e;
}

TEST(TransferPlan, DuplicateTripleNamesBoth) {
  auto p = test::make_program("dup", {{0, 0}, {1, 0}});
  test::Stream a(p.cores[0]), b(p.cores[1]);
  a.send(64, 1, 0, 5, {}, "first");
  a.send(64, 1, 0, 5, {}, "second");
  b.recv(0, 0, 5);
  b.recv(0, 0, 6);
  const std::string e = plan_error(p);
  EXPECT_NE(e.find("'second' (send) and slice.chip0.core0 instruction #0 'first' (send) are both sends to "
                   "slice.chip1.core0 with tag 5"),
            std::string::npos)
      << e;
  // The same tag is fine between other pairs and in the other direction.
  auto q = test::make_program("ok", {{0, 0}, {1, 0}, {2, 0}});
  test::Stream x(q.cores[0]), y(q.cores[1]), z(q.cores[2]);
  x.send(64, 1, 0, 5);
  x.send(64, 2, 0, 5);
  x.recv(1, 0, 5);
  y.recv(0, 0, 5);
  y.send(64, 0, 0, 5);
  z.recv(0, 0, 5);
  EXPECT_EQ(plan_error(q), "");
}

// Cores sharing a stream (SPMD replicas, peers per core) are checked for repeated triples only
// where the stream repeats a tag (else no peers can repeat one), and matched and reported as
// cores of their own.
TEST(TransferPlan, SharedStreamsAreCheckedWhereTheirTagsRepeat) {
  // Each chip k of four sends tag 5 to k+1 and k+2 and receives tag 5 from k-1 and k-2.
  auto ring = [](std::vector<std::vector<isa::PeerRef>> peers) {
    auto p = test::make_program("shared", {{0, 0}, {1, 0}, {2, 0}, {3, 0}});
    test::Stream s(p.cores[0]);
    s.send(64, peers[0][0].chip, 0, 5);
    s.send(64, peers[0][1].chip, 0, 5);
    s.recv(peers[0][2].chip, 0, 5);
    s.recv(peers[0][3].chip, 0, 5);
    for (uint32_t k = 1; k < 4; ++k) {
      p.cores[k].stream_of = 0;
      p.cores[k].peers = isa::PeerTable(peers[k]);
    }
    return p;
  };
  std::vector<std::vector<isa::PeerRef>> peers(4);
  for (uint32_t k = 0; k < 4; ++k) peers[k] = {{(k + 1) % 4, 0}, {(k + 2) % 4, 0}, {(k + 3) % 4, 0}, {(k + 2) % 4, 0}};
  EXPECT_EQ(plan_error(ring(peers)), "");
  auto twice = peers;
  twice[2][1] = {3, 0};  // chip 2 sends tag 5 to chip 3 twice
  EXPECT_NE(plan_error(ring(twice)).find("slice.chip2.core0 instruction #1 'send' (send) and slice.chip2.core0 instruction #0 "
                                          "'send' (send) are both sends to slice.chip3.core0 with tag 5"),
            std::string::npos)
      << plan_error(ring(twice));

  // Distinct tags: no check needed; a receive whose sender never sends to it is still named.
  auto p = test::make_program("distinct", {{0, 0}, {1, 0}, {2, 0}, {3, 0}});
  {
    test::Stream s(p.cores[0]);
    s.send(64, 1, 0, 5);
    s.recv(3, 0, 5);
  }
  for (uint32_t k = 1; k < 4; ++k) {
    p.cores[k].stream_of = 0;
    p.cores[k].peers = {{(k + 1) % 4, 0}, {(k + 3) % 4, 0}};
  }
  EXPECT_EQ(plan_error(p), "");
  p.cores[1].peers = {{2, 0}, {3, 0}};  // chip 1 receives from chip 3, which sends to chip 0
  EXPECT_NE(plan_error(p).find("slice.chip1.core0 instruction #1 'recv' (recv) has no matching send (no send from "
                               "slice.chip3.core0 to slice.chip1.core0 with tag 5)"),
            std::string::npos)
      << plan_error(p);
}

// Cores of one stream mostly match at the same positions and share one table of them; a core whose
// peers put its matches elsewhere gets its own, and every send and receive still finds its other end
// (both ways), with the same timing as every core running its own copy of the stream.
TEST(TransferPlan, SharedStreamsWithDifferentMatchPositions) {
  // Each chip k of four sends tag 5 to chips k+1 and k+2 and receives tag 5 from k-1 and k-2, in
  // the order of its peer table: chip 2 lists its two receives the other way round, so its senders'
  // matches (and its own) land at the other positions.
  auto p = test::make_program("positions", {{0, 0}, {1, 0}, {2, 0}, {3, 0}});
  {
    test::Stream s(p.cores[0]);
    s.send(64, 1, 0, 5);
    s.send(64, 2, 0, 5);
    s.recv(3, 0, 5);
    s.recv(2, 0, 5);
  }
  for (uint32_t k = 1; k < 4; ++k) {
    p.cores[k].stream_of = 0;
    p.cores[k].peers = {{(k + 1) % 4, 0}, {(k + 2) % 4, 0}, {(k + 3) % 4, 0}, {(k + 2) % 4, 0}};
  }
  p.cores[2].peers = {{3, 0}, {0, 0}, {0, 0}, {1, 0}};
  ASSERT_EQ(plan_error(p), "");
  ProgramPlan plan;
  plan.build(p, test::v3_8_ici());
  size_t own = 0;
  for (const CorePlan& cp : plan.cores()) {
    own += !cp.own_match_pos.empty();
    for (uint32_t pos = 0; pos < cp.sends_recvs.size(); ++pos) {
      const uint32_t i = cp.sends_recvs[pos];
      const uint32_t other = cp.match_instr(i);
      ASSERT_NE(other, kNoIndex) << cp.name << " #" << i;
      const CorePlan& peer = plan.cores()[cp.match_slot(i)];
      EXPECT_EQ(peer.match_instr(other), i) << cp.name << " #" << i;
      EXPECT_EQ(peer.match_slot(other), cp.slot) << cp.name << " #" << i;
      EXPECT_NE(cp.instr(i).op, peer.instr(other).op);
    }
  }
  EXPECT_GT(own, 0u);  // not every core matches at its stream's first core's positions
  for (const char* engine : {"analytical", "systemc"}) {
    auto e = make_engine(engine, test::v3_8_ici());
    const RunResult shared = e->run(p, nullptr);
    const RunResult copied = make_engine(engine, test::v3_8_ici())->run(isa::unshared(p), nullptr);
    EXPECT_EQ(shared.device_cycles, copied.device_cycles) << engine;
  }
}

TEST(TransferPlan, SelfSendAndByteMismatch) {
  auto p = test::make_program("self");
  test::Stream(p.cores[0]).send(64, 0, 0, 0, {}, "mirror");
  EXPECT_NE(plan_error(p).find("'mirror' (send) sends to its own core"), std::string::npos);
  auto q = test::make_program("bytes", {{0, 0}, {0, 1}});
  test::Stream(q.cores[0]).send(64, 0, 1, 0, {}, "s");
  test::Stream(q.cores[1]).recv(0, 0, 0, {}, "r", 128);
  const std::string e = plan_error(q);
  EXPECT_NE(e.find("'r' (recv) expects 128 bytes, but its send slice.chip0.core0 instruction #0 's' (send) sends 64"),
            std::string::npos)
      << e;
}

// The engines reject mismatched programs before running anything.
TEST(TransferPlan, EnginesRejectBeforeRunning) {
  auto engine = make_engine("analytical", test::v3_8_ici());
  auto p = test::make_program("lonely", {{0, 0}, {0, 1}});
  test::Stream(p.cores[0]).send(64, 0, 1, 3, {}, "grad_send");
  EXPECT_THROW(engine->run(p, nullptr), SimError);
}

// analytical: a recv listed before the send that feeds the other core (no dep between them) is
// not a deadlock: receives hold no queue. Crossed exchange between two cores of chip 0 (NoC):
// both sends start at 2000: 2064 + 235 + ceil(65536 / 212.766 = 308.02) = 2608 + 94 = 2702.
TEST(TransferPlan, AnalyticalRecvBeforeSendIsNoDeadlock) {
  auto engine = make_engine("analytical", test::v3_8_ici());
  auto p = test::make_program("exchange", {{0, 0}, {0, 1}});
  test::Stream a(p.cores[0]), b(p.cores[1]);
  a.recv(0, 1, 0);
  a.send(65536, 0, 1, 0);
  b.recv(0, 0, 0);
  b.send(65536, 0, 0, 0);
  RunResult r = engine->run(p, nullptr);
  EXPECT_EQ(r.device_cycles, 2702u);
  EXPECT_EQ(r.cores[0].end_cycle, 2702u);
  EXPECT_EQ(r.cores[1].end_cycle, 2702u);
}

// A recv completes at max(deps, data): the data of a 64 KiB NoC send is there at 2702; a recv
// that depends on a VPU block of 10000 ALU vregs (5000 cycles, done 2000 + 5000 + 32 = 7032)
// completes then; an instruction behind the recv waits for it.
TEST(TransferPlan, AnalyticalRecvWaitsForItsDeps) {
  auto engine = make_engine("analytical", test::v3_8_ici());
  auto p = test::make_program("late", {{0, 0}, {0, 1}});
  test::Stream a(p.cores[0]), b(p.cores[1]);
  a.send(65536, 0, 1, 0);
  uint32_t v = b.vpu({.alu_vregs = 10000});
  uint32_t r = b.recv(0, 0, 0, {v});
  b.vpu({.alu_vregs = 2}, {r});  // 7032 + 1 + 32
  RunResult res = engine->run(p, nullptr);
  EXPECT_EQ(res.cores[0].end_cycle, 2702u);
  EXPECT_EQ(res.cores[1].end_cycle, 7032u + 1 + 32);
}

TEST(TransferPlan, AnalyticalRecvDeadlockNamesTheRecv) {
  auto engine = make_engine("analytical", test::v3_8_ici());
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
}

}  // namespace
}  // namespace tpusim
