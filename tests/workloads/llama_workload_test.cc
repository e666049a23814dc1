// Llama (models/llama.h) in the training driver: an inline miniature Llama-3 (`model_config` on the
// preset keeps its grouped-query attention) trains under FSDP with LlamaDecoderLayer as the wrapping
// class, and the workload rules (causal_lm for Llama, Llama's module classes).
#include <gtest/gtest.h>

#include <string>

#include "base/config_error.h"
#include "config/hw_loader.h"
#include "models/families.h"
#include "workloads/loop/training_run.h"
#include "workloads/config/workload_config.h"

namespace tpusim {
namespace {

WorkloadConfig tiny_llama(const std::string& extra, int len = 128) {
  const std::string l = std::to_string(len);
  return load_workload_config_text(
      "kind: training\nmodel: meta-llama/Meta-Llama-3-8B\ntask: causal_lm\n"
      "model_config: {layers: 2, hidden: 256, heads: 8, intermediate: 688, vocab: 1000}\n"
      "max_length: " + l + "\nper_device_batch_size: 2\ndataset: {train: 'fixed:" + l + ":32'}\nprecision: bf16\n" + extra,
      "tiny_llama.yaml");
}

TEST(LlamaWorkload, InlineArchitectureKeepsGroupedQueryAttention) {
  const WorkloadConfig w = tiny_llama("");
  const models::ModelArch p = resolve_model_arch(w.training());
  EXPECT_EQ(p.heads, 8);
  EXPECT_EQ(p.kv_heads, 2);  // Llama-3's 4 query heads per key/value head
  EXPECT_EQ(p.head_dim, 32);
  EXPECT_EQ(model_family(w.training())->id, models::ModelFamily::kLlama);
}

TEST(LlamaWorkload, TrainsUnderFsdpWrappingDecoderLayers) {
  const HwConfig hw = load_hw_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/v4-8.yaml");
  TrainingRunOptions o;
  o.engine = "analytical";
  const TrainingRunResult r =
      run_training(hw, tiny_llama("sharding: fsdp\nfsdp_wrap_layer_classes: [LlamaDecoderLayer]\nfsdp_grad_ckpt: true\n"), o);
  EXPECT_EQ(r.global_batch, 8u);  // 4 chips x 2
  uint64_t gathered = 0;
  for (const ProgramRecord& p : r.programs) gathered += p.allgather_bytes;
  EXPECT_GT(gathered, 0u);  // FSDP gathers the sharded layers
  EXPECT_GT(r.mfu, 0.0);
}

TEST(LlamaWorkload, RulesNameLlama) {
  try {
    tiny_llama("sharding: fsdp\nfsdp_wrap_layer_classes: [GPT2Block]\n");
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("LlamaDecoderLayer"), std::string::npos) << e.what();
  }
  EXPECT_THROW(load_workload_config_text("kind: training\nmodel: meta-llama/Llama-2-7b-hf\ndataset: {train: 'fixed:128:32'}\n",
                                         "llama_cls.yaml"),
               ConfigError);  // sequence_classification is not a Llama task here
}

// attention: flash runs the Llama step with one attention kernel per layer and direction, in less
// HBM than eager attention; auto is flash under framework jax; flash on a BERT model is refused.
TEST(LlamaWorkload, FlashAttention) {
  const HwConfig hw = load_hw_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/v6e-8.yaml");
  TrainingRunOptions o;
  o.engine = "analytical";
  const std::string blocks = "sa_block_q: 256\nsa_block_kv: 256\n";
  const TrainingRunResult eager = run_training(hw, tiny_llama(blocks + "attention: eager\n", 1024), o);
  const TrainingRunResult flash = run_training(hw, tiny_llama(blocks + "attention: flash\n", 1024), o);
  ASSERT_FALSE(flash.programs.empty());
  EXPECT_LT(flash.peak_hbm_bytes, eager.peak_hbm_bytes);
  EXPECT_EQ(flash.train_steps, eager.train_steps);
  EXPECT_TRUE(uses_flash_attention(tiny_llama("framework: jax\n").training()));
  EXPECT_FALSE(uses_flash_attention(tiny_llama("").training()));
  EXPECT_THROW(load_workload_config_text("kind: training\nmodel: bert-base-uncased\nattention: flash\nper_device_batch_size: 1\n"
                                         "dataset: {train: 'fixed:128:8'}\n", "bert_flash.yaml"),
               ConfigError);
}

// model_config writes a Gemma-shaped attention on the Llama builder: 16 query heads of 256 over a
// hidden size of 3072 (heads need not divide it when head_dim is given), 4 key/value heads; the
// parameter count follows; kv_heads on BERT and kv_heads not dividing heads are refused.
TEST(LlamaWorkload, ModelConfigSetsKeyValueHeadsAndHeadDim) {
  const WorkloadConfig w = load_workload_config_text(
      "kind: training\nmodel: meta-llama/Meta-Llama-3-8B\ntask: causal_lm\n"
      "model_config: {layers: 2, hidden: 3072, heads: 16, kv_heads: 4, head_dim: 256, intermediate: 1024, vocab: 1000}\n"
      "max_length: 128\nper_device_batch_size: 1\ndataset: {train: 'fixed:128:8'}\nprecision: bf16\n",
      "gemma_shaped.yaml");
  const models::ModelArch a = resolve_model_arch(w.training());
  EXPECT_EQ(a.kv_heads, 4);
  EXPECT_EQ(a.head_dim, 256);
  // q and o [3072 x 4096], k and v [3072 x 1024] per layer, besides the MLP, norms and embeddings.
  const uint64_t attention = 2 * (2 * 3072 * 4096 + 2 * 3072 * 1024);
  EXPECT_EQ(models::model_parameters(a), attention + 2 * (3 * 3072 * 1024 + 2 * 3072) + 3072 + 2 * 1000 * 3072);
  const HwConfig hw = load_hw_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/v6e-8.yaml");
  TrainingRunOptions o;
  o.engine = "analytical";
  EXPECT_GT(run_training(hw, w, o).train_steps, 0u);
  EXPECT_THROW(load_workload_config_text("kind: training\nmodel: bert-base-uncased\nmodel_config: {kv_heads: 4}\n"
                                         "per_device_batch_size: 1\ndataset: {train: 'fixed:128:8'}\n", "bert_kv.yaml"),
               ConfigError);
  EXPECT_THROW(load_workload_config_text("kind: training\nmodel: meta-llama/Meta-Llama-3-8B\ntask: causal_lm\n"
                                         "model_config: {heads: 8, kv_heads: 3}\nper_device_batch_size: 1\n"
                                         "dataset: {train: 'fixed:128:8'}\n", "kv3.yaml"),
               ConfigError);
}

// The context length is bounded by the model's positions, not by a global cap: Meta-Llama-3-8B
// takes 8,192 tokens and refuses 8,193 naming its max_position_embeddings; Llama-3.1 takes 131,072.
TEST(LlamaWorkload, ContextLengthIsTheModelsPositions) {
  auto load = [](const std::string& model, int64_t len) {
    return load_workload_config_text("kind: training\nmodel: " + model + "\ntask: causal_lm\nmax_length: " +
                                         std::to_string(len) + "\nper_device_batch_size: 1\n"
                                         "dataset: {train: 'fixed:" + std::to_string(len) + ":8'}\n",
                                     "long.yaml");
  };
  EXPECT_EQ(load("meta-llama/Meta-Llama-3-8B", 8192).training().max_length, 8192);
  EXPECT_EQ(load("meta-llama/Llama-3.1-8B", 131072).training().max_length, 131072);
  try {
    load("meta-llama/Meta-Llama-3-8B", 8193);
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("8192 position embeddings"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tpusim

namespace tpusim {
namespace {

// model_config writes any dense decoder on the Llama builder: a non-gated GELU MLP (two matrices a
// layer instead of three) and a tied LM head (the table counted once) change the count exactly and
// build; the MLPs the builder does not have are refused at their key.
TEST(LlamaWorkload, ModelConfigWritesTheMlpAndTheTie) {
  auto load = [](const std::string& mc) {
    return load_workload_config_text(
        "kind: training\nmodel: meta-llama/Llama-2-7b-hf\ntask: causal_lm\nmodel_config: {layers: 2, hidden: 256, heads: 8, "
        "intermediate: 512, vocab: 1000" + mc + "}\nmax_length: 128\nper_device_batch_size: 1\n"
        "dataset: {train: 'fixed:128:8'}\nprecision: bf16\n",
        "dense_decoder.yaml");
  };
  const uint64_t base = models::model_parameters(resolve_model_arch(load("").training()));
  const models::ModelArch gelu = resolve_model_arch(load(", gated_mlp: false, mlp_activation: gelu").training());
  EXPECT_EQ(gelu.activation, models::Activation::kGelu);
  EXPECT_EQ(models::model_parameters(gelu), base - 2 * 256 * 512);  // one of three MLP matrices a layer fewer
  const models::ModelArch tied = resolve_model_arch(load(", tie_word_embeddings: true").training());
  EXPECT_EQ(models::model_parameters(tied), base - 1000 * 256);
  EXPECT_EQ(resolve_model_arch(load(", mlp_activation: gelu_tanh").training()).activation, models::Activation::kGeGlu);
  for (const models::ModelArch& a : {gelu, tied}) {
    const models::ModelGraph m = models::make_model(a)->build_forward({.batch = 1, .seq = 16, .dtype = models::DType::kBF16});
    EXPECT_EQ(models::count_parameters(m.graph), models::model_parameters(a));
  }
  for (const char* bad : {", gated_mlp: false", ", mlp_activation: relu"}) EXPECT_THROW(load(bad), ConfigError) << bad;
  EXPECT_THROW(load_workload_config_text("kind: training\nmodel: bert-base-uncased\nmodel_config: {tie_word_embeddings: false}\n"
                                         "per_device_batch_size: 1\ndataset: {train: 'fixed:128:8'}\n",
                                         "bert_tie.yaml"),
               ConfigError);
}

}  // namespace
}  // namespace tpusim
