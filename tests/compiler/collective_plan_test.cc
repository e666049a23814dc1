// Collective plans executed symbolically (every contribution exactly once, every shard where it
// belongs), byte accounting against the closed forms, and the SPMD invariant of the emitted
// streams (identical on every core up to the peers of sends and receives).
#include <gtest/gtest.h>

#include <memory>

#include "compiler/collectives/collective_algorithms.h"
#include "compiler/collectives/collectives.h"
#include "config/hw_loader.h"

namespace tpusim::compiler {
namespace {

HwConfig load(const std::string& name) {
  return load_hw_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/" + name + ".yaml");
}

// A 3x2 mesh of one-core chips: odd line length, cores that share no chip.
HwConfig small_odd() {
  HwConfig hw = load("v3-8");
  hw.slice.topology.dims = {3, 2};
  hw.slice.topology.wraparound = {false, false};
  hw.chip.cores = 1;
  return hw;
}

struct Emitted {
  std::vector<isa::CoreProgram> cores;
  CollectiveResult result;
};

Emitted emit(CollectiveKind kind, const HwConfig& hw, uint64_t bytes, CollectiveAlgorithm algo, uint64_t piece = 1 << 20) {
  const auto ids = ring_order(hw);
  const uint32_t n = uint32_t(ids.size());
  Emitted e;
  e.cores.resize(n);
  std::vector<std::unique_ptr<ProgramBuilder>> own;
  std::vector<ProgramBuilder*> b;
  for (uint32_t i = 0; i < n; ++i) {
    e.cores[i].chip = ids[i].chip;
    e.cores[i].core = ids[i].core;
    own.push_back(std::make_unique<ProgramBuilder>(e.cores[i], hw.chip.core.vmem.size_bytes()));
    b.push_back(own.back().get());
  }
  CollectiveOptions opt;
  opt.algorithm = algo;
  opt.piece_bytes = piece;
  e.result = emit_collective(kind, b, ids, hw, bytes, std::vector<std::vector<uint32_t>>(n), opt);
  return e;
}

const CollectiveKind kKinds[] = {CollectiveKind::kAllReduce, CollectiveKind::kReduceScatter, CollectiveKind::kAllGather,
                                 CollectiveKind::kAllToAll};

struct Case {
  std::string name;
  HwConfig hw;
};
std::vector<Case> cases() {
  return {{"v3-8", load("v3-8")}, {"v3-32", load("v3-32")}, {"v3-128", load("v3-128")}, {"v4-32", load("v4-32")},
          {"3x2 one-core chips", small_odd()}};
}

TEST(CollectivePlan, EveryKindAndAlgorithmDeliversExactlyOnce) {
  for (const Case& c : cases()) {
    const auto ids = ring_order(c.hw);
    for (CollectiveKind kind : kKinds)
      for (CollectiveAlgorithm algo : {CollectiveAlgorithm::kRing, CollectiveAlgorithm::kDimensionByDimension}) {
        const CollectivePlan plan = plan_collective(kind, ids, c.hw, 1 << 20, algo);
        SCOPED_TRACE(c.name + " " + collective_name(kind) + " " + algorithm_name(plan.algorithm));
        if (kind != CollectiveKind::kAllToAll && algo == CollectiveAlgorithm::kDimensionByDimension) {
          EXPECT_EQ(plan.algorithm, CollectiveAlgorithm::kDimensionByDimension);  // every case is 2-D or 3-D
        }
        EXPECT_EQ(execute_plan(plan), "");
      }
  }
}

TEST(CollectivePlan, ABrokenPlanIsCaught) {
  const HwConfig hw = load("v3-8");
  CollectivePlan plan = plan_collective(CollectiveKind::kAllReduce, ring_order(hw), hw, 1 << 20, CollectiveAlgorithm::kRing);
  plan.steps.pop_back();  // the last all-gather step of lane 1: its chunks never arrive
  EXPECT_NE(execute_plan(plan), "");
  plan = plan_collective(CollectiveKind::kReduceScatter, ring_order(hw), hw, 1 << 20, CollectiveAlgorithm::kRing);
  plan.steps.push_back(plan.steps.front());  // a chunk reduced twice
  EXPECT_NE(execute_plan(plan), "");
}

// Bytes each core sends, per kind: reduce-scatter and all-gather (n-1)/n B, all-reduce twice that
// (Patarasuk & Yuan's bandwidth-optimal amount; dims moves the same: each phase of m members sends
// (m-1)/m of what it holds, and sum_d (D_d - D_d / m_d) telescopes to B - B/n), all-to-all (n-1)/n B.
TEST(CollectivePlan, BytesSentPerCoreMatchTheClosedForm) {
  for (const Case& c : cases()) {
    const uint32_t n = c.hw.slice.chips() * c.hw.chip.cores;
    // Divisible by every lane x chunk count (2R lanes x n chunks, and n^2 for all-to-all): no rounding.
    const uint64_t bytes = uint64_t(n) * n * 6 * 4096;
    for (CollectiveKind kind : kKinds)
      for (CollectiveAlgorithm algo : {CollectiveAlgorithm::kRing, CollectiveAlgorithm::kDimensionByDimension}) {
        const Emitted e = emit(kind, c.hw, bytes, algo);
        SCOPED_TRACE(c.name + " " + collective_name(kind) + " " + algorithm_name(e.result.algorithm));
        const uint64_t expect = (kind == CollectiveKind::kAllReduce ? 2 : 1) * (n - 1) * (bytes / n);
        EXPECT_EQ(e.result.bytes_sent_per_core, expect);
        for (const auto& core : e.cores) {
          uint64_t sent = 0, received = 0;
          for (const auto& in : core.instrs) {
            if (in.op == isa::Op::kSend) sent += in.bytes;
            if (in.op == isa::Op::kRecv) received += in.bytes;
          }
          EXPECT_EQ(sent, expect);
          EXPECT_EQ(received, expect);
        }
      }
  }
}

// Every core's stream equals core 0's except for the peers of its transfers.
TEST(CollectivePlan, EveryCoreEmitsTheSameStreamUpToItsPeers) {
  for (const Case& c : cases())
    for (CollectiveKind kind : kKinds)
      for (CollectiveAlgorithm algo : {CollectiveAlgorithm::kRing, CollectiveAlgorithm::kDimensionByDimension}) {
        const Emitted e = emit(kind, c.hw, 3 << 20, algo, 256 << 10);
        SCOPED_TRACE(c.name + " " + collective_name(kind) + " " + algorithm_name(e.result.algorithm));
        const auto& ref = e.cores[0].instrs;
        for (size_t i = 1; i < e.cores.size(); ++i) {
          const auto& s = e.cores[i].instrs;
          ASSERT_EQ(s.size(), ref.size()) << "core " << i;
          for (size_t k = 0; k < s.size(); ++k) {
            isa::Instr a = s[k], r = ref[k];
            a.peer_chip = r.peer_chip = 0;
            a.peer_core = r.peer_core = 0;
            ASSERT_TRUE(a.op == r.op && a.bytes == r.bytes && a.tag == r.tag && a.deps == r.deps &&
                        a.label.str() == r.label.str() && a.vpu == r.vpu)
                << "core " << i << " instruction " << k << " " << r.label.str() << " deps " << a.deps.size() << " vs "
                << r.deps.size() << " first " << (a.deps.size() ? a.deps[0] : 0) << " vs " << (r.deps.size() ? r.deps[0] : 0);
          }
        }
      }
}

TEST(CollectivePlan, DimsUsesFewerStepsOnLargeSlices) {
  const HwConfig hw = load("v3-128");
  const auto ids = ring_order(hw);
  const auto ring = plan_collective(CollectiveKind::kAllReduce, ids, hw, 64 << 20, CollectiveAlgorithm::kRing);
  const auto dims = plan_collective(CollectiveKind::kAllReduce, ids, hw, 64 << 20, CollectiveAlgorithm::kDimensionByDimension);
  // Ring: 2 phases x 127 steps x 2 lanes; dims: 2 x (1 + 7 + 7) steps x 4 lanes.
  EXPECT_EQ(ring.steps.size(), 2u * 127 * 2);
  EXPECT_EQ(dims.steps.size(), 2u * 15 * 4);
}

}  // namespace
// The per-tensor choice (collectives.cc, docs/collectives.md): the ring where bandwidth dominates
// (large tensors on small slices: the measured lane contention makes dims slower there), dims where
// the ring's 2(n-1) latency steps dominate (small tensors, many cores), the ring off the whole slice
// and for all-to-all.
TEST(CollectiveChoice, RingForBandwidthDimsForLatency) {
  const auto v3_8 = load("v3-8"), v3_128 = load("v3-128"), pod = load("v3-2048");
  EXPECT_EQ(choose_algorithm(CollectiveKind::kAllReduce, 440ull << 20, v3_8, 8), CollectiveAlgorithm::kRing);
  EXPECT_EQ(choose_algorithm(CollectiveKind::kAllReduce, 440ull << 20, v3_128, 128), CollectiveAlgorithm::kRing);
  EXPECT_EQ(choose_algorithm(CollectiveKind::kAllReduce, 8ull << 20, v3_128, 128),
            CollectiveAlgorithm::kDimensionByDimension);
  EXPECT_EQ(choose_algorithm(CollectiveKind::kAllReduce, 1300ull << 20, pod, 2048),
            CollectiveAlgorithm::kDimensionByDimension);
  EXPECT_EQ(choose_algorithm(CollectiveKind::kAllReduce, 8ull << 20, v3_128, 64), CollectiveAlgorithm::kRing);
  EXPECT_EQ(choose_algorithm(CollectiveKind::kAllToAll, 8ull << 20, v3_128, 128), CollectiveAlgorithm::kRing);
}

}  // namespace tpusim::compiler
