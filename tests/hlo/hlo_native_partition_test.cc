// The two front ends of partitioning agree: the same Megatron MLP training step (2 data x 4 tensor
// devices) partitioned by the HLO SPMD pass from its sharding annotations
// (configs/hlo/mlp_megatron_train_step.hlo) and, built natively in the local view with the same
// shardings on its parameters, by sharding propagation and the partitioner
// (compiler/step/sharding_rules.h, partition.h): the same all-reduces, over the same replica
// groups, of the same bytes.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/plan/memory_plan.h"
#include "compiler/step/partition.h"
#include "compiler/step/sharding_rules.h"
#include "tests/hlo/hlo_spmd_test_util.h"

namespace tpusim::hlo {
namespace {

using models::DType;
using models::EwOp;
using models::MeshAxis;
using models::TensorSharding;

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// The module's step written with the native builders at one device's shapes (batch 256 / 2 data,
// hidden 4096 / 4 tensor), its parameters sharded as the module's are.
models::Graph native_megatron_step() {
  models::Graph g;
  const int64_t b = 128, h = 1024, f = 1024;  // local: 256 / 2, 1024, 4096 / 4
  const int x = g.parameter("x", {b, h}, DType::kF32);
  const int w1 = g.parameter("w1", {h, f}, DType::kF32, models::ParamRole::kTrainable);
  const int w2 = g.parameter("w2", {f, h}, DType::kF32, models::ParamRole::kTrainable);
  const int y = g.parameter("y", {b, h}, DType::kF32);
  g.set_sharding(x, TensorSharding::split_along(0, MeshAxis::kData));
  g.set_sharding(y, TensorSharding::split_along(0, MeshAxis::kData));
  g.set_sharding(w1, TensorSharding::split_along(1, MeshAxis::kTensor));  // column-parallel
  g.set_sharding(w2, TensorSharding::split_along(0, MeshAxis::kTensor));  // row-parallel
  const models::DotPrecision p = models::DotPrecision::kDefault;

  const int pre = g.dot(x, w1, {{}, {}, {1}, {0}}, p);
  const int zeros = g.full(0, {b, f}, DType::kF32);
  const int act = g.ew(EwOp::kMax, pre, zeros);
  const int out = g.dot(act, w2, {{}, {}, {1}, {0}}, p);
  const int diff = g.ew(EwOp::kSub, out, y);
  const int sq = g.ew(EwOp::kMul, diff, diff);
  const int sum = g.reduce(g.reduce(sq, 1, models::ReduceOp::kSum), 0, models::ReduceOp::kSum);
  const int loss = g.ew(EwOp::kMul, sum, g.constant(3.81469727e-06, DType::kF32));
  const int dout = g.ew_bcast(EwOp::kMul, diff, g.constant(7.62939453e-06, DType::kF32), {});
  const int dw2 = g.dot(act, dout, {{}, {}, {0}, {0}}, p);
  const int dact = g.dot(dout, w2, {{}, {}, {1}, {1}}, p);
  const int dpre = g.ew(EwOp::kMul, dact, g.ew(EwOp::kCmpGt, pre, zeros));
  const int dw1 = g.dot(x, dpre, {{}, {}, {0}, {0}}, p);
  const int lr = g.constant(0.01, DType::kF32);
  g.mark_output(g.ew(EwOp::kSub, w1, g.ew_bcast(EwOp::kMul, dw1, lr, {})));
  g.mark_output(g.ew(EwOp::kSub, w2, g.ew_bcast(EwOp::kMul, dw2, lr, {})));
  g.mark_output(loss);
  return g;
}

TEST(NativePartition, AgreesWithTheHloPassOnAMegatronMlpStep) {
  // The HLO pass: its all-reduces' replica groups (as written) and one partition's result bytes.
  const SpmdResult hlo = spmd_test::partition(read_file(std::string(TPUSIM_SOURCE_DIR) + "/configs/hlo/mlp_megatron_train_step.hlo"));
  ASSERT_TRUE(hlo.module) << hlo.report.reason;
  ASSERT_EQ(hlo.report.collectives.size(), 1u);
  const SpmdCollectiveStats& ar = hlo.report.collectives.at("all-reduce");
  std::map<std::string, int> hlo_groups;
  for (const Instruction& in : hlo.module->entry_computation().instructions)
    if (in.opcode == "all-reduce") ++hlo_groups[in.attr("replica_groups")->value];

  // The native step: propagated, partitioned on the mesh {data: 2, tensor: 4}.
  models::Graph g = native_megatron_step();
  compiler::propagate_shardings(g);
  const std::vector<compiler::ReshardEdge> edges = compiler::partition_edges(g);
  models::Mesh mesh;
  mesh.size[size_t(MeshAxis::kData)] = 2;
  mesh.size[size_t(MeshAxis::kTensor)] = 4;
  uint64_t bytes = 0;
  std::map<std::string, int> native_groups;
  for (const compiler::ReshardEdge& e : edges) {
    EXPECT_EQ(e.how.op, models::CollectiveOp::kAllReduce) << g.node(e.value).name;
    bytes += uint64_t(models::num_elements(g.node(e.value).shape)) * models::dtype_bytes(g.node(e.value).dtype);
    std::string text = "{";
    for (const auto& grp : compiler::axis_groups(mesh, e.how.axis)) {
      text += text.size() > 1 ? ",{" : "{";
      for (size_t k = 0; k < grp.size(); ++k) {
        if (k) text += ",";
        text += std::to_string(grp[k]);
      }
      text += "}";
    }
    ++native_groups[text + "}"];
  }
  EXPECT_EQ(int64_t(edges.size()), ar.count);
  EXPECT_EQ(bytes, ar.result_bytes);
  EXPECT_EQ(native_groups, hlo_groups);
  // What they are: the row-parallel output over tensor; the loss and the two weight gradients over data.
  EXPECT_EQ(native_groups.size(), 2u);
  EXPECT_EQ(native_groups["{{0,1,2,3},{4,5,6,7}}"], 1);
  EXPECT_EQ(native_groups["{{0,4},{1,5},{2,6},{3,7}}"], 3);
}

}  // namespace
}  // namespace tpusim::hlo
