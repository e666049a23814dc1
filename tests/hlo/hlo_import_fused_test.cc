// An after-optimizations module (compiler/plan/fusion.h, fusion groups; docs/hlo.md "Fusions kept"): each
// `fusion` instruction is exactly one kernel named after it, each unfused instruction that computes a
// kernel of its own, and a fusion one kernel cannot hold is split and listed.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "compiler/compile.h"
#include "compiler/hlo/hlo_import.h"
#include "compiler/plan/fusion.h"
#include "config/hw_loader.h"
#include "sim/engine/engine.h"
#include "tests/hlo/hlo_test_util.h"

namespace tpusim::hlo {
namespace {

using compiler::FusionKind;
using testing::data_module;

std::vector<std::string> kernel_names(const compiler::FusionPlan& p) {
  std::vector<std::string> names;
  for (const auto& f : p.fusions) names.push_back(f.name);
  return names;
}

TEST(HloImportFused, EachFusionIsOneKernel) {
  const HloImport r = import_hlo(data_module("fused_three_kernels.hlo"));
  EXPECT_TRUE(r.stats.unmodelled.empty()) << r.stats.unmodelled.front().reason;
  const compiler::FusionPlan p = compiler::plan_fusions(r.graph);
  ASSERT_EQ(kernel_names(p), (std::vector<std::string>{"dense_fusion", "exp_sum_fusion", "softmax_fusion"}));
  // kOutput: the dot with its bias add as the epilogue.
  EXPECT_EQ(p.fusions[0].kind, FusionKind::kDot);
  EXPECT_EQ(r.graph.node(p.fusions[0].root).name, "add.1");
  // kInput with a tuple root (a multi-output reduction): one pass over the exponentials, written,
  // with their row sums as the kernel's reduction output.
  EXPECT_EQ(p.fusions[1].kind, FusionKind::kLoop);
  EXPECT_EQ(r.graph.node(p.fusions[1].root).name, "exp.1");
  ASSERT_EQ(p.fusions[1].merged_reduces.size(), 1u);
  EXPECT_EQ(r.graph.node(p.fusions[1].merged_reduces[0]).name, "reduce.1");
  // kLoop: reads the exponentials and the (bitcast) sums that the second kernel wrote.
  EXPECT_EQ(p.fusions[2].kind, FusionKind::kLoop);
  EXPECT_EQ(p.fusions[2].inputs.size(), 2u);
  // The output is a bitcast of the division: its buffer, no copy kernel.
  ASSERT_EQ(r.graph.outputs().size(), 1u);
  EXPECT_EQ(r.graph.node(r.graph.outputs()[0]).kind, models::OpKind::kReshape);
  EXPECT_FALSE(p.materialized[size_t(r.graph.outputs()[0])]);

  // Simulated, the op profile lists the three kernels and nothing else.
  const HwConfig hw = load_hw_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/v3-8.yaml");
  const RunResult run = make_engine("analytical", hw)->run(compiler::compile_graph(r.graph, hw, "k", 0, 0), nullptr);
  std::set<std::string> profiled;
  for (const auto& e : run.op_profile.entries)
    if (e.name != "(launch)") profiled.insert(e.name);  // the program's launch, not a kernel
  EXPECT_EQ(profiled, (std::set<std::string>{"dense_fusion", "exp_sum_fusion", "softmax_fusion"}));
  EXPECT_GT(run.device_time_s, 0);
}

TEST(HloImportFused, UnexpressibleFusionIsSplitAndListed) {
  const HloImport r = import_hlo(data_module("fused_split.hlo"));
  const compiler::FusionPlan p = compiler::plan_fusions(r.graph);
  // The unfused copy (a layout change) and reduce are kernels of their own; the softmax fusion,
  // which divides by its own row sums, is two kernels named after it.
  EXPECT_EQ(kernel_names(p), (std::vector<std::string>{"copy.1", "softmax_fusion", "softmax_fusion.1", "reduce.2"}));
  const auto split = std::find_if(r.stats.unmodelled.begin(), r.stats.unmodelled.end(),
                                  [](const Unmodelled& u) { return u.instruction == "softmax_fusion"; });
  ASSERT_NE(split, r.stats.unmodelled.end());
  EXPECT_EQ(split->opcode, "fusion");
  EXPECT_EQ(split->line, 25);
  EXPECT_NE(split->reason.find("more than one kernel: reduction 'reduce.1' is computed on within the fusion"),
            std::string::npos)
      << split->reason;
  const auto copy = std::find_if(r.stats.unmodelled.begin(), r.stats.unmodelled.end(),
                                 [](const Unmodelled& u) { return u.instruction == "copy.1"; });
  ASSERT_NE(copy, r.stats.unmodelled.end());
  EXPECT_NE(copy->reason.find("copy kernel"), std::string::npos);
  EXPECT_EQ(compiler::split_groups(r.graph).size(), 1u);
}

TEST(HloImportFused, ModulesWithoutFusionsAreNotGrouped) {
  // A pre-optimization module: tpusim's own fusion decides (no node in a group).
  const HloImport r = import_hlo(data_module("import_shapes.hlo"));
  EXPECT_TRUE(r.graph.groups().empty());
  for (const auto& n : r.graph.nodes()) EXPECT_EQ(n.group, -1) << n.name;
  EXPECT_TRUE(compiler::split_groups(r.graph).empty());
}

}  // namespace
}  // namespace tpusim::hlo
