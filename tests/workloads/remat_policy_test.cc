// Rematerialization policies (models/remat_policy.h, docs/training.md "Rematerialization"): what each
// of MaxText's policies keeps of a decoder layer and recomputes, on a miniature Llama under data
// parallelism and FSDP: the recomputed flops are exactly the forward matmuls not kept, memory falls
// as less is kept, and `full` is fsdp_grad_ckpt.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "base/config_error.h"
#include "config/hw_loader.h"
#include "models/remat_policy.h"
#include "workloads/config/workload_config.h"
#include "tests/workloads/tiny_decoder.h"
#include "workloads/loop/step_builder.h"
#include "workloads/loop/training_run.h"

namespace tpusim {
namespace {

using test::tiny_decoder;
using test::train_step_graph;
using test::v6e8;

WorkloadConfig tiny(const std::string& extra) { return tiny_decoder(extra); }

std::unique_ptr<StepGraph> step(const std::string& extra) {
  return train_step_graph(tiny(extra));
}

// The forward's matmul flops inside the decoder layers that policy `p` does not keep, but for
// down_proj's: its output feeds only the layer's output (the next layer's input, kept), so the
// backward never needs it recomputed. MaxText's minimal keeps the projections (dots without batch
// dimensions) and recomputes attention.
uint64_t layer_matmul_flops(const std::string& extra, models::RematPolicy p) {
  const std::unique_ptr<StepGraph> none = step(extra);
  const models::RematTensors kept = models::remat_tensors(p);
  uint64_t f = 0;
  for (const models::ModuleRange& u : none->fwd.units) {
    if (!u.layer) continue;
    for (int v = u.first; v <= u.last; ++v) {
      const models::Node& n = none->fwd.graph.node(v);
      const bool down = n.name.size() > 14 && n.name.compare(n.name.size() - 14, 14, ".mlp.down_proj") == 0;
      const std::optional<models::RematTensor> x = models::remat_tensor_of(n);
      if ((!x || kept[size_t(*x)] == models::RematChoice::kRemat) && !down)
        f += n.kind == models::OpKind::kDot ? models::dot_flops(none->fwd.graph, n) : models::attention_flops(none->fwd.graph, n);
    }
  }
  return f;
}

TEST(RematPolicy, RecomputesExactlyTheForwardMatmulsItDoesNotKeep) {
  for (const std::string attention : {"eager", "flash"}) {
    SCOPED_TRACE(attention);
    const std::string a = "attention: " + attention + "\n";
    EXPECT_EQ(step(a)->recompute_flops, 0u);
    for (models::RematPolicy p : {models::RematPolicy::kFull, models::RematPolicy::kMinimal,
                                  models::RematPolicy::kSaveDotExceptMlp, models::RematPolicy::kSaveQkvProj}) {
      SCOPED_TRACE(enum_name(p));
      const uint64_t recomputed = step(a + "remat_policy: " + std::string(enum_name(p)) + "\n")->recompute_flops;
      EXPECT_EQ(recomputed, layer_matmul_flops(a, p));
    }
  }
}

TEST(RematPolicy, MemoryFallsAsLessIsKeptAndTheRecomputationIsNotModelFlops) {
  TrainingRunOptions o;
  o.engine = "analytical";
  auto run = [&](const std::string& policy) { return run_training(v6e8(), tiny("remat_policy: " + policy + "\n"), o); };
  const TrainingRunResult none = run("none"), minimal = run("minimal"), qkv = run("save_qkv_proj"), full = run("full");
  EXPECT_GT(none.peak_hbm_bytes, minimal.peak_hbm_bytes);
  EXPECT_GT(minimal.peak_hbm_bytes, qkv.peak_hbm_bytes);
  EXPECT_GT(none.peak_hbm_bytes, full.peak_hbm_bytes);  // (full vs qkv: at this size the peak moves to the
                                                        // recomputation's temporaries; no order between them)
  // The hardware does the recomputation on top of the model's flops; MFU counts the model's only.
  EXPECT_EQ(full.programs[0].flops - none.programs[0].flops, step("remat_policy: full\n")->recompute_flops);
  EXPECT_GT(full.programs[0].device_s, none.programs[0].device_s);
  ASSERT_FALSE(full.steps.empty());
  EXPECT_EQ(full.steps.back().model_flops, none.steps.back().model_flops);
  // (Flash attention's backward recomputes its probabilities with or without a policy: subtracted alike.)
  EXPECT_EQ((full.steps.back().flops - full.steps.back().model_flops) - (none.steps.back().flops - none.steps.back().model_flops),
            step("remat_policy: full\n")->recompute_flops);
  // custom keeping query, key and value is save_qkv_proj.
  const TrainingRunResult custom = run_training(
      v6e8(), tiny("remat_policy: custom\nremat_tensors: {query_proj: device, key_proj: device, value_proj: device}\n"), o);
  EXPECT_EQ(custom.peak_hbm_bytes, qkv.peak_hbm_bytes);
  EXPECT_EQ(custom.programs[0].device_s, qkv.programs[0].device_s);
}

TEST(RematPolicy, FullIsFsdpGradCkpt) {
  TrainingRunOptions o;
  o.engine = "analytical";
  const std::string fsdp = "sharding: fsdp\nfsdp_wrap_layer_classes: [LlamaDecoderLayer]\n";
  const TrainingRunResult ckpt = run_training(v6e8(), tiny(fsdp + "fsdp_grad_ckpt: true\n"), o);
  const TrainingRunResult full = run_training(v6e8(), tiny(fsdp + "remat_policy: full\n"), o);
  const TrainingRunResult qkv = run_training(v6e8(), tiny(fsdp + "remat_policy: save_qkv_proj\n"), o);
  EXPECT_EQ(ckpt.programs[0].device_s, full.programs[0].device_s);
  EXPECT_EQ(ckpt.peak_hbm_bytes, full.peak_hbm_bytes);
  EXPECT_EQ(ckpt.programs[0].flops, full.programs[0].flops);
  EXPECT_LT(qkv.programs[0].flops, full.programs[0].flops);  // the kept projections are not recomputed
  EXPECT_GT(qkv.peak_hbm_bytes, full.peak_hbm_bytes);
}

TEST(RematPolicy, RefusesWhatIsNotModelled) {
  EXPECT_THROW(tiny("remat_tensors: {query_proj: device}\n"), ConfigError);  // custom only
  EXPECT_THROW(tiny("sharding: fsdp\nfsdp_grad_ckpt: true\nremat_policy: minimal\n"), ConfigError);
  EXPECT_THROW(load_workload_config_text("kind: training\nmodel: bert-base-uncased\nper_device_batch_size: 1\n"
                                         "dataset: {train: 'fixed:128:8'}\nremat_policy: minimal\n",
                                         "bert_remat.yaml"),
               ConfigError);
  EXPECT_NO_THROW(load_workload_config_text("kind: training\nmodel: bert-base-uncased\nper_device_batch_size: 1\n"
                                            "dataset: {train: 'fixed:128:8'}\nremat_policy: full\n",
                                            "bert_remat_full.yaml"));
}

}  // namespace
}  // namespace tpusim
