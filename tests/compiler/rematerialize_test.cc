// Automatic rematerialization (compiler/plan/rematerialize.h): over the limit, the values live across
// the memory peak are recomputed right before their late readers, cheapest per byte first, until
// the plan fits; the rewritten program computes the same outputs.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "compiler/plan/fusion.h"
#include "compiler/plan/memory_plan.h"
#include "compiler/plan/rematerialize.h"
#include "compiler/step/spmd_step.h"
#include "config/hw_loader.h"
#include "tests/models/graph_eval.h"

namespace tpusim::compiler {
namespace {

using models::DType;
using models::EwOp;

// A forward that saves two values for a "backward": `a` (an element-wise exp of the weights x) and
// `b` (a matmul), the same size, each read once early and once late; between them a chain of
// matmuls whose temporaries make the peak (kernel 6: a, b, c1, c2, c3 live). Scheduled in node
// order. Kernels: a, b, e1, h0 (e2 + e1), c1, c2, c3 (+ c1), late_a, late_b, out.
constexpr int64_t kN = 128;
constexpr uint64_t kBytes = kN * kN * 4;  // every value's buffer
struct Saved {
  models::Graph g;
  int x = -1, w = -1, out = -1;
  Saved() {
    x = g.parameter("x", {kN, kN}, DType::kF32, models::ParamRole::kTrainable);
    w = g.parameter("w", {kN, kN}, DType::kF32, models::ParamRole::kTrainable);
    const models::DotDims mm{{}, {}, {1}, {0}};
    auto dot = [&](int l, int r, const std::string& name) {
      return g.dot(l, r, mm, models::DotPrecision::kDefault, name);
    };
    const int a = g.ew(EwOp::kExp, x, -1, "a");
    const int b = dot(x, w, "b");
    const int e1 = dot(a, w, "e1");
    const int h0 = g.ew(EwOp::kAdd, dot(b, w, "e2"), e1, "h0");
    const int c1 = dot(h0, w, "c1");
    const int c2 = dot(c1, w, "c2");
    const int c3 = g.ew(EwOp::kAdd, dot(c2, w, "c3_dot"), c1, "c3");
    const int late_a = dot(a, c3, "late_a");
    out = g.reduce(dot(b, late_a, "late_b"), 1, models::ReduceOp::kSum);
    g.mark_output(out);
    g.set_scheduled(true);
  }
};

BufferKind role_kind(const models::Graph& g, int id) { return buffer_kind_of_role(g.node(id).role); }

MemoryPlan plan_of(const models::Graph& g) {
  return plan_memory(g, plan_fusions(g), [&](int id) { return role_kind(g, id); });
}

ResolvedHw v3() { return resolve_hw(load_hw_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/v3-8.yaml")); }

std::set<std::string> remat_names(const models::Graph& g) {
  std::set<std::string> s;
  for (const auto& n : g.nodes())
    if (n.name.size() > 6 && n.name.compare(n.name.size() - 6, 6, ".remat") == 0) s.insert(n.name);
  return s;
}

std::vector<double> evaluate_output(const models::Graph& g, int x, int w, int out) {
  std::map<int, test::Tensor> in;
  for (int p : {x, w}) {
    test::Tensor t{g.node(p).shape, std::vector<double>(size_t(models::num_elements(g.node(p).shape)))};
    for (size_t i = 0; i < t.v.size(); ++i) t.v[i] = 0.01 * double((i * 13 + size_t(p)) % 17) - 0.08;
    in[p] = t;
  }
  return test::evaluate(g, in)[out].v;
}

TEST(Rematerialize, FitsByRecomputingTheCheapestValueAndComputesTheSame) {
  const Saved s;
  const FusionPlan plan = plan_fusions(s.g);
  const MemoryPlan mp = plan_memory(s.g, plan, [&](int id) { return role_kind(s.g, id); });
  ASSERT_EQ(mp.peak_bytes, mp.persistent_bytes + 5 * kBytes);
  ASSERT_EQ(mp.peak_kernel, 6);
  // One value too many at the peak: recomputing either saved value would do; the exp (HBM bytes
  // only) costs less than the matmul (its operands' bytes, and flops).
  const uint64_t limit = mp.peak_bytes - 1;
  const auto rw = rematerialize(s.g, plan, mp, limit, v3());
  ASSERT_TRUE(rw.has_value());
  EXPECT_EQ(rw->stats.values, 1u);
  EXPECT_EQ(rw->stats.bytes, kBytes);
  EXPECT_EQ(rw->stats.flops, 0u);  // an element-wise value: no matmul recomputed
  EXPECT_EQ(remat_names(rw->graph), std::set<std::string>{"a.remat"});
  EXPECT_TRUE(rw->graph.scheduled());
  const MemoryPlan after = plan_of(rw->graph);
  EXPECT_EQ(after.peak_bytes, mp.persistent_bytes + 4 * kBytes);
  EXPECT_EQ(after.peak_bytes, rw->planned_peak_bytes);
  // The late reader reads the clone, which runs right before it; the result is the same.
  const auto orig = evaluate_output(s.g, s.x, s.w, s.out);
  const auto re = evaluate_output(rw->graph, rw->new_id[size_t(s.x)], rw->new_id[size_t(s.w)], rw->new_id[size_t(s.out)]);
  ASSERT_EQ(orig.size(), re.size());
  for (size_t i = 0; i < orig.size(); ++i) EXPECT_DOUBLE_EQ(orig[i], re[i]);
}

TEST(Rematerialize, RecomputesMoreWhenOneIsNotEnough) {
  const Saved s;
  const FusionPlan plan = plan_fusions(s.g);
  const MemoryPlan mp = plan_memory(s.g, plan, [&](int id) { return role_kind(s.g, id); });
  // Two values too many: the exp first, then the matmul.
  const uint64_t limit = mp.peak_bytes - kBytes - 1;
  const auto rw = rematerialize(s.g, plan, mp, limit, v3());
  ASSERT_TRUE(rw.has_value());
  EXPECT_EQ(remat_names(rw->graph), (std::set<std::string>{"a.remat", "b.remat"}));
  EXPECT_EQ(rw->stats.flops, uint64_t(2 * kN * kN * kN));  // b's matmul, once more
  EXPECT_LE(plan_of(rw->graph).peak_bytes, limit);
  const auto orig = evaluate_output(s.g, s.x, s.w, s.out);
  const auto re = evaluate_output(rw->graph, rw->new_id[size_t(s.x)], rw->new_id[size_t(s.w)], rw->new_id[size_t(s.out)]);
  for (size_t i = 0; i < orig.size(); ++i) EXPECT_DOUBLE_EQ(orig[i], re[i]);
}

TEST(Rematerialize, StopsWhenNothingAtThePeakHelps) {
  const Saved s;
  const FusionPlan plan = plan_fusions(s.g);
  const MemoryPlan mp = plan_memory(s.g, plan, [&](int id) { return role_kind(s.g, id); });
  // Room for the weights only: both saved values are recomputed, and the plan still does not fit.
  const auto rw = rematerialize(s.g, plan, mp, mp.persistent_bytes + 1, v3());
  ASSERT_TRUE(rw.has_value());
  EXPECT_EQ(remat_names(rw->graph), (std::set<std::string>{"a.remat", "b.remat"}));
  EXPECT_GT(rw->planned_peak_bytes, mp.persistent_bytes + 1);
  EXPECT_EQ(plan_of(rw->graph).peak_bytes, rw->planned_peak_bytes);
}

TEST(Rematerialize, RecomputesAMatmulWhenItIsTheOnlyCandidate) {
  // Without the exp (a read from x directly), only b is saved across the peak: its matmul is
  // recomputed, and its flops counted.
  models::Graph g;
  const int x = g.parameter("x", {kN, kN}, DType::kF32, models::ParamRole::kTrainable);
  const int w = g.parameter("w", {kN, kN}, DType::kF32, models::ParamRole::kTrainable);
  const models::DotDims mm{{}, {}, {1}, {0}};
  auto dot = [&](int l, int r, const std::string& name) { return g.dot(l, r, mm, models::DotPrecision::kDefault, name); };
  const int b = dot(x, w, "b");
  const int c1 = dot(b, w, "c1");
  const int c2 = dot(c1, w, "c2");
  const int c3 = g.ew(EwOp::kAdd, dot(c2, w, "c3_dot"), c1, "c3");
  const int out = g.reduce(dot(b, c3, "late_b"), 1, models::ReduceOp::kSum);
  g.mark_output(out);
  g.set_scheduled(true);
  const FusionPlan plan = plan_fusions(g);
  const MemoryPlan mp = plan_memory(g, plan, [&](int id) { return role_kind(g, id); });
  const auto rw = rematerialize(g, plan, mp, mp.peak_bytes - 1, v3());
  ASSERT_TRUE(rw.has_value());
  EXPECT_EQ(remat_names(rw->graph), std::set<std::string>{"b.remat"});
  EXPECT_EQ(rw->stats.flops, uint64_t(2 * kN * kN * kN));
  EXPECT_LT(plan_of(rw->graph).peak_bytes, mp.peak_bytes);
  const auto orig = evaluate_output(g, x, w, out);
  const auto re = evaluate_output(rw->graph, rw->new_id[size_t(x)], rw->new_id[size_t(w)], rw->new_id[size_t(out)]);
  for (size_t i = 0; i < orig.size(); ++i) EXPECT_DOUBLE_EQ(orig[i], re[i]);
}

TEST(Rematerialize, NothingToRecomputeIsNoRewrite) {
  // A lone matmul: nothing is live across a peak.
  models::Graph g;
  const int x = g.parameter("x", {kN, kN}, DType::kF32);
  const int y = g.dot(x, x, {{}, {}, {1}, {0}}, models::DotPrecision::kDefault, "y");
  g.mark_output(y);
  const FusionPlan plan = plan_fusions(g);
  const MemoryPlan mp = plan_memory(g, plan, [&](int id) { return role_kind(g, id); });
  EXPECT_FALSE(rematerialize(g, plan, mp, mp.peak_bytes / 2, v3()).has_value());
}

TEST(Rematerialize, TheStepCompilerLeavesAProgramThatFits) {
  const HwConfig hw = load_hw_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/v3-8.yaml");
  const Saved s;
  const CompiledStep c = compile_spmd_graph(s.g, hw, "saved", {ring_order(hw).front()});
  EXPECT_EQ(c.remat.values, 0u);
  EXPECT_TRUE(c.lowered);
}

}  // namespace
}  // namespace tpusim::compiler
