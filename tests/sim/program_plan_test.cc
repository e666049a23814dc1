// unit: program decoding and the structural checks of program.h (both engines share them).
#include <gtest/gtest.h>

#include "sim/analysis/program_plan.h"
#include "sim/base/sim_error.h"
#include "tests/sim/test_hw.h"
#include "tests/sim/test_program.h"

namespace tpusim {
namespace {

using test::Stream;

std::string plan_error(const isa::Program& p) {
  ProgramPlan plan;
  try {
    plan.build(p, test::v3_8_like());
  } catch (const SimError& e) {
    return e.what();
  }
  return "";
}

TEST(ProgramPlan, AssignsUnitsAndBuildsQueuesInStreamOrder) {
  auto p = test::make_program("units");
  Stream s(p.cores[0]);
  s.dma_load(1024);                // 0
  s.weights(1, 128, 128);          // 1
  s.matmul(1, 8, 128, 128, {1});   // 2
  s.vpu({.alu_vregs = 4});         // 3
  s.dma_store(1024, {3});          // 4
  s.barrier(7);                    // 5
  ProgramPlan plan;
  plan.build(p, test::v3_8_like(), {.successors = true});
  const CorePlan& cp = plan.cores()[0];
  EXPECT_EQ(cp.name, "slice.chip0.core0");
  EXPECT_EQ(cp.unit[0], UnitIndex::kDma);
  EXPECT_EQ(cp.unit[1], UnitIndex::mxu_weights(1));
  EXPECT_EQ(cp.unit[2], UnitIndex::mxu_stream(1));
  EXPECT_EQ(cp.unit[3], UnitIndex::kVpu);
  EXPECT_EQ(cp.unit[5], UnitIndex::kSync);
  ASSERT_EQ(cp.queues.size(UnitIndex::kDma), 2u);
  EXPECT_EQ(cp.queues.row(UnitIndex::kDma)[0], 0u);
  EXPECT_EQ(cp.queues.row(UnitIndex::kDma)[1], 4u);
  ASSERT_EQ(cp.succs.size(3), 1u);
  EXPECT_EQ(cp.succs.row(3)[0], 4u);
  EXPECT_EQ(plan.barrier_participants().size(), 1u);
  EXPECT_EQ(plan.barrier_participants()[0], 1u);
  EXPECT_EQ(cp.barrier_pos(5), 0u);
  EXPECT_EQ(cp.transfer_pos(5), kNoIndex);
  EXPECT_EQ(cp.barrier_pos(4), kNoIndex);
  // Successors are built only when asked for (the SystemC sequencer's).
  plan.build(p, test::v3_8_like());
  EXPECT_TRUE(plan.cores()[0].succs.items.empty());
  ASSERT_EQ(plan.cores()[0].deps.size(4), 1u);
}

// Positions of transfers and barriers across the 64-instruction words of the rank bitmap.
TEST(ProgramPlan, PositionsOfTransfersAndBarriersInLongStreams) {
  auto p = test::make_program("positions", {{0, 0}, {1, 0}});
  std::vector<std::pair<uint32_t, uint32_t>> expect;  // (instruction, position) on core 0
  for (uint32_t c = 0; c < 2; ++c) {
    Stream s(p.cores[c]);
    uint32_t transfers = 0, barriers = 0;
    for (uint32_t k = 0; k < 300; ++k) {
      uint32_t i;
      if (k % 7 == 3) {
        i = c == 0 ? s.send(64, 1, 0, k) : s.recv(0, 0, k);
        if (c == 0) expect.push_back({i, transfers});
        ++transfers;
      } else if (k % 13 == 5) {
        i = s.barrier(k);
        if (c == 0) expect.push_back({i, barriers | kBarrierPos});
        ++barriers;
      } else {
        i = s.vpu({.alu_vregs = 1});
        if (c == 0) expect.push_back({i, kNoIndex});
      }
    }
  }
  ProgramPlan plan;
  plan.build(p, test::v3_8_like());
  const CorePlan& cp = plan.cores()[0];
  for (auto [i, pos] : expect) {
    if (pos == kNoIndex) {
      EXPECT_EQ(cp.transfer_pos(i), kNoIndex) << i;
      EXPECT_EQ(cp.barrier_pos(i), kNoIndex) << i;
    } else if (pos & kBarrierPos) {
      EXPECT_EQ(cp.barrier_pos(i), pos & ~kBarrierPos) << i;
      EXPECT_EQ(cp.barriers[pos & ~kBarrierPos], i);
    } else {
      EXPECT_EQ(cp.transfer_pos(i), pos) << i;
      EXPECT_EQ(cp.sends_recvs[pos], i);
    }
  }
}

TEST(ProgramPlan, MatmulWithoutWeightDepGetsTheLatestLoadOfItsMxu) {
  auto p = test::make_program("implicit");
  Stream s(p.cores[0]);
  s.weights(0, 128, 128);  // 0
  s.weights(1, 128, 128);  // 1
  s.matmul(0, 8, 128, 128);  // 2: implicit dep on 0 (MXU 0), not on 1
  ProgramPlan plan;
  plan.build(p, test::v3_8_like());
  const CorePlan& cp = plan.cores()[0];
  ASSERT_EQ(cp.deps.size(2), 1u);
  EXPECT_EQ(cp.deps.row(2)[0], 0u);
}

TEST(ProgramPlan, RejectsMalformedPrograms) {
  {
    auto p = test::make_program("forward-dep");
    Stream s(p.cores[0]);
    s.vpu({}, {}, "a");
    s.add_dep(0, 0);
    EXPECT_NE(plan_error(p).find("instruction #0 'a' (vpu) depends on #0, which is not earlier"), std::string::npos)
        << plan_error(p);
  }
  {
    auto p = test::make_program("mxu");
    Stream s(p.cores[0]);
    s.weights(2, 128, 128);
    EXPECT_NE(plan_error(p).find("uses mxu 2, but the core has 2 MXUs"), std::string::npos) << plan_error(p);
  }
  {
    auto p = test::make_program("tile");
    Stream s(p.cores[0]);
    s.weights(0, 256, 128);
    EXPECT_NE(plan_error(p).find("256x128 tile, larger than the 128x128 MXU"), std::string::npos) << plan_error(p);
  }
  {
    auto p = test::make_program("no-weights");
    Stream s(p.cores[0]);
    s.matmul(0, 8, 128, 128, {}, 1, "mm");
    EXPECT_NE(plan_error(p).find("'mm' (mxu_matmul) streams against MXU 0, which has no weight tile loaded"),
              std::string::npos)
        << plan_error(p);
  }
  {
    auto p = test::make_program("where", {{4, 0}});
    EXPECT_NE(plan_error(p).find("targets chip 4 core 0, but the slice has 4 chips of 2 cores"), std::string::npos)
        << plan_error(p);
  }
  {
    auto p = test::make_program("twice", {{1, 1}, {1, 1}});
    EXPECT_NE(plan_error(p).find("two streams for chip 1 core 1"), std::string::npos) << plan_error(p);
  }
}

// weight_buffers = 2: the third load on an MXU overwrites the first tile, so it must come after
// (depend on) the last matmul using that tile.
TEST(ProgramPlan, WeightBuffersAreCheckedStructurally) {
  auto ok = test::make_program("double-buffered");
  {
    Stream s(ok.cores[0]);
    uint32_t w0 = s.weights(0, 128, 128);
    uint32_t w1 = s.weights(0, 128, 128);
    uint32_t m0 = s.matmul(0, 64, 128, 128, {w0});
    s.matmul(0, 64, 128, 128, {w1});
    s.weights(0, 128, 128, {m0});
  }
  EXPECT_EQ(plan_error(ok), "");

  auto transitive = test::make_program("via-vpu");
  {
    Stream s(transitive.cores[0]);
    uint32_t w0 = s.weights(0, 128, 128);
    uint32_t w1 = s.weights(0, 128, 128);
    uint32_t m0 = s.matmul(0, 64, 128, 128, {w0});
    uint32_t v = s.vpu({.alu_vregs = 1}, {m0});
    s.matmul(0, 64, 128, 128, {w1});
    s.weights(0, 128, 128, {v});  // m0 -> v -> load: fine
  }
  EXPECT_EQ(plan_error(transitive), "");

  auto bad = test::make_program("triple");
  {
    Stream s(bad.cores[0]);
    uint32_t w0 = s.weights(0, 128, 128);
    s.weights(0, 128, 128);
    s.matmul(0, 64, 128, 128, {w0}, 1, "uses-w0");
    s.weights(0, 128, 128, {}, "w2");
  }
  std::string e = plan_error(bad);
  EXPECT_NE(e.find("MXU weight buffers exceeded on slice.chip0.core0.mxu0"), std::string::npos) << e;
  EXPECT_NE(e.find("'w2'"), std::string::npos) << e;
  EXPECT_NE(e.find("'uses-w0'"), std::string::npos) << e;
}

TEST(ProgramPlan, BarrierGroupsMatchTheNthBarrierOfAnIdOnEveryCore) {
  auto p = test::make_program("barriers", {{0, 0}, {1, 0}, {1, 1}});
  Stream a(p.cores[0]), b(p.cores[1]), c(p.cores[2]);
  a.barrier(1);
  a.barrier(1);
  b.barrier(1);
  c.barrier(2);
  ProgramPlan plan;
  plan.build(p, test::v3_8_like());
  ASSERT_EQ(plan.barrier_participants().size(), 3u);
  EXPECT_EQ(plan.cores()[0].barrier_group(0), plan.cores()[1].barrier_group(0));
  EXPECT_EQ(plan.barrier_participants()[plan.cores()[0].barrier_group(0)], 2u);
  EXPECT_EQ(plan.barrier_participants()[plan.cores()[0].barrier_group(1)], 1u);
  EXPECT_EQ(plan.barrier_participants()[plan.cores()[2].barrier_group(0)], 1u);
}

// SPMD replicas (same ops, MXUs and deps; transfer peers differ) share one decoded stream; a core
// whose structure differs, or whose tile does not fit, gets its own decode and its own errors.
TEST(ProgramPlan, ReplicasShareTheDecodedStream) {
  auto replica = [](isa::CoreProgram& core, uint32_t peer_chip, uint32_t k) {
    Stream s(core);
    uint32_t w = s.weights(1, k, 128);
    uint32_t m = s.matmul(1, 8, k, 128);  // implicit dep on w
    s.vpu({.alu_vregs = 4}, {m});
    s.send(1024, peer_chip, 0, 7, {w});
    s.recv(peer_chip, 0, 7);
  };
  auto p = test::make_program("spmd", {{0, 0}, {1, 0}, {2, 0}});
  replica(p.cores[0], 1, 128);
  replica(p.cores[1], 0, 128);
  {
    Stream s(p.cores[2]);  // another structure: a DMA first
    s.dma_load(64);
  }
  ProgramPlan plan;
  plan.build(p, test::v3_8_like(), {.successors = true});
  const CorePlan &a = plan.cores()[0], &b = plan.cores()[1], &c = plan.cores()[2];
  EXPECT_EQ(a.unit.data(), b.unit.data());
  EXPECT_EQ(a.succs.items.data(), b.succs.items.data());
  EXPECT_NE(a.unit.data(), c.unit.data());
  ASSERT_EQ(b.deps.size(1), 1u);
  EXPECT_EQ(b.deps.row(1)[0], 0u);
  EXPECT_EQ(b.unit[0], UnitIndex::mxu_weights(1));
  EXPECT_EQ(c.unit[0], UnitIndex::kDma);
  // Per core: the matching of transfers.
  EXPECT_EQ(a.match_slot(3), 1u);
  EXPECT_EQ(b.match_slot(3), 0u);

  auto bad = test::make_program("spmd-bad-tile", {{0, 0}, {1, 0}});
  replica(bad.cores[0], 1, 128);
  replica(bad.cores[1], 0, 256);
  const std::string e = plan_error(bad);
  EXPECT_NE(e.find("slice.chip1.core0 instruction #0 'weights' (mxu_weights) has a 256x128 tile"), std::string::npos)
      << e;
}

// A core may run another core's stream through a peer table (program.h): its k-th send or receive
// talks to the table's k-th peer.
TEST(ProgramPlan, SharedStreamsTranslateTheirPeers) {
  auto p = test::make_program("shared", {{0, 0}, {1, 0}, {2, 0}});
  {
    Stream s(p.cores[0]);  // core (0,0): send to chip 1, receive from chip 2 (a ring of three)
    s.send(1024, 1, 0, 7);
    s.recv(2, 0, 7);
  }
  p.cores[1].stream_of = 0;
  p.cores[1].peers = {{2, 0}, {0, 0}};  // chip 1 sends to chip 2, receives from chip 0
  p.cores[2].stream_of = 0;
  p.cores[2].peers = {{0, 0}, {1, 0}};
  ProgramPlan plan;
  plan.build(p, test::v3_8_like(), {.successors = true});
  const CorePlan &a = plan.cores()[0], &b = plan.cores()[1], &c = plan.cores()[2];
  EXPECT_EQ(b.prog, a.prog);
  EXPECT_EQ(b.unit.data(), a.unit.data());
  EXPECT_EQ(b.peer(0), (isa::PeerRef{2, 0}));
  EXPECT_EQ(b.peer(1), (isa::PeerRef{0, 0}));
  EXPECT_EQ(a.match_slot(0), 1u);  // core 0's send is received by chip 1 ...
  EXPECT_EQ(b.match_slot(1), 0u);  // ... whose recv names chip 0
  EXPECT_EQ(c.match_slot(0), 0u);  // chip 2 sends to chip 0
  EXPECT_EQ(plan.instructions(), 6u);

  auto short_table = p;
  std::vector<isa::PeerRef> shorter = short_table.cores[2].peers.expanded();
  shorter.pop_back();
  short_table.cores[2].peers = isa::PeerTable(shorter);
  EXPECT_NE(plan_error(short_table).find("2 sends and receives, but its peer table has 1 entries"), std::string::npos)
      << plan_error(short_table);
  auto chained = p;
  chained.cores[2].stream_of = 1;
  EXPECT_NE(plan_error(chained).find("must be another core program with its own stream"), std::string::npos);
}

}  // namespace
}  // namespace tpusim
