// Fidelity tier: the compiler's collectives (compiler/collectives.h) simulated by both engines
// against their closed-form cost (compiler/collective_cost.h), on uncongested slices: the 1-D
// bidirectional ring and dimension by dimension, all-reduce / reduce-scatter / all-gather.
//
// The closed form T = steps x alpha + max(link, NoC, HBM bytes / rate) is a bound: the bandwidth
// term is the busiest resource at full rate, and each step's latency alpha is paid once, as if it
// did not overlap streaming. What it omits, and the tolerance it gives (simulated <= 1.3 x T):
//  * the pipeline fill and drain of a phase: a piece (piece_bytes) must arrive before it is
//    reduced and forwarded, so the first and last piece of each lane's phase are exposed once:
//    ~2 pieces' stream per phase, 2-6% of T at these sizes;
//  * the HBM term counts 5 bytes per reduced byte at the core's HBM rate, but reads, writes,
//    loads and stores of a core come in bursts from up to 5 transfer channels and 4 DMA engines;
//    SystemC serves them in the order they are issued, so a burst delays the others (the
//    analytical engine serves DMAs and transfer reads on one server, writes unreserved);
//  * in-order issue: a core's transfer and DMA queues wait for their head's deps, so a lane
//    whose piece is late holds up the other lanes' next pieces (head-of-line blocking).
// Never below: a simulated time below the bandwidth term would be a modelling bug; below T it
// would mean the latency term overstates what is exposed, which is checked too (the engines
// expose every step's alpha, because a step's send waits for the previous step's reduce).
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "compiler/collective_cost.h"
#include "compiler/collectives.h"
#include "config/hw_loader.h"
#include "sim/engine/engine.h"

namespace tpusim {
namespace {

using compiler::CollectiveAlgorithm;
using compiler::CollectiveKind;

const std::string kRoot = TPUSIM_SOURCE_DIR;

isa::Program collective_program(const HwConfig& hw, CollectiveKind kind, uint64_t bytes, CollectiveAlgorithm algo) {
  const std::vector<compiler::CoreId> ring = compiler::ring_order(hw);
  const uint32_t n = uint32_t(ring.size());
  isa::Program p;
  p.name = compiler::collective_name(kind);
  p.cores.resize(n);
  std::vector<std::unique_ptr<compiler::ProgramBuilder>> own;
  std::vector<compiler::ProgramBuilder*> b;
  for (uint32_t i = 0; i < n; ++i) {
    p.cores[i].chip = ring[i].chip;
    p.cores[i].core = ring[i].core;
    own.push_back(std::make_unique<compiler::ProgramBuilder>(p.cores[i], hw.chip.core.vmem.size_bytes()));
    b.push_back(own.back().get());
  }
  compiler::CollectiveOptions opt;
  opt.algorithm = algo;
  opt.piece_bytes = 2ull << 20;  // as bench_allreduce
  const auto res = compiler::emit_collective(kind, b, ring, hw, bytes, std::vector<std::vector<uint32_t>>(n), opt);
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
        EXPECT_GE(sim, cost.bandwidth_cycles()) << what;
        EXPECT_GE(sim, cost.total_cycles()) << what;
        EXPECT_LE(sim, 1.3 * cost.total_cycles()) << what;
      }
    }
  }
}

constexpr uint64_t kBytes = 440ull << 20;  // as bench_allreduce: BERT-large's fp32 gradients, roughly

TEST(CollectivesFidelity, V3_8) { check_slice({"v3-8", false}, kBytes); }
TEST(CollectivesFidelity, V3_32Mesh) { check_slice({"v3-32", false}, kBytes); }
TEST(CollectivesFidelity, V3_32Torus) { check_slice({"v3-32", true}, kBytes); }
TEST(CollectivesFidelity, V4_32) { check_slice({"v4-32", true}, kBytes); }

}  // namespace
}  // namespace tpusim
