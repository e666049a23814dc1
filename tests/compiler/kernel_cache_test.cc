// Kernels lowered once (compiler/lower/kernel_cache.h): a replayed kernel is what lowering it
// would have written, so whole programs compiled with and without the cache are identical, field
// for field; and identical layers are lowered once. Likewise replicas' collective kernels taken
// from their peers alone (ProgramBuilder::mirror_kernel): identical programs with and without.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "compiler/collectives/replicas.h"
#include "compiler/compile.h"
#include "compiler/lower/lowering.h"
#include "compiler/plan/fusion.h"
#include "compiler/plan/memory_plan.h"
#include "compiler/step/data_parallel.h"
#include "compiler/step/fsdp.h"
#include "compiler/step/fsdp_graphs.h"
#include "compiler/step/spmd_step.h"
#include "config/hw_loader.h"
#include "models/bert.h"
#include "models/families.h"

namespace tpusim::compiler {
namespace {

HwConfig hw_config(const std::string& name) {
  return load_hw_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/" + name + ".yaml");
}

nlohmann::json as_json(const isa::Program& p) {
  return {{"name", p.name}, {"cores", p.cores}, {"info", p.info}};
}

// Compiles with `on` (a default switch: kernel_cache_default(), mirror_replicas_default()) off,
// then on (restored afterwards).
template <class F>
std::pair<isa::Program, isa::Program> off_and_on(bool& on, F compile) {
  on = false;
  isa::Program plain;
  try {
    plain = compile();
  } catch (...) {
    on = true;
    throw;
  }
  on = true;
  return {std::move(plain), compile()};
}
template <class F>
std::pair<isa::Program, isa::Program> both_ways(F compile) {
  return off_and_on(kernel_cache_default(), compile);
}

size_t repeats(const isa::Program& p) {
  size_t n = 0;
  for (const isa::CoreProgram& c : p.cores) n += c.repeats.size();
  return n;
}

// BERT with four identical layers, at a size whose big kernels are rerolled into tile loops.
models::ModelArch four_layers() {
  models::ArchOverrides o;
  o.layers = 4;
  o.hidden = 512;
  o.heads = 8;
  o.intermediate = 2048;
  return models::with_overrides(models::find_preset("bert-tiny"), o);
}

models::BertGraphOptions shape(int64_t batch, int64_t seq) {
  models::BertGraphOptions o;
  o.batch = batch;
  o.seq = seq;
  return o;
}

TEST(KernelCache, DataParallelStepsAreIdenticalWithAndWithoutIt) {
  for (const char* hw_name : {"v3-8", "v4-8"}) {  // v4: megacore, kernels split over the chip's two cores
    const HwConfig hw = hw_config(hw_name);
    models::BertTrainingStep s = models::build_training_step(four_layers(), shape(16, 512), models::OptimizerConfig{});
    DataParallelStep dp;
    dp.graph = &s.model.graph;
    shard_data_parallel(s.model.graph, s.grads.grads);
    for (auto [in, out] : s.optimizer.donated) dp.donated[out] = in;
    dp.allreduce_bucket_bytes = 256 << 10;  // combined all-reduces in the background between kernels
    auto [plain, cached] = both_ways([&] { return compile_spmd_step(data_parallel_step(dp, hw), hw, "dp").program; });
    EXPECT_GT(repeats(cached), 0u) << hw_name;  // replays carry tile loops
    EXPECT_EQ(as_json(plain), as_json(cached)) << hw_name;
  }
}

TEST(KernelCache, FsdpStepsAreIdenticalWithAndWithoutIt) {
  const HwConfig hw = hw_config("v3-8");
  auto f = build_fsdp_graphs(models::build_bert(four_layers(), shape(16, 512)), 8, true, models::OptimizerConfig{}, true);
  auto [plain, cached] = both_ways([&] { return compile_spmd_step(fsdp_step(*f, hw), hw, "fsdp").program; });
  EXPECT_GT(repeats(cached), 0u);
  EXPECT_EQ(as_json(plain), as_json(cached));
}

TEST(KernelCache, KernelsAreIdenticalWithAndWithoutIt) {
  const HwConfig hw = hw_config("v3-8");
  auto [plain, cached] = both_ways([&] {
    return compile_kernel({"encoder_block", {{"seq", 512}, {"hidden", 1024}, {"heads", 16}, {"ffn", 4096}}}, hw);
  });
  EXPECT_EQ(as_json(plain), as_json(cached));
}

// Lowering a four-layer forward graph kernel by kernel: the layers' kernels are lowered once, the
// other three layers' replayed (named for their own layer).
TEST(KernelCache, IdenticalLayersAreLoweredOnce) {
  const HwConfig hw = hw_config("v3-8");
  const models::Graph g = models::build_bert(four_layers(), shape(8, 128)).graph;
  const FusionPlan plan = plan_fusions(g);
  isa::CoreProgram core;
  ProgramBuilder pb(core, hw.chip.core.vmem.size_bytes());
  LowerContext cx{g, plan, hw, pb};
  size_t lowered = 0;
  for (const Fusion& f : plan.fusions) {
    lower_fusion(cx, f);
    lowered += f.kind == FusionKind::kDot || f.kind == FusionKind::kLoop || f.kind == FusionKind::kReduce;
  }
  const size_t distinct = pb.kernel_cache().size();
  EXPECT_GT(distinct, 0u);
  EXPECT_EQ(distinct + pb.kernel_cache().replays(), lowered);  // each recorded or replayed
  EXPECT_LT(distinct * 2, lowered) << distinct << " of " << lowered << " kernels lowered";
  // Replayed kernels carry their own names: every kernel name of the plan is in the table once.
  std::set<std::string> names;
  for (const isa::KernelRange& k : core.kernels) names.insert(k.name.str());
  EXPECT_EQ(names.size(), core.kernels.size());
  for (const isa::Instr& in : core.instrs) EXPECT_TRUE(names.count(in.label.str().substr(0, in.label.str().find(':'))) > 0) << in.label;
}

template <class F>
std::pair<isa::Program, isa::Program> mirrored_both_ways(F compile) {
  return off_and_on(mirror_replicas_default(), compile);
}

size_t shared(const isa::Program& p) {
  size_t n = 0;
  for (const isa::CoreProgram& c : p.cores) n += c.stream_of >= 0;
  return n;
}

TEST(ReplicaMirror, StepsAreIdenticalWithAndWithoutIt) {
  for (const char* hw_name : {"v3-32", "v4-32", "v5litepod-16", "v6e-8"}) {
    const HwConfig hw = hw_config(hw_name);
    models::BertTrainingStep s = models::build_training_step(models::find_preset("bert-tiny"), shape(2, 64), models::OptimizerConfig{});
    DataParallelStep dp;
    dp.graph = &s.model.graph;
    shard_data_parallel(s.model.graph, s.grads.grads);
    for (auto [in, out] : s.optimizer.donated) dp.donated[out] = in;
    for (uint64_t bucket : {uint64_t(0), uint64_t(64) << 10}) {  // one all-reduce at the end; several in the background
      dp.allreduce_bucket_bytes = bucket;
      auto [plain, mirrored] = mirrored_both_ways([&] { return compile_spmd_step(data_parallel_step(dp, hw), hw, "dp").program; });
      EXPECT_GT(shared(mirrored), 0u) << hw_name;
      EXPECT_EQ(as_json(plain), as_json(mirrored)) << hw_name << " bucket " << bucket;
    }
    auto f = build_fsdp_graphs(models::build_bert(models::find_preset("bert-tiny"), shape(2, 64)), hw.slice.chips() * hw.chip.cores,
                               true, models::OptimizerConfig{}, true);
    auto [plain, mirrored] = mirrored_both_ways([&] { return compile_spmd_step(fsdp_step(*f, hw), hw, "fsdp").program; });
    EXPECT_GT(shared(mirrored), 0u) << hw_name;
    EXPECT_EQ(as_json(plain), as_json(mirrored)) << hw_name << " fsdp";
  }
}

}  // namespace
}  // namespace tpusim::compiler
