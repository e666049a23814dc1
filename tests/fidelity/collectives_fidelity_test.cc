// Fidelity tier: the compiler's collectives (compiler/collectives/collectives.h) simulated by both engines
// against their closed-form cost (compiler/collectives/collective_cost.h), on uncongested slices: the 1-D
// bidirectional ring and dimension by dimension, all-reduce / reduce-scatter / all-gather; and the
// all-to-all.
//
// The closed form T = steps x alpha + max(link, NoC, HBM bytes / rate): its bandwidth term is
// the busiest resource at full rate, a true lower bound (checked: never below it); the latency
// term pays each step's alpha once, which the all-gathers partly hide behind the streaming of
// later pieces (measured down to 0.99 x T), so T itself is not checked as a floor.
// Tolerance above T: what T omits is (a) the pipeline fill and drain of each lane's phase (a
// piece must arrive before it is reduced and forwarded: ~2 pieces' stream per phase, a few % at
// 440 MiB), (b) burstiness: a core's HBM serves up to `xfer.channels` transfers and 4 DMA
// engines in the order they are issued, and (c) head-of-line blocking of the in-order transfer
// and DMA queues. For the ring on v3 that is <= 1.35 x T (measured 0.99-1.32).
// Known gaps, checked only against a loose envelope so that a regression still shows:
//  * dims: SystemC shows the link, NoC and HBM contention of its 4 concurrent lanes per core and
//    in-order head-of-line blocking between them (1.4-3.2 x T; analytical 1.02-2.6 x T);
//  * v4 (HBM shared by the chip's two cores): the analytical engine serves each core's HBM at the
//    chip's full rate but serializes its transfers per first stage; ring up to 1.66 x T.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "compiler/collectives/collective_cost.h"
#include "compiler/collectives/collectives.h"
#include "config/hw_loader.h"
#include "sim/engine/engine.h"

namespace tpusim {
namespace {

using compiler::CollectiveAlgorithm;
using compiler::CollectiveKind;

const std::string kRoot = TPUSIM_SOURCE_DIR;

isa::Program collective_program(const HwConfig& hw, CollectiveKind kind, uint64_t bytes, CollectiveAlgorithm algo) {
  compiler::CollectiveOptions opt;
  opt.algorithm = algo;
  opt.piece_bytes = 2ull << 20;  // as bench_allreduce
  compiler::CollectiveResult res;
  isa::Program p = compiler::collective_program(kind, hw, bytes, opt, &res);
  EXPECT_EQ(res.algorithm, algo);
  return p;
}

struct Slice {
  const char* file;
  bool torus;  // wraparound on every dimension (override)
};

void check_slice(const Slice& slice, uint64_t bytes) {
  HwConfig hw = load_hw_config(kRoot + "/configs/hw/" + slice.file + ".yaml");
  for (size_t d = 0; d < hw.slice.topology.wraparound.size(); ++d) hw.slice.topology.wraparound[d] = slice.torus;
  const uint64_t launch = hw.chip.core.sequencer.launch_cycles;
  std::unique_ptr<Engine> engines[] = {make_engine("systemc", hw), make_engine("analytical", hw)};
  for (CollectiveKind kind : {CollectiveKind::kAllReduce, CollectiveKind::kReduceScatter, CollectiveKind::kAllGather}) {
    for (CollectiveAlgorithm algo : {CollectiveAlgorithm::kRing, CollectiveAlgorithm::kDimensionByDimension}) {
      const isa::Program p = collective_program(hw, kind, bytes, algo);
      const auto cost = compiler::collective_cost(kind, algo, bytes, hw, uint32_t(p.cores.size()));
      for (auto& e : engines) {
        // The collective's own time: the program minus its launch (sequencer.launch_cycles).
        const double sim = double(e->run(p, nullptr).device_cycles - launch);
        const std::string what = std::string(slice.file) + (slice.torus ? " torus " : " mesh ") +
                                 compiler::collective_name(kind) + " " + compiler::algorithm_name(algo) + " " +
                                 std::string(e->name());
        std::printf("%-48s sim %10.0f  bound %10.0f (bw %10.0f)  ratio %.3f\n", what.c_str(), sim, cost.total_cycles(),
                    cost.bandwidth_cycles(), sim / cost.total_cycles());
        const bool v4 = hw.chip.generation == "v4";
        // Ring on v2/v3: 2(N-1) dependent steps, each exposing the HBM latency (300 ns) of its
        // load-add-store, which the closed form's bandwidth term does not hold.
        const double tolerance = algo == CollectiveAlgorithm::kRing ? (v4 ? 1.7 : 1.4) : 3.5;
        EXPECT_GE(sim, cost.bandwidth_cycles()) << what;
        EXPECT_LE(sim, tolerance * cost.total_cycles()) << what;
      }
    }
  }
}

constexpr uint64_t kBytes = 440ull << 20;  // as bench_allreduce: BERT-large's fp32 gradients, roughly

TEST(CollectivesFidelity, V3_8) { check_slice({"v3-8", false}, kBytes); }
TEST(CollectivesFidelity, V3_32Mesh) { check_slice({"v3-32", false}, kBytes); }
TEST(CollectivesFidelity, V3_32Torus) { check_slice({"v3-32", true}, kBytes); }
TEST(CollectivesFidelity, V4_32) { check_slice({"v4-32", true}, kBytes); }

// All-to-all (pairwise exchange, n-1 steps of B/n per core): simulated on both engines against its
// closed form, whose link term is not a bound (a core's messages leave over several ports); its
// HBM term is (every byte sent is read, every byte received written). Measured at 64 MiB:
// v3-8 SystemC 1.65 x T, analytical 0.71 x T; v3-32 mesh SystemC 3.44 x T, analytical 0.80 x T.
// The gap is multi-hop link contention (every core's messages cross the mesh's middle links),
// which SystemC models and neither T nor the analytical engine does; the envelope only catches
// regressions.
void check_all_to_all(const Slice& slice, uint64_t bytes, double envelope) {
  HwConfig hw = load_hw_config(kRoot + "/configs/hw/" + slice.file + ".yaml");
  for (size_t d = 0; d < hw.slice.topology.wraparound.size(); ++d) hw.slice.topology.wraparound[d] = slice.torus;
  const uint64_t launch = hw.chip.core.sequencer.launch_cycles;
  const isa::Program p = collective_program(hw, CollectiveKind::kAllToAll, bytes, CollectiveAlgorithm::kRing);
  const auto cost = compiler::collective_cost(CollectiveKind::kAllToAll, CollectiveAlgorithm::kRing, bytes, hw,
                                              uint32_t(p.cores.size()));
  for (const char* engine : {"systemc", "analytical"}) {
    const RunResult r = make_engine(engine, hw)->run(p, nullptr);
    ASSERT_EQ(r.cores.size(), p.cores.size()) << engine;
    const double sim = double(r.device_cycles - launch);
    std::printf("%-10s all-to-all %-10s sim %10.0f  cost %10.0f (hbm %10.0f)  ratio %.3f\n", slice.file, engine, sim,
                cost.total_cycles(), cost.hbm_cycles, sim / cost.total_cycles());
    EXPECT_GE(sim, cost.hbm_cycles) << slice.file << " " << engine;
    EXPECT_LE(sim, envelope * cost.total_cycles()) << slice.file << " " << engine;
  }
}

TEST(CollectivesFidelity, AllToAllV3_8) { check_all_to_all({"v3-8", false}, 64ull << 20, 4.0); }
TEST(CollectivesFidelity, AllToAllV3_32Mesh) { check_all_to_all({"v3-32", false}, 64ull << 20, 4.0); }

// The engines' collective statistics (sim/analysis/collective_stats.h) of a ring all-reduce over a
// v3-8's 8 cores: the marked instructions and the bytes sent are the compiler's (exactly, on both);
// a program that is nothing but the collective has all of it exposed, and its busy time is the
// program's time after the launch (to the cycle), so the engines agree on it exactly as on the
// device time: the ring's envelope above (measured at 64 MiB: SystemC 1,006,322 cycles, analytical
// 1,118,114, the analytical engine 11% slower; both within 1.4 x the closed form).
TEST(CollectivesFidelity, StatisticsAgreeOnAnAllReduce) {
  const HwConfig hw = load_hw_config(kRoot + "/configs/hw/v3-8.yaml");
  const uint64_t launch = hw.chip.core.sequencer.launch_cycles;
  compiler::CollectiveOptions opt;
  opt.algorithm = CollectiveAlgorithm::kRing;
  compiler::CollectiveResult res;
  const isa::Program p = compiler::collective_program(CollectiveKind::kAllReduce, hw, 64ull << 20, opt, &res);
  uint64_t marked = 0;
  for (const isa::Instr& i : p.cores[0].instrs) marked += i.collective == isa::Collective::kAllReduce;
  ASSERT_GT(marked, 0u);
  double busy[2] = {0, 0};
  int k = 0;
  for (const char* engine : {"systemc", "analytical"}) {
    const RunResult r = make_engine(engine, hw)->run(p, nullptr);
    const CollectiveKindStats& ar = r.collectives[isa::Collective::kAllReduce];
    EXPECT_EQ(ar.instructions, marked) << engine;
    EXPECT_EQ(ar.bytes, res.bytes_sent_per_core) << engine;
    EXPECT_EQ(ar.exposed_cycles, ar.busy_cycles) << engine;  // no work of the core's own
    EXPECT_LE(ar.busy_cycles, r.device_cycles - launch) << engine;
    EXPECT_GE(ar.busy_cycles, r.device_cycles - launch - 1) << engine;  // SystemC: ps rounded to cycles
    EXPECT_EQ(r.collectives[isa::Collective::kAllGather].instructions, 0u) << engine;
    std::printf("all-reduce statistics %-10s busy %10llu exposed %10llu cycles, %llu instructions, %llu bytes\n", engine,
                (unsigned long long)ar.busy_cycles, (unsigned long long)ar.exposed_cycles,
                (unsigned long long)ar.instructions, (unsigned long long)ar.bytes);
    busy[k++] = double(ar.busy_cycles);
    const auto cost = compiler::collective_cost(CollectiveKind::kAllReduce, CollectiveAlgorithm::kRing, 64ull << 20, hw,
                                                uint32_t(p.cores.size()));
    EXPECT_LE(double(ar.busy_cycles), 1.4 * cost.total_cycles()) << engine;
    EXPECT_GE(double(ar.busy_cycles), cost.bandwidth_cycles()) << engine;
  }
  EXPECT_NEAR(busy[1] / busy[0], 1.0, 0.15);
}

}  // namespace
}  // namespace tpusim
