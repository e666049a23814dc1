// Host offload (remat_tensors offload, qkv_proj_offloaded, minimal_offloaded; models/recompute.h,
// docs/training.md "Host offload"): on a miniature Llama of 8 layers at 16 sequences per device
// (activations outweigh parameters and optimizer state), what is offloaded leaves HBM
// and is held in host memory, exactly the offloaded tensors' bytes; the recomputation is the same
// as keeping them on the device; the copies over PCIe only add time; the engines agree; FSDP holds
// the same per device.
#include <gtest/gtest.h>

#include <string>

#include "base/config_error.h"
#include "sim/base/sim_error.h"
#include "tests/workloads/tiny_decoder.h"  // v6e8()
#include "workloads/loop/step_builder.h"
#include "workloads/loop/training_run.h"

namespace tpusim {
namespace {

using test::v6e8;

constexpr int kLayers = 8;
// Per device and layer at 16 x 256 tokens, bf16: q [16, 256, 8 x 32], k and v [16, 256, 4 x 32];
// the layer's input [16, 256, 256].
constexpr uint64_t kQkvBytes = 16 * 256 * (256 + 128 + 128) * 2;
constexpr uint64_t kInputBytes = 16 * 256 * 256 * 2;

WorkloadConfig deep(const std::string& extra) {
  return load_workload_config_text(
      "kind: training\nhw: v6e-8\nmodel: meta-llama/Llama-2-7b-hf\ntask: causal_lm\n"
      "model_config: {layers: 8, hidden: 256, heads: 8, kv_heads: 4, intermediate: 512, vocab: 1024}\n"
      "max_length: 256\nper_device_batch_size: 16\ndataset: {train: 'fixed:256:512'}\nsteps: 2\nprecision: bf16\n"
      "framework: jax\n" + extra,
      "deep_decoder.yaml");
}

TrainingRunResult run(const std::string& extra, const std::string& engine = "analytical") {
  TrainingRunOptions o;
  o.engine = engine;
  return run_training(v6e8(), deep(extra), o);
}

const ProgramRecord& train_program(const TrainingRunResult& r) {
  for (const ProgramRecord& p : r.programs)
    if (p.graph == GraphKind::kTrain) return p;
  return r.programs.at(0);
}

TEST(HostOffload, OffloadedTensorsLeaveHbmForHostMemory) {
  const TrainingRunResult kept = run("remat_policy: save_qkv_proj\n");
  const TrainingRunResult off = run("remat_policy: qkv_proj_offloaded\n");
  const TrainingRunResult full = run("remat_policy: full\n");
  EXPECT_EQ(kept.host_memory_bytes, 0u);
  // Every layer's q, k and v are in host memory when the backward begins.
  EXPECT_EQ(off.host_memory_bytes, kLayers * kQkvBytes);
  EXPECT_EQ(train_program(off).host_offload_bytes, kLayers * kQkvBytes);
  EXPECT_LT(off.peak_hbm_bytes, kept.peak_hbm_bytes);
  EXPECT_GE(off.peak_hbm_bytes, full.peak_hbm_bytes);  // at most two layers' q, k, v come back at once
  EXPECT_LE(off.peak_hbm_bytes, full.peak_hbm_bytes + 2 * kQkvBytes);
  // Not recomputed either way: the same flops as keeping them on the device.
  EXPECT_EQ(train_program(off).flops, train_program(kept).flops);
  EXPECT_LT(train_program(off).flops, train_program(full).flops);
  // The copies take PCIe and HBM bandwidth: they can only add time.
  EXPECT_GE(train_program(off).device_s, train_program(kept).device_s);
}

TEST(HostOffload, MinimalOffloadedAndCustomAreTheSameRule) {
  const TrainingRunResult mo = run("remat_policy: minimal_offloaded\n");
  const TrainingRunResult custom = run(
      "remat_policy: custom\nremat_tensors: {query_proj: offload, key_proj: offload, value_proj: offload, out_proj: offload, "
      "mlpwi: offload, mlpwo: offload}\n");
  EXPECT_EQ(mo.host_memory_bytes, custom.host_memory_bytes);
  EXPECT_EQ(mo.peak_hbm_bytes, custom.peak_hbm_bytes);
  EXPECT_EQ(train_program(mo).device_s, train_program(custom).device_s);
  // The layer's input too: one more [2, 256, 256] per layer.
  const TrainingRunResult qkv = run("remat_policy: qkv_proj_offloaded\n");
  const TrainingRunResult input = run(
      "remat_policy: custom\nremat_tensors: {decoder_layer_input: offload, query_proj: offload, key_proj: offload, "
      "value_proj: offload}\n");
  EXPECT_EQ(input.host_memory_bytes, qkv.host_memory_bytes + kLayers * kInputBytes);
  EXPECT_LT(input.peak_hbm_bytes, qkv.peak_hbm_bytes);
}

TEST(HostOffload, EnginesAgreeAndFsdpHoldsTheSame) {
  const std::string policy = "remat_policy: qkv_proj_offloaded\n";
  const TrainingRunResult a = run(policy), s = run(policy, "systemc");
  EXPECT_NEAR(train_program(s).device_s, train_program(a).device_s, 0.05 * train_program(s).device_s);
  EXPECT_EQ(s.host_memory_bytes, a.host_memory_bytes);
  const TrainingRunResult f = run("sharding: fsdp\nfsdp_wrap_layer_classes: [LlamaDecoderLayer]\n" + policy);
  EXPECT_EQ(f.host_memory_bytes, a.host_memory_bytes);
  EXPECT_EQ(train_program(f).host_offload_bytes, kLayers * kQkvBytes);
}

// The offloaded activations are pinned in the host's RAM beside its processes': a host of 1 GiB
// whose process takes 0.9 GiB has room for the run without offload, not for 8 devices' 32 MiB each.
TEST(HostOffload, OutOfHostRamWhenThePinnedActivationsDoNotFit) {
  HwConfig hw = v6e8();
  hw.host.ram_gib = 1;
  hw.host.process_ram_gib = 0.9;
  TrainingRunOptions o;
  o.engine = "analytical";
  EXPECT_NO_THROW(run_training(hw, deep("remat_policy: save_qkv_proj\n"), o));
  try {
    run_training(hw, deep("remat_policy: qkv_proj_offloaded\n"), o);
    ADD_FAILURE() << "no error";
  } catch (const SimError& e) {
    EXPECT_NE(std::string(e.what()).find("out of host RAM"), std::string::npos) << e.what();
  }
}

TEST(HostOffload, RefusesWhatCannotBe) {
  EXPECT_THROW(deep("remat_policy: custom\nremat_tensors: {decoder_layer_input: remat}\n"), ConfigError);
  EXPECT_THROW(deep("remat_tensors: {query_proj: offload}\n"), ConfigError);  // custom only
  EXPECT_THROW(load_workload_config_text("kind: training\nmodel: bert-base-uncased\nper_device_batch_size: 1\n"
                                         "dataset: {train: 'fixed:128:8'}\nremat_policy: qkv_proj_offloaded\n",
                                         "bert_offload.yaml"),
               ConfigError);
  // MaxText's names arrive through --maxtext-args.
  const WorkloadConfig m = load_workload_config_text(
      "kind: training\nhw: v6e-8\nmodel: meta-llama/Llama-2-7b-hf\ntask: causal_lm\nmax_length: 256\n"
      "per_device_batch_size: 1\ndataset: {train: 'fixed:256:64'}\n",
      "maxtext.yaml", {}, {}, "remat_policy=custom decoder_layer_input=offload query_proj=offload");
  EXPECT_EQ(m.training().remat_policy, models::RematPolicy::kCustom);
  EXPECT_EQ(m.training().remat_tensors.decoder_layer_input, models::RematChoice::kOffload);
  EXPECT_EQ(m.training().remat_tensors.query_proj, models::RematChoice::kOffload);
}

}  // namespace
}  // namespace tpusim
