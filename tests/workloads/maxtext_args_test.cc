// MaxText's command line (`--maxtext-args`, workloads/config/maxtext_args.h): a recipe's arguments give
// the workload the shipped YAML writes; keys MaxText has and tpusim ignores are listed; settings it
// does not model are refused at the key.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "base/config_error.h"
#include "workloads/config/maxtext_args.h"
#include "workloads/config/workload_config.h"

namespace tpusim {
namespace {

WorkloadConfig from_maxtext(const std::string& args) {
  return load_workload_config_text(maxtext_base_workload(), "--maxtext-args", {}, {}, args);
}

const char* kRecipe =
    "model_name=llama3.1-8b per_device_batch_size=1 max_target_length=8192 ici_fsdp_parallelism=-1 "
    "remat_policy=full attention=flash steps=3";

TEST(MaxTextArgs, ARecipeIsTheShippedWorkload) {
  const TrainingWorkload m = from_maxtext(kRecipe).training();
  const TrainingWorkload y =
      load_workload_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/workloads/llama3.1_8b_8k_flash_v6e-8.yaml").training();
  EXPECT_EQ(m.model, y.model);
  EXPECT_EQ(m.max_length, y.max_length);
  EXPECT_EQ(m.per_device_batch_size, y.per_device_batch_size);
  EXPECT_EQ(m.sharding, y.sharding);
  EXPECT_EQ(m.fsdp_wrap_layer_classes, y.fsdp_wrap_layer_classes);
  EXPECT_EQ(m.attention, y.attention);
  EXPECT_EQ(m.framework, y.framework);
  EXPECT_EQ(m.precision, y.precision);
  EXPECT_EQ(m.optimizer, y.optimizer);
  EXPECT_EQ(effective_remat_policy(m), effective_remat_policy(y));
  EXPECT_EQ(m.steps, 3u);
  EXPECT_EQ(m.mesh.fsdp, -1);
  EXPECT_EQ(m.dataset.train, "fixed:8192");
}

TEST(MaxTextArgs, MeshesQuantizationAndTheModelsOwnKeys) {
  const TrainingWorkload t = from_maxtext("model_name=mistral-7b ici_fsdp_parallelism=1 ici_data_parallelism=-1 "
                                          "dcn_data_parallelism=2 quantization=int8 attention=dot_product dtype=float32 "
                                          "per_device_batch_size=2.0 opt_type=adam_pax")
                              .training();
  EXPECT_EQ(t.model, "mistralai/Mistral-7B-v0.1");
  EXPECT_TRUE(t.fsdp_wrap_layer_classes.empty());  // data parallelism: no FSDP units
  EXPECT_EQ(t.sharding, Sharding::kDataParallel);
  EXPECT_EQ(t.mesh.data, -1);
  EXPECT_EQ(t.dcn_mesh.data, 2);
  EXPECT_EQ(t.quantization, Quantization::kInt8);
  EXPECT_EQ(t.attention, Attention::kEager);
  EXPECT_EQ(t.precision, Precision::kFp32);
  EXPECT_EQ(t.per_device_batch_size, 2u);
  EXPECT_EQ(t.optimizer, models::OptimizerKind::kAdamW);
}

// A sequence axis shards the weights as fsdp does (MaxText: `embed` over fsdp and sequence), whatever
// the fsdp axis's size.
TEST(MaxTextArgs, ASequenceAxisIsSharded) {
  const TrainingWorkload t = from_maxtext("model_name=llama3.1-8b ici_sequence_parallelism=2").training();
  EXPECT_EQ(t.mesh.sequence, 2);
  EXPECT_EQ(t.mesh.fsdp, -1);
  EXPECT_EQ(t.sharding, Sharding::kFsdp);
  const TrainingWorkload u =
      from_maxtext("model_name=llama3.1-8b ici_fsdp_parallelism=1 ici_data_parallelism=-1 ici_sequence_parallelism=4").training();
  EXPECT_EQ(u.sharding, Sharding::kFsdp);
  EXPECT_FALSE(u.fsdp_wrap_layer_classes.empty());  // the decoder layer stays the unit
  EXPECT_EQ(from_maxtext("model_name=llama3.1-8b ici_sequence_parallelism=1").training().mesh.sequence, 1);
  // Its newer name, and the chunks' layout (load-balanced unless MaxText's flag says False).
  const TrainingWorkload c =
      from_maxtext("model_name=llama3.1-8b ici_context_parallelism=2 context_parallel_load_balance=False").training();
  EXPECT_EQ(c.mesh.sequence, 2);
  EXPECT_EQ(c.sharding, Sharding::kFsdp);
  EXPECT_FALSE(c.context_parallel_load_balance);
  EXPECT_TRUE(t.context_parallel_load_balance);
}

TEST(MaxTextArgs, IgnoredAndUnknownKeysAreListedNotRefused) {
  const TrainingWorkload t =
      from_maxtext(std::string(kRecipe) + " run_name=mine base_output_directory=gs://b learning_rate=3e-4 future_key=1").training();
  EXPECT_EQ(t.ignored_keys, (std::vector<std::string>{"maxtext:base_output_directory", "maxtext:future_key",
                                                      "maxtext:learning_rate", "maxtext:run_name"}));
}

TEST(MaxTextArgs, ABaseYmlStyleFileIsTheSameAsTheCommandLine) {
  const std::string path = ::testing::TempDir() + "/maxtext_override.yml";
  {
    std::ofstream f(path);
    f << "# a base.yml override\nmodel_name: llama3.1-8b\nper_device_batch_size: 1\nmax_target_length: 8192\n"
         "ici_fsdp_parallelism: -1\nremat_policy: 'full'\nattention: \"flash\"\nsteps: 3\n";
  }
  const TrainingWorkload a = from_maxtext(path).training(), b = from_maxtext(kRecipe).training();
  EXPECT_EQ(a.model, b.model);
  EXPECT_EQ(a.max_length, b.max_length);
  EXPECT_EQ(a.mesh.fsdp, b.mesh.fsdp);
  EXPECT_EQ(a.attention, b.attention);
  std::remove(path.c_str());
}

TEST(MaxTextArgs, OnTopOfAWorkloadOnlyTheGivenKeysChange) {
  const TrainingWorkload t = load_workload_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/workloads/llama3_8b_v6e-8.yaml",
                                                  {}, {}, "per_device_batch_size=2 remat_policy=minimal")
                                 .training();
  EXPECT_EQ(t.per_device_batch_size, 2u);
  EXPECT_EQ(t.model, "meta-llama/Meta-Llama-3-8B");
  EXPECT_EQ(t.framework, FrameworkKind::kTorchXla);
  EXPECT_FALSE(t.fsdp_grad_ckpt);  // remat_policy is MaxText's one rematerialization setting
  EXPECT_EQ(effective_remat_policy(t), models::RematPolicy::kMinimal);
}

void expect_refused(const std::string& args, const std::string& key, const std::string& needle) {
  try {
    from_maxtext(args);
    ADD_FAILURE() << "accepted: " << args;
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.info().yaml_path, key) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(MaxTextArgs, SettingsNotModelledAreRefusedAtTheKey) {
  expect_refused("model_name=llama3.1-8b dcn_fsdp_parallelism=2", "dcn_fsdp_parallelism", "only data parallelism");
  expect_refused("model_name=gpt3-6b", "model_name", "gpt3-175b");
  EXPECT_EQ(from_maxtext("model_name=gpt3-175b").training().model, "gpt3-175b");
  // A fraction is taken as is: whether it makes whole examples depends on the mesh over the slice
  // (shard_examples, checked when the run starts: tests/workloads/sequence_parallel_test.cc).
  EXPECT_EQ(from_maxtext("model_name=llama2-7b per_device_batch_size=0.25 ici_sequence_parallelism=4").training().per_device_batch_size, 0.25);
  expect_refused("model_name=llama2-7b quantization=intmp", "quantization", "int8");
  expect_refused("model_name=llama2-7b steps", "steps", "key=value");
  EXPECT_NO_THROW(from_maxtext("model_name=llama2-7b dcn_fsdp_parallelism=1 ici_expert_parallelism=1"));
}

}  // namespace
}  // namespace tpusim
