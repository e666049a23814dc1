// The import of collectives (compiler/hlo/hlo_import_collectives.h): every form in
// data/import_collectives.hlo read into graph collectives, compiled across the 8 cores of a v3-8
// (compiler/step/spmd_step.h) and simulated; an imported all-reduce against the data-parallel one.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "compiler/step/spmd_step.h"
#include "compiler/hlo/hlo_export.h"
#include "compiler/hlo/hlo_import.h"
#include "compiler/hlo/hlo_parser.h"
#include "config/hw_loader.h"
#include "sim/engine/engine.h"
#include "tests/hlo/hlo_test_util.h"

namespace tpusim::hlo {
namespace {

using models::CollectiveOp;
using models::OpKind;
using testing::data_module;

std::vector<const models::Node*> all_named(const models::Graph& g, const std::string& name) {
  std::vector<const models::Node*> r;
  for (const models::Node& n : g.nodes())
    if (n.name == name) r.push_back(&n);
  return r;
}
const models::Node& one_named(const models::Graph& g, const std::string& name) {
  const auto r = all_named(g, name);
  if (r.size() != 1) throw std::runtime_error(name + ": " + std::to_string(r.size()) + " nodes");
  return *r[0];
}

HwConfig v3_8() { return load_hw_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/v3-8.yaml"); }

TEST(HloImportCollectives, EveryForm) {
  const HloImport r = import_hlo(data_module("import_collectives.hlo"));
  const models::Graph& g = r.graph;
  int collectives = 0;
  for (const models::Node& n : g.nodes()) collectives += n.kind == OpKind::kCollective;
  // ar, ar_pairs, ag, rs, a2a, cp, combined (two operands), ars, ags, cps.
  EXPECT_EQ(collectives, 11);
  const models::Node& ar = one_named(g, "ar");
  EXPECT_EQ(ar.collective.op, CollectiveOp::kAllReduce);
  EXPECT_EQ(ar.collective.replicas, 8);  // replica_count=8
  EXPECT_TRUE(ar.collective.groups.empty());
  EXPECT_EQ(ar.collective.reduce, models::ReduceOp::kSum);
  const models::Node& pairs = one_named(g, "ar_pairs");
  EXPECT_EQ(pairs.collective.groups, (std::vector<std::vector<int64_t>>{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  EXPECT_EQ(pairs.collective.reduce, models::ReduceOp::kMax);
  // The iota form [2,4]<=[8]: groups {0..3}, {4..7}; the gathered dimension 64 x 4.
  const models::Node& ag = one_named(g, "ag");
  EXPECT_EQ(ag.collective.op, CollectiveOp::kAllGather);
  EXPECT_EQ(ag.collective.group_size(), 4);
  EXPECT_EQ(ag.shape, (models::Dims{256, 128}));
  EXPECT_EQ(one_named(g, "rs").shape, (models::Dims{8, 128}));
  EXPECT_EQ(one_named(g, "rs").collective.dim, 0);
  EXPECT_EQ(one_named(g, "a2a").collective.op, CollectiveOp::kAllToAll);
  EXPECT_EQ(one_named(g, "cp").collective.pairs.size(), 8u);
  // The combined all-reduce: one collective per operand, each reached through get-tuple-element.
  const auto combined = all_named(g, "combined");
  ASSERT_EQ(combined.size(), 2u);
  EXPECT_EQ(combined[0]->shape, (models::Dims{64, 128}));
  EXPECT_EQ(combined[1]->shape, (models::Dims{32, 128}));
  // -start/-done: the -done awaits the -start's collective (models::OpKind::kCollectiveDone, named
  // after the -done); the outputs are the dones.
  EXPECT_EQ(one_named(g, "ars").collective.op, CollectiveOp::kAllReduce);
  EXPECT_EQ(one_named(g, "ags").shape, (models::Dims{32, 1024}));
  EXPECT_EQ(one_named(g, "cps").collective.pairs, (std::vector<std::pair<int64_t, int64_t>>{{0, 4}, {4, 0}}));
  for (const char* n : {"ars", "ags", "cps"}) EXPECT_TRUE(one_named(g, n).collective.async) << n;
  for (const char* n : {"ar", "ag", "rs", "a2a", "cp"}) EXPECT_FALSE(one_named(g, n).collective.async) << n;
  std::set<int> outputs(g.outputs().begin(), g.outputs().end());
  for (const char* n : {"ag", "rs", "a2a", "cp", "ard", "agd", "cpd"}) EXPECT_TRUE(outputs.count(one_named(g, n).id)) << n;
  for (const auto& [start, done] : {std::pair{"ars", "ard"}, {"ags", "agd"}, {"cps", "cpd"}}) {
    EXPECT_EQ(one_named(g, done).kind, OpKind::kCollectiveDone) << done;
    EXPECT_EQ(one_named(g, done).inputs, std::vector<int>{one_named(g, start).id}) << done;
  }
  // Only the multiply reduction is an approximation.
  ASSERT_EQ(r.stats.unmodelled.size(), 1u);
  EXPECT_EQ(r.stats.unmodelled[0].instruction, "combined");
  EXPECT_NE(r.stats.unmodelled[0].reason.find("multiply"), std::string::npos);
}

// What does not fit is a stand-in with the reason; never an exception.
TEST(HloImportCollectives, MisfitsStandIn) {
  const std::string text = R"(HloModule m, replica_count=4
add_f {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  x = f32[6,128] parameter(0)
  bad_groups = f32[6,128] all-reduce(x), replica_groups={{0,1},{1,2}}, to_apply=add_f
  not_divisible = f32[2,128] reduce-scatter(x), replica_groups={}, dimensions={0}, to_apply=add_f
  wrong_shape = f32[12,128] all-gather(x), replica_groups={}, dimensions={0}
  no_dims = f32[24,128] all-gather(x), replica_groups={}
  outside = f32[6,128] collective-permute(x), source_target_pairs={{0,4}}
  ROOT t = (f32[6,128], f32[2,128], f32[12,128], f32[24,128], f32[6,128]) tuple(bad_groups, not_divisible, wrong_shape, no_dims, outside)
})";
  const HloImport r = import_hlo(parse_hlo_module(text, "t.hlo"));
  ASSERT_EQ(r.stats.unmodelled.size(), 5u);
  for (const Unmodelled& u : r.stats.unmodelled) {
    EXPECT_NE(u.reason.find("an input stands in"), std::string::npos) << u.reason;
    EXPECT_GT(u.line, 0);
  }
  EXPECT_NE(r.stats.unmodelled[2].reason.find("f32[12,128]"), std::string::npos) << r.stats.unmodelled[2].reason;
  for (const models::Node& n : r.graph.nodes()) EXPECT_NE(n.kind, OpKind::kCollective) << n.name;
  // ImportOptions::replicas overrides the module's count: 2 replicas, so groups of 2 gather 12.
  const HloImport r2 = import_hlo(parse_hlo_module(text, "t.hlo"), {.max_instructions = 1 << 20, .while_trip_count = {}, .replicas = 2});
  EXPECT_EQ(one_named(r2.graph, "wrong_shape").kind, OpKind::kCollective);
}

// Exported (compiler/hlo/hlo_export.h) and imported back: the same collectives.
TEST(HloImportCollectives, ExportRoundTrip) {
  const HloImport a = import_hlo(data_module("import_collectives.hlo"));
  const std::string text = export_hlo(a.graph);
  const HloImport b = import_hlo(parse_hlo_module(text, "exported.hlo"));
  EXPECT_TRUE(b.stats.unmodelled.empty()) << text;
  std::vector<const models::Node*> ca, cb;
  for (const models::Node& n : a.graph.nodes())
    if (n.kind == OpKind::kCollective) ca.push_back(&n);
  for (const models::Node& n : b.graph.nodes())
    if (n.kind == OpKind::kCollective) cb.push_back(&n);
  ASSERT_EQ(ca.size(), cb.size());
  for (size_t i = 0; i < ca.size(); ++i) {
    const models::CollectiveAttrs &x = ca[i]->collective, &y = cb[i]->collective;
    EXPECT_EQ(ca[i]->shape, cb[i]->shape) << ca[i]->name;
    EXPECT_EQ(x.op, y.op) << ca[i]->name;
    EXPECT_EQ(x.replicas, y.replicas) << ca[i]->name;
    EXPECT_EQ(x.groups, y.groups) << ca[i]->name;
    EXPECT_EQ(x.dim, y.dim) << ca[i]->name;
    EXPECT_EQ(x.reduce, y.reduce) << ca[i]->name;
    EXPECT_EQ(x.pairs, y.pairs) << ca[i]->name;
  }
}

// The whole module compiled across the 8 cores of a v3-8 and simulated on both engines: every
// collective kind shows in the engines' statistics.
TEST(HloImportCollectives, SimulatedAcrossReplicas) {
  const HwConfig hw = v3_8();
  const HloImport r = import_hlo(data_module("import_collectives.hlo"));
  const compiler::CompiledStep sp = compiler::compile_spmd_graph(r.graph, hw, "c", compiler::ring_order(hw));
  // 11 collective instructions; the combined (tuple-shaped) all-reduce of two operands is one
  // collective of their summed bytes (models::CollectiveAttrs::combine).
  EXPECT_EQ(sp.collectives.size(), 10u);
  const auto combined = std::find_if(sp.collectives.begin(), sp.collectives.end(),
                                     [](const compiler::GraphCollective& c) { return c.name == "combined"; });
  ASSERT_NE(combined, sp.collectives.end());
  EXPECT_EQ(combined->bytes, (64u + 32u) * 128 * 4);
  for (const char* engine : {"analytical", "systemc"}) {
    const RunResult rr = make_engine(engine, hw)->run(sp.program, nullptr);
    EXPECT_GT(rr.device_time_s, 0) << engine;
    for (isa::Collective k : {isa::Collective::kAllReduce, isa::Collective::kAllGather, isa::Collective::kReduceScatter,
                              isa::Collective::kAllToAll, isa::Collective::kCollectivePermute})
      EXPECT_GT(rr.collectives[k].instructions, 0u) << engine << " " << collective_kind_name(k);
  }
}

// An imported 16 MiB all-reduce over the 8 cores of a v3-8 against the all-reduce a data-parallel
// step emits for a gradient bucket of the same bytes (collective_program: the same emitter over
// ring_order). Tolerance 1%: the imported program adds only zero-work marker instructions (the
// parameter has no kernel, the output is the collective's own buffer).
TEST(HloImportCollectives, AllReduceAsDataParallel) {
  const HwConfig hw = v3_8();
  const std::string text = R"(HloModule m, replica_count=8
add_f {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
ENTRY main {
  g = f32[32768,128] parameter(0)
  ROOT ar = f32[32768,128] all-reduce(g), replica_groups={}, to_apply=add_f
})";
  const HloImport r = import_hlo(parse_hlo_module(text, "t.hlo"));
  const compiler::CompiledStep sp = compiler::compile_spmd_graph(r.graph, hw, "ar", compiler::ring_order(hw));
  ASSERT_EQ(sp.collectives.size(), 1u);
  EXPECT_EQ(sp.collectives[0].bytes, 16u << 20);
  const isa::Program ref = compiler::collective_program(compiler::CollectiveKind::kAllReduce, hw, 16u << 20, {});
  for (const char* engine : {"analytical", "systemc"}) {
    const double mine = make_engine(engine, hw)->run(sp.program, nullptr).device_time_s;
    const double dp = make_engine(engine, hw)->run(ref, nullptr).device_time_s;
    EXPECT_NEAR(mine / dp, 1.0, 0.01) << engine << ": imported " << mine << " s, data-parallel " << dp << " s";
    std::printf("[ figures  ] %s: imported all-reduce of 16 MiB on v3-8 %.1f us, data-parallel %.1f us\n", engine,
                mine * 1e6, dp * 1e6);
  }
}

}  // namespace
}  // namespace tpusim::hlo
