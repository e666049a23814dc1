// The partitioner (compiler/step/partition.h): the resharding rule, mesh replica groups, the edges
// it finds in an annotated graph, and the data-parallel and FSDP steps' collectives derived from
// their annotations.
#include <gtest/gtest.h>

#include <set>
#include <stdexcept>

#include "compiler/step/data_parallel.h"
#include "compiler/step/fsdp.h"
#include "compiler/step/partition.h"
#include "models/bert.h"
#include "models/families.h"
#include "tests/compiler/dp_steps.h"

namespace tpusim::compiler {
namespace {

using models::CollectiveOp;
using models::MeshAxis;
using models::TensorSharding;

TEST(Reshard, TheRuleTable) {
  const auto whole = TensorSharding::whole();
  const auto partial = TensorSharding::partial_over(MeshAxis::kData);
  const auto split1 = TensorSharding::split_along(1, MeshAxis::kData);

  auto r = reshard(partial, whole);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->op, CollectiveOp::kAllReduce);
  EXPECT_EQ(r->axis, MeshAxis::kData);

  r = reshard(partial, split1);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->op, CollectiveOp::kReduceScatter);
  EXPECT_EQ(r->dim, 1);

  r = reshard(TensorSharding::split_along(2, MeshAxis::kTensor), whole);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->op, CollectiveOp::kAllGather);
  EXPECT_EQ(r->axis, MeshAxis::kTensor);
  EXPECT_EQ(r->dim, 2);

  EXPECT_FALSE(reshard(whole, split1));  // a local slice
  EXPECT_FALSE(reshard(split1, split1));
  EXPECT_FALSE(reshard(whole, whole));
}

TEST(Reshard, RefusesWhatTheTableLacks) {
  const auto whole = TensorSharding::whole();
  TensorSharding two_dims = TensorSharding::split_along(0, MeshAxis::kData);
  two_dims.split |= TensorSharding::split_along(1, MeshAxis::kTensor).split;
  EXPECT_THROW(reshard(two_dims, whole), std::invalid_argument);
  EXPECT_FALSE(reshard(whole, two_dims));  // two slices: still local
  auto r = reshard(two_dims, TensorSharding::split_along(0, MeshAxis::kData));  // one gathered, one kept
  ASSERT_TRUE(r);
  EXPECT_EQ(r->op, CollectiveOp::kAllGather);
  EXPECT_EQ(r->axis, MeshAxis::kTensor);
  EXPECT_EQ(r->dim, 1);
  TensorSharding partial_split = TensorSharding::split_along(1, MeshAxis::kTensor);
  partial_split.partial = TensorSharding::partial_over(MeshAxis::kData).partial;
  EXPECT_THROW(reshard(partial_split, whole), std::invalid_argument);  // a partial sum gathered
  // A reduce-scatter with another dimension sliced alongside.
  r = reshard(TensorSharding::partial_over(MeshAxis::kData), two_dims);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->op, CollectiveOp::kReduceScatter);
  EXPECT_EQ(r->dim, 0);
  TensorSharding two_axes = TensorSharding::partial_over(MeshAxis::kData);
  two_axes.partial |= TensorSharding::partial_over(MeshAxis::kTensor).partial;
  EXPECT_THROW(reshard(two_axes, whole), std::invalid_argument);
  EXPECT_THROW(reshard(whole, TensorSharding::partial_over(MeshAxis::kData)), std::invalid_argument);
  // An axis change of one dimension (an all-to-all).
  EXPECT_THROW(reshard(TensorSharding::split_along(0, MeshAxis::kData), TensorSharding::split_along(0, MeshAxis::kTensor)),
               std::invalid_argument);
  // A sum over data wanted split along tensor: all-reduced over data, then sliced (no reduce-scatter).
  r = reshard(TensorSharding::partial_over(MeshAxis::kData), TensorSharding::split_along(0, MeshAxis::kTensor));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->op, CollectiveOp::kAllReduce);
}

TEST(Mesh, AxisGroupsAreTheReplicasDifferingInThatAxisOnly) {
  models::Mesh m;
  m.size[size_t(MeshAxis::kData)] = 2;
  m.size[size_t(MeshAxis::kTensor)] = 4;
  EXPECT_EQ(m.devices(), 8u);
  using G = std::vector<std::vector<int64_t>>;
  EXPECT_EQ(axis_groups(m, MeshAxis::kTensor), (G{{0, 1, 2, 3}, {4, 5, 6, 7}}));  // tensor innermost
  EXPECT_EQ(axis_groups(m, MeshAxis::kData), (G{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  EXPECT_EQ(axis_groups(models::Mesh::along(MeshAxis::kFsdp, 8), MeshAxis::kFsdp), G{});  // one group of all

  const models::CollectiveAttrs a = collective_attrs({CollectiveOp::kAllGather, MeshAxis::kData, 1}, m);
  EXPECT_EQ(a.op, CollectiveOp::kAllGather);
  EXPECT_EQ(a.replicas, 8);
  EXPECT_EQ(a.group_size(), 2);
  EXPECT_EQ(a.dim, 1);
}

// A gradient (partial over data) read by an update: one all-reduce edge at the value the update
// reads whole; the linear accumulation of two partial sums carries the sum on; an output needs none.
TEST(PartitionEdges, PartialSumsAreReducedWhereTheyAreReadWhole) {
  models::Graph g;
  const int w = g.parameter("w", {4, 8}, models::DType::kF32, models::ParamRole::kTrainable);
  const int x = g.parameter("x", {2, 4}, models::DType::kF32);
  const int dy = g.parameter("dy", {2, 8}, models::DType::kF32);
  const int d1 = g.dot(x, dy, {{}, {}, {0}, {0}}, models::DotPrecision::kDefault);  // [4, 8]
  const int d2 = g.dot(x, dy, {{}, {}, {0}, {0}}, models::DotPrecision::kDefault);
  const int sum = g.ew(models::EwOp::kAdd, d1, d2);
  const int upd = g.ew(models::EwOp::kSub, w, sum);
  const int loss = g.reduce(g.reduce(dy, 1, models::ReduceOp::kSum), 0, models::ReduceOp::kSum);
  g.mark_output(upd);
  g.mark_output(loss);
  for (int v : {d1, d2, sum, loss}) g.set_sharding(v, TensorSharding::partial_over(MeshAxis::kData));

  const std::vector<ReshardEdge> edges = partition_edges(g);
  ASSERT_EQ(edges.size(), 1u);
  EXPECT_EQ(edges[0].value, sum);
  EXPECT_EQ(edges[0].how.op, CollectiveOp::kAllReduce);
  EXPECT_EQ(edges[0].readers, std::vector<int>{upd});

  // A non-linear reader ends the partial sum even when annotated partial itself.
  const int sq = g.ew(models::EwOp::kMul, d1, d1);
  g.set_sharding(sq, TensorSharding::partial_over(MeshAxis::kData));
  const std::vector<ReshardEdge> more = partition_edges(g);
  ASSERT_EQ(more.size(), 2u);
  EXPECT_EQ(more[0].value, d1);
  EXPECT_EQ(more[0].readers, std::vector<int>{sq});
}

// The data-parallel step all-reduces exactly what shard_data_parallel annotated; without
// annotations (an evaluation step) nothing.
TEST(PartitionEdges, DataParallelAllReducesTheAnnotatedGradients) {
  const HwConfig hw = test::v3_8();
  test::Step st = test::make_step("bert-tiny", 2, 16);
  const SpmdStep s = data_parallel_step(st.dp, hw);
  std::set<int> reduced;
  for (const models::Node& n : s.graph.nodes())
    if (n.kind == models::OpKind::kCollective) {
      EXPECT_EQ(n.collective.op, CollectiveOp::kAllReduce);
      EXPECT_EQ(n.collective.replicas, 8);
      reduced.insert(n.inputs.at(0));
    }
  EXPECT_EQ(reduced.size(), st.s.grads.grads.size());
  for (int r : reduced) EXPECT_TRUE(s.graph.node(r).sharding.is_partial_over(MeshAxis::kData));

  for (int gr : st.s.grads.grads) st.s.model.graph.set_sharding(gr, TensorSharding::whole());
  const SpmdStep plain = data_parallel_step(st.dp, hw);
  for (const models::Node& n : plain.graph.nodes()) EXPECT_NE(n.kind, models::OpKind::kCollective);
}

// The FSDP step's collectives follow its annotations: each unit's shard (split along fsdp) is
// all-gathered where the kernels read it whole, its gradients (partial over fsdp) reduce-scattered
// into the update's gradient shard (split along fsdp).
TEST(PartitionEdges, FsdpCollectivesFollowTheUnitsShardings) {
  const HwConfig hw = test::v3_8();
  models::BertGraphOptions o;
  o.batch = 2;
  o.seq = 16;
  auto f = build_fsdp_graphs(models::build_bert(models::find_preset("bert-tiny"), o), 8, false, models::OptimizerConfig{});
  for (const FsdpUnit& u : f->step.units) {
    EXPECT_EQ(f->optimizer.graph.node(u.shard).sharding, TensorSharding::split_along(0, MeshAxis::kFsdp));
    EXPECT_EQ(f->optimizer.graph.node(u.grad_shard).sharding, TensorSharding::split_along(0, MeshAxis::kFsdp));
    for (int gr : u.grads) EXPECT_TRUE(f->graph.node(gr).sharding.is_partial_over(MeshAxis::kFsdp));
  }
  const SpmdStep s = fsdp_step(*f, hw);
  size_t gathers = 0, scatters = 0;
  for (const models::Node& n : s.graph.nodes())
    if (n.kind == models::OpKind::kCollective) {
      EXPECT_EQ(n.collective.replicas, 8);
      gathers += n.collective.op == CollectiveOp::kAllGather;
      scatters += n.collective.op == CollectiveOp::kReduceScatter;
    }
  EXPECT_GT(gathers, 0u);
  EXPECT_EQ(scatters, f->step.units.size());

  // A unit whose gradient is not annotated partial cannot be reduce-scattered: the rule refuses.
  f->graph.set_sharding(f->step.units.front().grads.front(), TensorSharding::whole());
  EXPECT_THROW(fsdp_step(*f, hw), std::logic_error);
}

}  // namespace
}  // namespace tpusim::compiler
