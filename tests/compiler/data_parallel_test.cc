// Data-parallel training steps: SPMD replicas, the gradient all-reduce between backward and
// optimizer, memory accounting, and simulation on both engines.
#include <gtest/gtest.h>

#include "compiler/data_parallel.h"
#include "config/hw_loader.h"
#include "models/bert.h"
#include "sim/engine/engine.h"

namespace tpusim::compiler {
namespace {

HwConfig v3_8() { return load_hw_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/v3-8.yaml"); }

struct Step {
  models::BertTrainingStep s;
  DataParallelStep dp;
};

Step tiny_step(models::DType dtype = models::DType::kF32) {
  models::BertGraphOptions o;
  o.batch = 2;
  o.seq = 16;
  o.dtype = dtype;
  models::OptimizerConfig opt;
  opt.state_dtype = dtype;
  Step st{models::build_training_step(models::find_preset("bert-tiny"), o, opt), {}};
  st.dp.graph = &st.s.model.graph;
  st.dp.grads = st.s.grads.grads;
  for (auto [in, out] : st.s.optimizer.donated) st.dp.donated[out] = in;
  return st;
}

TEST(DataParallel, EveryCoreRunsTheSameComputeAndTheAllReduce) {
  auto hw = v3_8();
  auto st = tiny_step();
  auto c = compile_data_parallel_step(st.dp, hw, "bert-tiny");
  ASSERT_EQ(c.program.cores.size(), 8u);
  for (const auto& core : c.program.cores) EXPECT_EQ(core.instrs.size(), c.program.cores[0].instrs.size());
  // Every gradient is reduced: the parameters' fp32 bytes (plus tile padding).
  EXPECT_GE(c.allreduce_bytes, 4u * 4386178u);
  EXPECT_LT(c.allreduce_bytes, 4u * 4386178u * 2);
  uint64_t sends = 0;
  for (const auto& in : c.program.cores[3].instrs) sends += in.op == isa::Op::kSend;
  EXPECT_GT(sends, 0u);
}

// Parameters and the two AdamW moments stay resident: 12 bytes per parameter in fp32 (the
// gradients are temporaries); XLA_USE_BF16 halves it.
TEST(DataParallel, StaticMemoryOfParametersAndAdamWState) {
  auto hw = v3_8();
  auto f32 = compile_data_parallel_step(tiny_step().dp, hw, "f32");
  const double per_param = double(f32.memory.persistent_bytes) / 4386178.0;
  EXPECT_GT(per_param, 12.0);
  EXPECT_LT(per_param, 12.0 * 1.25);  // (8,128) tile padding of small tensors
  auto st16 = tiny_step(models::DType::kBF16);
  auto bf16 = compile_data_parallel_step(st16.dp, hw, "bf16");
  EXPECT_NEAR(double(bf16.memory.persistent_bytes) / double(f32.memory.persistent_bytes), 0.5, 0.05);
  EXPECT_GT(f32.memory.peak_bytes, f32.memory.persistent_bytes);
}

TEST(DataParallel, SimulatesOnBothEnginesAndTheAllReduceCostsTime) {
  auto hw = v3_8();
  auto st = tiny_step();
  auto eight = compile_data_parallel_step(st.dp, hw, "8 replicas");
  auto one = compile_data_parallel_step(st.dp, hw, "1 replica", 1);
  ASSERT_EQ(one.program.cores.size(), 1u);
  for (const char* engine : {"analytical", "systemc"}) {
    auto r8 = make_engine(engine, hw)->run(eight.program, nullptr);
    auto r1 = make_engine(engine, hw)->run(one.program, nullptr);
    EXPECT_GT(r8.device_cycles, r1.device_cycles) << engine;
    EXPECT_EQ(r8.cores.size(), 8u) << engine;
  }
}

TEST(DataParallel, CacheKeyFollowsTheShape) {
  auto hw = v3_8();
  auto a = tiny_step();
  models::BertGraphOptions o;
  o.batch = 2;
  o.seq = 32;
  Step b{models::build_training_step(models::find_preset("bert-tiny"), o, {}), {}};
  b.dp.graph = &b.s.model.graph;
  EXPECT_FALSE(compile_data_parallel_step(a.dp, hw, "a").key == compile_data_parallel_step(b.dp, hw, "b").key);
  EXPECT_EQ(compile_data_parallel_step(a.dp, hw, "a").key, compile_data_parallel_step(a.dp, hw, "again").key);
}

}  // namespace
}  // namespace tpusim::compiler
