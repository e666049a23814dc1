// Symmetric replicas (sim/engine/replica_classes.h, sim/README.md "Symmetric replicas"): the
// analytical engine simulating one core per class gives every figure it gives simulating every
// core, on compiled data-parallel and FSDP steps and on collectives, on meshes and tori; the
// classes it finds; and its results do not depend on the order of the cores.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "compiler/collectives/collectives.h"
#include "compiler/step/data_parallel.h"
#include "compiler/step/fsdp.h"
#include "compiler/step/fsdp_graphs.h"
#include "config/hw_loader.h"
#include "models/bert.h"
#include "models/families.h"
#include "sim/analysis/program_plan.h"
#include "sim/engine/engine.h"
#include "sim/engine/replica_classes.h"
#include "tests/compiler/dp_steps.h"

namespace tpusim::compiler {
namespace {

HwConfig hw_config(const std::string& name) {
  return load_hw_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/" + name + ".yaml");
}
// `hw` with every dimension closed into a ring.
HwConfig torus(HwConfig hw) {
  for (size_t d = 0; d < hw.slice.topology.wraparound.size(); ++d) hw.slice.topology.wraparound[d] = true;
  return hw;
}
// A 4x4 v6e slice with wraparound (what a v6e-16 of a pod's torus would be).
HwConfig v6e_16_torus() {
  HwConfig hw = hw_config("v6e-256");
  hw.slice.topology.dims = {4, 4};
  hw.slice.hosts = 16 / hw.slice.chips_per_host;
  return torus(hw);
}

isa::Program dp_program(const HwConfig& hw) {
  test::Step st = test::make_step("bert-tiny", 2, 16);
  st.dp.allreduce_bucket_bytes = 256 << 10;  // several combined all-reduces, in the background
  return compile_spmd_step(data_parallel_step(st.dp, hw), hw, "dp").program;
}

isa::Program fsdp_program(const HwConfig& hw) {
  models::BertGraphOptions o;
  o.batch = 2;
  o.seq = 16;
  const uint32_t n = hw.slice.chips() * hw.chip.cores;
  auto f = build_fsdp_graphs(models::build_bert(models::find_preset("bert-tiny"), o), n, true, models::OptimizerConfig{}, true);
  return compile_spmd_step(fsdp_step(*f, hw), hw, "fsdp").program;
}

isa::Program collective(const HwConfig& hw, CollectiveKind kind, CollectiveAlgorithm algo) {
  CollectiveOptions opt;
  opt.algorithm = algo;
  opt.piece_bytes = 256 << 10;
  return collective_program(kind, hw, 8ull << 20, opt, nullptr);
}

size_t classes(const isa::Program& p, const HwConfig& hw) {
  ProgramPlan plan;
  plan.build(p, hw);
  return find_replica_classes(plan, hw).reps.size();
}

// Every figure of a run, the op profile and collective statistics included.
void expect_same(const RunResult& a, const RunResult& b, const std::string& what) {
  EXPECT_EQ(a.device_cycles, b.device_cycles) << what;
  ASSERT_EQ(a.cores.size(), b.cores.size()) << what;
  for (size_t c = 0; c < a.cores.size(); ++c) {
    EXPECT_EQ(a.cores[c].chip, b.cores[c].chip) << what;
    EXPECT_EQ(a.cores[c].core, b.cores[c].core) << what;
    EXPECT_EQ(a.cores[c].end_cycle, b.cores[c].end_cycle) << what << " core " << c;
  }
  EXPECT_EQ(a.stats.dump(), b.stats.dump()) << what;
  EXPECT_TRUE(a.collectives == b.collectives) << what;
  EXPECT_EQ(a.op_profile.chip, b.op_profile.chip) << what;
  EXPECT_EQ(a.op_profile.core, b.op_profile.core) << what;
  EXPECT_EQ(a.op_profile.cycles, b.op_profile.cycles) << what;
  ASSERT_EQ(a.op_profile.entries.size(), b.op_profile.entries.size()) << what;
  for (size_t k = 0; k < a.op_profile.entries.size(); ++k) {
    const OpProfileEntry &x = a.op_profile.entries[k], &y = b.op_profile.entries[k];
    EXPECT_EQ(std::tie(x.name, x.count, x.cycles, x.hbm_bytes, x.ici_bytes), std::tie(y.name, y.count, y.cycles, y.hbm_bytes, y.ici_bytes))
        << what << " entry " << k;
  }
}

// Runs `p` with and without the reduction; returns the classes simulated.
size_t check_reduction(const isa::Program& p, const HwConfig& hw, const std::string& what) {
  auto reduced = make_engine("analytical", hw), every = make_engine("analytical", hw);
  every->set_replicas(false);
  const RunResult a = reduced->run(p, nullptr), b = every->run(p, nullptr);
  expect_same(a, b, what);
  const size_t n = classes(p, hw);
  std::printf("[ classes  ] %-40s %3zu of %3zu cores, %llu cycles\n", what.c_str(), n, p.cores.size(),
              (unsigned long long)a.device_cycles);
  return n;
}

TEST(SymmetricReplicas, DataParallelStepsAreTheSameWithAndWithout) {
  check_reduction(dp_program(hw_config("v3-32")), hw_config("v3-32"), "dp v3-32 (mesh)");
  EXPECT_LT(check_reduction(dp_program(torus(hw_config("v3-32"))), torus(hw_config("v3-32")), "dp v3-32 torus"), 32u);
  check_reduction(dp_program(hw_config("v4-32")), hw_config("v4-32"), "dp v4-32");
  EXPECT_LT(check_reduction(dp_program(v6e_16_torus()), v6e_16_torus(), "dp v6e-16 torus"), 16u);
}

TEST(SymmetricReplicas, FsdpStepsAreTheSameWithAndWithout) {
  check_reduction(fsdp_program(hw_config("v3-32")), hw_config("v3-32"), "fsdp v3-32 (mesh)");
  EXPECT_LT(check_reduction(fsdp_program(torus(hw_config("v3-32"))), torus(hw_config("v3-32")), "fsdp v3-32 torus"), 32u);
  check_reduction(fsdp_program(hw_config("v4-32")), hw_config("v4-32"), "fsdp v4-32");
  EXPECT_LT(check_reduction(fsdp_program(v6e_16_torus()), v6e_16_torus(), "fsdp v6e-16 torus"), 16u);
}

TEST(SymmetricReplicas, CollectivesAreTheSameWithAndWithout) {
  for (const HwConfig& hw : {hw_config("v3-32"), torus(hw_config("v3-32")), hw_config("v4-32"), torus(hw_config("v4-32"))})
    for (CollectiveKind kind : {CollectiveKind::kAllReduce, CollectiveKind::kReduceScatter, CollectiveKind::kAllGather})
      for (CollectiveAlgorithm algo : {CollectiveAlgorithm::kRing, CollectiveAlgorithm::kDimensionByDimension})
        check_reduction(collective(hw, kind, algo), hw,
                        std::string(collective_name(kind)) + " " + algorithm_name(algo) + " " +
                            (hw.slice.topology.wraparound[0] ? "torus " : "mesh ") + hw.chip.generation);
}

// On a torus every core of an SPMD step does the same: one class. The ring is two on v3: it
// passes each chip's two cores in turn, so one core of a chip sends over the NoC, the other over ICI.
TEST(SymmetricReplicas, OnATorusEveryCoreIsAlike) {
  const HwConfig hw = torus(hw_config("v3-32"));
  EXPECT_EQ(classes(collective(hw, CollectiveKind::kAllReduce, CollectiveAlgorithm::kDimensionByDimension), hw), 1u);
  EXPECT_EQ(classes(collective(hw, CollectiveKind::kAllReduce, CollectiveAlgorithm::kRing), hw), 2u);
  EXPECT_EQ(classes(dp_program(v6e_16_torus()), v6e_16_torus()), 1u);
  EXPECT_EQ(classes(fsdp_program(hw), hw), 1u);
}

// A core whose stream differs is never merged with the others (nor are the cores it talks to
// merged with cores that do not).
TEST(SymmetricReplicas, ADifferentStreamIsItsOwnClass) {
  const HwConfig hw = torus(hw_config("v3-32"));
  isa::Program p = collective(hw, CollectiveKind::kAllReduce, CollectiveAlgorithm::kDimensionByDimension);
  ASSERT_EQ(classes(p, hw), 1u);
  ASSERT_NE(p.cores[5].stream_of, -1);
  // Core 5 runs a copy of the stream with one more DMA at the end.
  p.cores[5] = unshared(p).cores[5];
  isa::Instr extra;
  extra.op = isa::Op::kDmaLoad;
  extra.bytes = 4096;
  p.cores[5].instrs.push_back(extra);
  EXPECT_GT(classes(p, hw), 1u);
  check_reduction(p, hw, "all-reduce dims, one core differs");
}

// The same program with its cores listed in reverse: every core's figures are the same (the
// engine's rounds deliver at their end, in an order that names no core).
TEST(SymmetricReplicas, TheOrderOfTheCoresDoesNotMatter) {
  const HwConfig hw = hw_config("v3-32");
  for (const isa::Program& p : {dp_program(hw), fsdp_program(hw)}) {
    isa::Program q = unshared(p);
    std::reverse(q.cores.begin(), q.cores.end());
    auto e = make_engine("analytical", hw);
    e->set_replicas(false);
    const RunResult a = e->run(p, nullptr), b = e->run(q, nullptr);
    EXPECT_EQ(a.device_cycles, b.device_cycles);
    auto ends = [](const RunResult& r) {
      std::vector<std::tuple<uint32_t, uint32_t, uint64_t>> v;
      for (const CoreRunResult& c : r.cores) v.push_back({c.chip, c.core, c.end_cycle});
      std::sort(v.begin(), v.end());
      return v;
    };
    EXPECT_EQ(ends(a), ends(b));
    EXPECT_EQ(a.stats.dump(), b.stats.dump());
  }
}

}  // namespace
}  // namespace tpusim::compiler
