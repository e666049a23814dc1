// compile_spmd_step (compiler/step/spmd_step.h): one graph on several cores. Every core gets the
// program (sharing core 0's stream), the engines run them all at once, and cores that share a chip
// slow each other down only through what they share (HBM on a megacore chip), never speed up.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "compiler/compile.h"
#include "compiler/lower/lowering.h"
#include "compiler/plan/fusion.h"
#include "compiler/step/spmd_step.h"
#include "config/hw_loader.h"
#include "models/kernels.h"
#include "sim/engine/engine.h"

namespace tpusim::compiler {
namespace {

HwConfig hw_of(const std::string& f) { return load_hw_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/" + f); }

models::Graph matmul_graph(uint64_t n) {
  return models::build_kernel({"matmul", {{"m", n}, {"k", n}, {"n", n}}, models::DType::kBF16,
                               models::DotPrecision::kDefault});
}

TEST(GraphSpmd, EveryCoreRunsTheProgram) {
  const HwConfig hw = hw_of("v3-8.yaml");
  const std::vector<CoreId> cores = ring_order(hw);
  ASSERT_EQ(cores.size(), 8u);
  const models::Graph g = matmul_graph(1024);
  const CompiledStep sp = compile_spmd_graph(g, hw, "mm", cores);
  ASSERT_EQ(sp.program.cores.size(), 8u);
  for (size_t k = 0; k < 8; ++k) EXPECT_EQ(sp.program.stream(k).instrs.size(), sp.program.stream(0).instrs.size());
  EXPECT_GT(sp.kernels, 0u);
  const isa::Program one = compile_graph(g, hw, "mm", 0, 0);
  EXPECT_EQ(sp.program.info.flops, one.info.flops);
  for (const char* engine : {"analytical", "systemc"}) {
    const uint64_t alone = make_engine(engine, hw)->run(one, nullptr).device_cycles;
    const uint64_t all = make_engine(engine, hw)->run(sp.program, nullptr).device_cycles;
    // v3's two cores per chip have HBM of their own: eight independent copies take as long as one
    // (the standalone kernel keeps its inputs where they were placed; the SPMD program reads them
    // from HBM, hence the tolerance).
    EXPECT_GE(all, alone * 0.98) << engine;
    EXPECT_LE(all, alone * 1.25) << engine;
  }
}

// ---- collectives (models::OpKind::kCollective, compiler/collectives/graph_collectives.h) ----

using models::CollectiveAttrs;
using models::CollectiveOp;

CollectiveAttrs attrs(CollectiveOp op, int64_t replicas, std::vector<std::vector<int64_t>> groups = {}, int dim = -1) {
  CollectiveAttrs a;
  a.op = op;
  a.replicas = replicas;
  a.groups = std::move(groups);
  a.dim = dim;
  return a;
}

// x [rows, 128] f32 -> the collective -> output; returns the collective's node id.
int collective_graph(models::Graph& g, int64_t rows, CollectiveAttrs a) {
  const int x = g.parameter("x", {rows, 128}, models::DType::kF32);
  const int c = g.collective(x, std::move(a));
  g.mark_output(c);
  return c;
}

uint64_t cycles(const std::string& engine, const HwConfig& hw, const isa::Program& p, RunResult* out = nullptr) {
  RunResult r = make_engine(engine, hw)->run(p, nullptr);
  if (out) *out = r;
  return r.device_cycles;
}

TEST(GraphCollective, ShapeRules) {
  models::Graph g;
  const int x = g.parameter("x", {8, 6, 4}, models::DType::kBF16);
  EXPECT_EQ(g.node(g.collective(x, attrs(CollectiveOp::kAllReduce, 4))).shape, (models::Dims{8, 6, 4}));
  // all-gather multiplies the dimension by the group size, reduce-scatter divides it.
  EXPECT_EQ(g.node(g.collective(x, attrs(CollectiveOp::kAllGather, 4, {}, 1))).shape, (models::Dims{8, 24, 4}));
  EXPECT_EQ(g.node(g.collective(x, attrs(CollectiveOp::kAllGather, 4, {{0, 1}, {2, 3}}, 2))).shape, (models::Dims{8, 6, 8}));
  EXPECT_EQ(g.node(g.collective(x, attrs(CollectiveOp::kReduceScatter, 4, {}, 0))).shape, (models::Dims{2, 6, 4}));
  EXPECT_EQ(g.node(g.collective(x, attrs(CollectiveOp::kReduceScatter, 4, {{0, 2}, {1, 3}}, 1))).shape, (models::Dims{8, 3, 4}));
  EXPECT_EQ(g.node(g.collective(x, attrs(CollectiveOp::kAllToAll, 2, {}, 0))).shape, (models::Dims{8, 6, 4}));
  EXPECT_EQ(g.node(g.collective(x, attrs(CollectiveOp::kAllReduce, 4))).dtype, models::DType::kBF16);
  // Not divisible, dimension out of range, groups that are not a partition of the replicas.
  EXPECT_THROW(g.collective(x, attrs(CollectiveOp::kReduceScatter, 4, {}, 1)), std::invalid_argument);  // 6 % 4
  EXPECT_THROW(g.collective(x, attrs(CollectiveOp::kAllToAll, 3, {}, 2)), std::invalid_argument);       // 4 % 3
  EXPECT_THROW(g.collective(x, attrs(CollectiveOp::kAllGather, 4, {}, 3)), std::invalid_argument);
  EXPECT_THROW(g.collective(x, attrs(CollectiveOp::kAllGather, 4, {}, -1)), std::invalid_argument);
  EXPECT_THROW(g.collective(x, attrs(CollectiveOp::kAllReduce, 4, {{0, 1}, {1, 2}})), std::invalid_argument);
  EXPECT_THROW(g.collective(x, attrs(CollectiveOp::kAllReduce, 4, {{0, 1}})), std::invalid_argument);
  EXPECT_THROW(g.collective(x, attrs(CollectiveOp::kAllReduce, 4, {{0, 1, 2}, {3}})), std::invalid_argument);
  EXPECT_THROW(g.collective(x, attrs(CollectiveOp::kAllReduce, 4, {{0, 4}, {1, 2}})), std::invalid_argument);
  EXPECT_THROW(g.collective(x, attrs(CollectiveOp::kAllReduce, 0)), std::invalid_argument);
  // collective-permute: pairs within the replicas, no replica the source or the target twice.
  CollectiveAttrs p = attrs(CollectiveOp::kCollectivePermute, 4);
  p.pairs = {{0, 1}, {1, 0}, {2, 3}};
  EXPECT_EQ(g.node(g.collective(x, p)).shape, (models::Dims{8, 6, 4}));
  p.pairs = {{0, 1}, {0, 2}};
  EXPECT_THROW(g.collective(x, p), std::invalid_argument);
  p.pairs = {{0, 1}, {2, 1}};
  EXPECT_THROW(g.collective(x, p), std::invalid_argument);
  p.pairs = {{0, 4}};
  EXPECT_THROW(g.collective(x, p), std::invalid_argument);
  CollectiveAttrs ar = attrs(CollectiveOp::kAllReduce, 4);
  ar.pairs = {{0, 1}};
  EXPECT_THROW(g.collective(x, ar), std::invalid_argument);
}

// A collective is a kernel of its own: nothing fuses into it, it fuses into nothing.
TEST(GraphCollective, FusionBoundary) {
  models::Graph g;
  const int x = g.parameter("x", {64, 128}, models::DType::kF32);
  const int e = g.ew(models::EwOp::kExp, x);
  const int c = g.collective(e, attrs(CollectiveOp::kAllReduce, 8));
  const int r = g.reduce(c, 1, models::ReduceOp::kSum);
  g.mark_output(g.ew(models::EwOp::kMul, c, c));
  g.mark_output(r);
  const FusionPlan plan = plan_fusions(g);
  int collectives = 0;
  for (const Fusion& f : plan.fusions) {
    if (f.kind != FusionKind::kCollective) {
      EXPECT_EQ(std::count(f.nodes.begin(), f.nodes.end(), c), 0) << f.name;
      continue;
    }
    ++collectives;
    EXPECT_EQ(f.nodes, std::vector<int>{c});
    EXPECT_EQ(f.inputs, std::vector<int>{e});
    EXPECT_TRUE(f.merged_reduces.empty());
  }
  EXPECT_EQ(collectives, 1);
  EXPECT_TRUE(plan.materialized[size_t(e)]);
  EXPECT_TRUE(plan.materialized[size_t(c)]);
}

// On one core (compile_graph) a collective is a marked kernel of one zero-work instruction.
TEST(GraphCollective, OneCoreIsAMarker) {
  const HwConfig hw = hw_of("v3-8.yaml");
  for (int64_t replicas : {1, 8}) {
    models::Graph g;
    collective_graph(g, 1024, attrs(CollectiveOp::kAllReduce, replicas));
    const isa::Program p = compile_graph(g, hw, "ar", 0, 0);
    ASSERT_EQ(p.cores[0].kernels.size(), 1u);
    EXPECT_EQ(p.cores[0].kernels[0].collective, isa::Collective::kAllReduce);
    EXPECT_EQ(p.cores[0].instrs.size(), 1u);
    // The program's launch and one zero-work instruction.
    EXPECT_LT(cycles("analytical", hw, p), hw.chip.core.sequencer.launch_cycles + 100u);
  }
}

// An all-reduce of the graph over the 8 cores of a v3-8 takes the time of the same collective
// emitted alone (collective_program: what the data-parallel step emits for a gradient bucket of
// these bytes): the graph adds only zero-work markers around it.
TEST(GraphCollective, AllReduceAsTheDataParallelOne) {
  const HwConfig hw = hw_of("v3-8.yaml");
  const std::vector<CoreId> cores = ring_order(hw);
  models::Graph g;
  const int c = collective_graph(g, 8192, attrs(CollectiveOp::kAllReduce, 8));  // 4 MiB
  const CompiledStep sp = compile_spmd_graph(g, hw, "ar", cores);
  ASSERT_EQ(sp.collectives.size(), 1u);
  EXPECT_EQ(sp.collectives[0].bytes, stored_bytes(g, c));
  EXPECT_EQ(sp.collectives[0].bytes, 4u << 20);
  CollectiveResult ref_result;
  const isa::Program ref = collective_program(CollectiveKind::kAllReduce, hw, 4u << 20, {}, &ref_result);
  EXPECT_EQ(sp.collectives[0].algorithm, ref_result.algorithm);
  for (const char* engine : {"analytical", "systemc"}) {
    RunResult rr;
    const double mine = double(cycles(engine, hw, sp.program, &rr)), theirs = double(cycles(engine, hw, ref));
    EXPECT_NEAR(mine / theirs, 1.0, 0.01) << engine << ": " << mine << " vs " << theirs;
    std::printf("[ figures  ] %s: graph all-reduce of 4 MiB on v3-8 %.0f cycles, alone %.0f\n", engine, mine, theirs);
    EXPECT_GT(rr.collectives[isa::Collective::kAllReduce].bytes, 0u) << engine;
    EXPECT_GT(rr.collectives[isa::Collective::kAllReduce].busy_s, 0.9 * rr.device_time_s) << engine;
  }
}

// Replica groups: 4 groups of 2 run at once and take less time than one group of 8 (a ring
// all-reduce moves 2(n-1)/n of the tensor per core over n-1 steps each way); the pairs here are the
// two cores of a chip, on its on-chip network.
TEST(GraphCollective, SmallerGroupsAreFaster) {
  const HwConfig hw = hw_of("v3-8.yaml");
  const std::vector<CoreId> cores = ring_order(hw);
  const auto time = [&](std::vector<std::vector<int64_t>> groups, const char* engine) {
    models::Graph g;
    collective_graph(g, 8192, attrs(CollectiveOp::kAllReduce, 8, std::move(groups)));
    const CompiledStep sp = compile_spmd_graph(g, hw, "ar", cores);
    EXPECT_EQ(sp.program.cores.size(), 8u);
    return cycles(engine, hw, sp.program);
  };
  for (const char* engine : {"analytical", "systemc"}) {
    const uint64_t all = time({}, engine), pairs = time({{0, 1}, {2, 3}, {4, 5}, {6, 7}}, engine),
                   fours = time({{0, 1, 2, 3}, {4, 5, 6, 7}}, engine);
    std::printf("[ figures  ] %s: 4 MiB all-reduce, groups of 8 / 4 / 2: %llu / %llu / %llu cycles\n", engine,
                (unsigned long long)all, (unsigned long long)fours, (unsigned long long)pairs);
    EXPECT_LT(pairs, fours) << engine;
    EXPECT_LT(fours, all) << engine;
  }
}

// The bytes each core sends: a ring all-gather or reduce-scatter over n cores sends (n-1)/n of the
// full tensor (the all-gather's output, the reduce-scatter's input) per core.
TEST(GraphCollective, AllGatherAndReduceScatterBytes) {
  const HwConfig hw = hw_of("v3-8.yaml");
  const std::vector<CoreId> cores = ring_order(hw);
  for (CollectiveOp op : {CollectiveOp::kAllGather, CollectiveOp::kReduceScatter}) {
    models::Graph g;
    const int c = collective_graph(g, 1024, attrs(op, 8, {}, 0));
    const uint64_t full = op == CollectiveOp::kAllGather ? stored_bytes(g, c) : stored_bytes(g, g.node(c).inputs[0]);
    EXPECT_EQ(full, op == CollectiveOp::kAllGather ? 4096u * 1024 : 512u * 1024);
    const CompiledStep sp = compile_spmd_graph(g, hw, "c", cores);
    ASSERT_EQ(sp.collectives.size(), 1u);
    EXPECT_EQ(sp.collectives[0].bytes, full);
    RunResult rr;
    cycles("analytical", hw, sp.program, &rr);
    const isa::Collective k = op == CollectiveOp::kAllGather ? isa::Collective::kAllGather : isa::Collective::kReduceScatter;
    EXPECT_EQ(rr.collectives[k].bytes, full * 7 / 8) << models::collective_op_name(op);
  }
}

// collective-permute: point to point. A cyclic shift sends the operand once from every core; one
// pair alone sends it from one core, and only the two cores of the pair wait for it.
TEST(GraphCollective, CollectivePermute) {
  const HwConfig hw = hw_of("v3-8.yaml");
  const std::vector<CoreId> cores = ring_order(hw);
  const auto build = [&](std::vector<std::pair<int64_t, int64_t>> pairs) {
    models::Graph g;
    CollectiveAttrs a = attrs(CollectiveOp::kCollectivePermute, 8);
    a.pairs = std::move(pairs);
    collective_graph(g, 4096, a);  // 2 MiB
    return compile_spmd_graph(g, hw, "cp", cores);
  };
  const CompiledStep shift = build({{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 6}, {6, 7}, {7, 0}});
  const CompiledStep one = build({{2, 3}});
  for (const char* engine : {"analytical", "systemc"}) {
    RunResult rs, r1;
    const uint64_t t_shift = cycles(engine, hw, shift.program, &rs), t_one = cycles(engine, hw, one.program, &r1);
    EXPECT_EQ(rs.collectives[isa::Collective::kCollectivePermute].bytes, 2u << 20) << engine;
    EXPECT_GT(t_shift, 0u);
    // One transfer on one link takes no longer than eight at once on the ring's links.
    std::printf("[ figures  ] %s: 2 MiB collective-permute, cyclic shift %llu cycles, one pair %llu\n", engine,
                (unsigned long long)t_shift, (unsigned long long)t_one);
    EXPECT_LE(t_one, t_shift) << engine;
    EXPECT_GT(t_one, t_shift / 4) << engine;
  }
}

// Kernels reading a collective's result wait for it; its operand's kernel runs before it.
TEST(GraphCollective, ConsumersWaitForIt) {
  const HwConfig hw = hw_of("v3-8.yaml");
  const std::vector<CoreId> cores = ring_order(hw);
  models::Graph g;
  const int x = g.parameter("x", {1024, 128}, models::DType::kF32);
  const int c = g.collective(g.ew(models::EwOp::kExp, x), attrs(CollectiveOp::kAllReduce, 8), "ar");
  g.mark_output(g.ew(models::EwOp::kTanh, c, -1, "after"));
  const CompiledStep sp = compile_spmd_graph(g, hw, "deps", cores);
  for (size_t k = 0; k < sp.program.cores.size(); ++k) {
    const isa::CoreProgram& s = sp.program.stream(k);
    const auto& ks = s.kernels;
    ASSERT_GE(ks.size(), 3u);
    size_t ci = 0;
    while (ci < ks.size() && ks[ci].collective != isa::Collective::kAllReduce) ++ci;
    ASSERT_TRUE(ci > 0 && ci + 1 < ks.size());
    EXPECT_EQ(std::string(ks[ci].name.view()), "ar");  // the node's name, as any kernel's
    // The collective's first instruction waits for the kernel before it, the next kernel's first
    // instruction for the collective's last.
    for (uint32_t d : s.instrs[ks[ci].first_instr].deps) EXPECT_LE(d, ks[ci - 1].last_instr);
    const auto& next = s.instrs[ks[ci + 1].first_instr].deps;
    EXPECT_TRUE(std::find(next.begin(), next.end(), ks[ci].last_instr) != next.end());
  }
  // The program's replica count must be the collectives'.
  EXPECT_THROW(compile_spmd_graph(g, hw, "deps", {cores[0], cores[1]}), std::invalid_argument);
}

// An asynchronous collective (XLA's -start/-done) runs in the background while the kernels that do
// not read its result compute: the step takes about the longer of the two, not their sum.
TEST(GraphCollective, AsyncOverlapsIndependentKernels) {
  const HwConfig hw = hw_of("v3-8.yaml");
  const std::vector<CoreId> cores = ring_order(hw);
  // (The matmul's nodes come first: the fusion plan then orders the collective's kernel first.)
  const auto build = [&](bool async, bool with_collective, bool with_dot) {
    models::Graph g;
    const int y = g.parameter("y", {2048, 2048}, models::DType::kBF16);  // compute bound
    const int w = g.parameter("w", {2048, 2048}, models::DType::kBF16);
    const int mm = with_dot ? g.dot(y, w, {{}, {}, {1}, {0}}, models::DotPrecision::kDefault, "mm") : -1;
    const int x = g.parameter("x", {32768, 128}, models::DType::kF32);  // 16 MiB
    int c = -1;
    if (with_collective) {
      CollectiveAttrs a = attrs(CollectiveOp::kAllReduce, 8);
      a.async = async;
      c = g.collective(x, a, "ar");
    }
    if (c >= 0 && mm >= 0)
      g.mark_output(g.ew(models::EwOp::kAdd, c, g.reshape(g.convert(mm, models::DType::kF32), {32768, 128}), "consumer"));
    else
      g.mark_output(c >= 0 ? g.ew(models::EwOp::kTanh, c, -1, "consumer") : g.convert(mm, models::DType::kF32));
    return compile_spmd_graph(g, hw, "async", cores);
  };
  const CompiledStep sync = build(false, true, true), async = build(true, true, true);
  // The collective is emitted before the matmul (the fusion plan's order), the consumer after.
  const auto& ks = async.program.cores[0].kernels;
  ASSERT_EQ(ks.size(), 3u);
  EXPECT_EQ(ks[0].collective, isa::Collective::kAllReduce);
  EXPECT_TRUE(async.collectives[0].background);
  for (const char* engine : {"analytical", "systemc"}) {
    const double t_sync = double(cycles(engine, hw, sync.program)), t_async = double(cycles(engine, hw, async.program));
    const double t_ar = double(cycles(engine, hw, build(false, true, false).program));
    const double t_mm = double(cycles(engine, hw, build(false, false, true).program));
    std::printf("[ figures  ] %s: all-reduce %.0f, matmul %.0f, both sync %.0f, async %.0f cycles\n", engine, t_ar,
                t_mm, t_sync, t_async);
    EXPECT_GE(t_sync, 0.98 * std::max(t_ar, t_mm) + 0.5 * std::min(t_ar, t_mm)) << engine;
    EXPECT_LT(t_async, 0.85 * t_sync) << engine;
    EXPECT_GE(t_async, 0.98 * std::max(t_ar, t_mm)) << engine;
  }
}

TEST(GraphSpmd, RejectsNoCoresAndDuplicates) {
  const HwConfig hw = hw_of("v3-8.yaml");
  const models::Graph g = matmul_graph(256);
  EXPECT_THROW(compile_spmd_graph(g, hw, "mm", {}), std::invalid_argument);
  EXPECT_THROW(compile_spmd_graph(g, hw, "mm", {{0, 0}, {0, 0}}), std::invalid_argument);
}

}  // namespace
}  // namespace tpusim::compiler
