// Hugging Face TrainingArguments / Accelerate names (workloads/config/hf_arguments.h). Mappings onto keys
// that this branch's schema may not have yet (eval_strategy, logging_steps, ...) are checked on the
// rewritten tree; the others through the whole loader.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "config/tree.h"
#include "tests/config/test_util.h"
#include "workloads/config/hf_arguments.h"
#include "workloads/config/workload_config.h"

namespace tpusim {
namespace {

using testing::config_error_of;
using testing::contains;

const std::string kFixtures = std::string(TPUSIM_SOURCE_DIR) + "/tests/config/hf/";

const char* kBase = R"(kind: training
model: bert-tiny
dataset: {train: "fixed:64:256"}
)";

// The training schema's keys and the native keys another change adds (optimizer values aside).
std::vector<std::string> native_keys() {
  std::vector<std::string> k = training_workload_keys();
  for (const char* extra : {"eval_precision", "eval_strategy", "eval_steps", "logging_steps", "auto_find_batch_size",
                            "fsdp_min_num_params", "fsdp_wrap_layer_classes"})
    if (std::find(k.begin(), k.end(), extra) == k.end()) k.push_back(extra);
  return k;
}

struct Rewritten {
  config::Node tree;
  HfRewrite hf;
  std::string get(const std::string& key) const {
    const config::Node* n = tree.find(key);
    if (!n) return "<absent>";
    return n->kind == config::Node::Kind::Scalar ? n->scalar : n->flow();
  }
};

Rewritten rewrite(const std::string& extra) {
  Rewritten r;
  r.tree = config::parse_yaml(std::string(kBase) + extra, "wl/hf.yaml");
  r.hf = rewrite_hf_arguments(r.tree, native_keys());
  return r;
}

ConfigErrorInfo rewrite_error(const std::string& extra, std::string* what = nullptr) {
  return config_error_of([&] { rewrite(extra); }, what);
}

WorkloadConfig load(const std::string& extra, const std::string& training_args = {}) {
  return load_workload_config_text(std::string(kBase) + extra, "wl/hf.yaml", {}, training_args);
}

TEST(HfArguments, Renames) {
  const auto r = rewrite("per_device_train_batch_size: 8\nper_device_eval_batch_size: 16\ndataloader_drop_last: true\n"
                         "gradient_accumulation_steps: 2\nseed: 42\nsplit_batches: true\n");
  EXPECT_EQ(r.get("per_device_batch_size"), "8");
  EXPECT_EQ(r.get("eval_per_device_batch_size"), "16");
  EXPECT_EQ(r.get("drop_last"), "true");
  EXPECT_EQ(r.get("gradient_accumulation_steps"), "2");
  EXPECT_EQ(r.get("seed"), "42");
  EXPECT_EQ(r.get("split_batches"), "true");
  EXPECT_EQ(r.get("per_device_train_batch_size"), "<absent>");
  // The rewritten node keeps the line the user wrote.
  EXPECT_EQ(r.tree.find("per_device_batch_size")->line, 4);
}

TEST(HfArguments, WholeLoaderAndErrorsNameTheKeyAsWritten) {
  const WorkloadConfig w = load("per_device_train_batch_size: 8\nper_device_eval_batch_size: 16\nnum_train_epochs: 2.0\n");
  EXPECT_EQ(w.training().per_device_batch_size, 8u);
  EXPECT_EQ(w.training().eval_per_device_batch_size, 16u);
  EXPECT_EQ(w.training().epochs, 2u);
  const auto e = config_error_of([] { load("per_device_train_batch_size: 0\n"); });
  EXPECT_EQ(e.yaml_path, "per_device_train_batch_size");
  EXPECT_EQ(e.file, "wl/hf.yaml");
  EXPECT_EQ(e.line, 4);
}

TEST(HfArguments, Epochs) {
  EXPECT_EQ(rewrite("num_train_epochs: 3.0\n").get("epochs"), "3");
  std::string what;
  const auto e = rewrite_error("num_train_epochs: 2.5\n", &what);
  EXPECT_EQ(e.yaml_path, "num_train_epochs");
  EXPECT_EQ(e.line, 4);
  EXPECT_TRUE(contains(what, "max_steps")) << what;
}

TEST(HfArguments, MaxStepsCountsOptimizerSteps) {
  const auto r = rewrite("max_steps: 100\ngradient_accumulation_steps: 4\nnum_train_epochs: 3.0\n");
  EXPECT_EQ(r.get("steps"), "400");
  EXPECT_EQ(r.get("epochs"), "1048576");  // Trainer: max_steps overrides num_train_epochs
  EXPECT_TRUE(std::count(r.hf.ignored_keys.begin(), r.hf.ignored_keys.end(), "num_train_epochs"));
  const auto none = rewrite("max_steps: -1\n");
  EXPECT_EQ(none.get("steps"), "<absent>");
  EXPECT_EQ(none.get("epochs"), "<absent>");
  EXPECT_EQ(rewrite("max_steps: 10\nepochs: 2\n").get("epochs"), "2");  // a written epochs limit stays
}

TEST(HfArguments, Precision) {
  EXPECT_EQ(rewrite("bf16: true\n").get("precision"), "bf16");
  EXPECT_EQ(rewrite("bf16: false\n").get("precision"), "<absent>");
  EXPECT_EQ(rewrite("mixed_precision: bf16\n").get("precision"), "bf16");
  EXPECT_EQ(rewrite("mixed_precision: 'no'\n").get("precision"), "fp32");
  EXPECT_EQ(rewrite("mixed_precision: fp32\n").get("precision"), "fp32");
  EXPECT_EQ(rewrite("mixed_precision: bf16\ndowncast_bf16: 'yes'\n").get("precision"), "bf16_downcast");
  EXPECT_EQ(rewrite("bf16: true\ndowncast_bf16: true\n").get("precision"), "bf16_downcast");
  EXPECT_EQ(rewrite("bf16_full_eval: true\n").get("eval_precision"), "bf16");
  EXPECT_EQ(rewrite_error("downcast_bf16: true\n").yaml_path, "downcast_bf16");
  std::string what;
  const auto fp16 = rewrite_error("fp16: true\n", &what);
  EXPECT_EQ(fp16.yaml_path, "fp16");
  EXPECT_EQ(fp16.line, 4);
  EXPECT_TRUE(contains(what, "bf16")) << what;
  EXPECT_EQ(rewrite_error("mixed_precision: fp16\n").yaml_path, "mixed_precision");
  // Off values of unsupported keys are accepted and listed.
  EXPECT_EQ(rewrite("fp16: false\n").hf.ignored_keys, std::vector<std::string>{"fp16"});
}

TEST(HfArguments, PaddingAndOptimizer) {
  EXPECT_EQ(rewrite("pad_to_multiple_of: 32\n").get("padding"), "multiple_of:32");
  for (const char* o : {"adamw_torch", "adamw_hf", "adamw_torch_fused", "adamw_torch_xla", "adamw_apex_fused"})
    EXPECT_EQ(rewrite(std::string("optim: ") + o + "\n").get("optimizer"), "adamw") << o;
  EXPECT_EQ(rewrite("optim: adafactor\n").get("optimizer"), "adafactor");
  EXPECT_EQ(rewrite("optim: sgd\n").get("optimizer"), "sgd");
  EXPECT_EQ(rewrite("optim: lamb\n").get("optimizer"), "lamb");
  EXPECT_EQ(rewrite("adafactor: true\n").get("optimizer"), "adafactor");
  std::string what;
  const auto e = rewrite_error("optim: adamw_bnb_8bit\n", &what);
  EXPECT_EQ(e.yaml_path, "optim");
  EXPECT_TRUE(contains(what, "adamw_torch_xla")) << what;
}

TEST(HfArguments, Fsdp) {
  const auto r = rewrite("fsdp: full_shard auto_wrap\nfsdp_config:\n  xla: true\n  xla_fsdp_grad_ckpt: true\n"
                         "  min_num_params: 1000000\n  transformer_layer_cls_to_wrap: BertLayer\n  xla_fsdp_settings: {}\n"
                         "  fsdp_backward_prefetch: backward_pre\n");
  EXPECT_EQ(r.get("sharding"), "fsdp");
  EXPECT_EQ(r.get("fsdp_grad_ckpt"), "true");
  EXPECT_EQ(r.get("fsdp_min_num_params"), "1000000");
  EXPECT_EQ(r.get("fsdp_wrap_layer_classes"), "[BertLayer]");
  EXPECT_EQ(r.hf.ignored_keys, (std::vector<std::string>{"fsdp_config.fsdp_backward_prefetch", "fsdp_config.xla_fsdp_settings"}));
  EXPECT_EQ(rewrite("fsdp: [full_shard]\nfsdp_config: {xla: true, transformer_layer_cls_to_wrap: [BertLayer, BertEmbeddings]}\n")
                .get("fsdp_wrap_layer_classes"), "[BertLayer, BertEmbeddings]");
  std::string what;
  const auto no_xla = rewrite_error("fsdp: full_shard\n", &what);
  EXPECT_EQ(no_xla.yaml_path, "fsdp");
  EXPECT_TRUE(contains(what, "xla: true")) << what;
  EXPECT_EQ(rewrite_error("fsdp: full_shard\nfsdp_config: {xla: false}\n").yaml_path, "fsdp_config.xla");
  EXPECT_EQ(rewrite_error("fsdp: shard_grad_op\nfsdp_config: {xla: true}\n").yaml_path, "fsdp");
  // FSDPv2: torch_xla's SPMD mode with sharding fsdp.
  const auto v2 = rewrite("fsdp: full_shard\nfsdp_config: {xla: true, xla_fsdp_v2: true, xla_fsdp_grad_ckpt: true}\n");
  EXPECT_EQ(v2.get("sharding"), "fsdp");
  EXPECT_EQ(v2.get("spmd"), "true");
  EXPECT_EQ(v2.get("fsdp_grad_ckpt"), "true");
  EXPECT_EQ(rewrite("fsdp: full_shard\nfsdp_config: {xla: true, xla_fsdp_v2: false}\n").get("spmd"), "<absent>");
  // Off: fsdp_config is listed as ignored.
  const auto off = rewrite("fsdp: ''\nfsdp_config: {xla: true}\n");
  EXPECT_EQ(off.get("sharding"), "<absent>");
  EXPECT_EQ(off.hf.ignored_keys, std::vector<std::string>{"fsdp_config"});
}

TEST(HfArguments, FsdpConfigFromAJsonFile) {
  const std::string dir = ::testing::TempDir() + "hf_fsdp/";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "fsdp.json") << R"({"fsdp_xla": true, "fsdp_xla_fsdp_grad_ckpt": true})";
  config::Node tree = config::parse_yaml(std::string(kBase) + "fsdp: full_shard\nfsdp_config: fsdp.json\n", dir + "wl.yaml");
  rewrite_hf_arguments(tree, native_keys());
  EXPECT_EQ(tree.find("sharding")->scalar, "fsdp");
  EXPECT_EQ(tree.find("fsdp_grad_ckpt")->scalar, "true");
}

TEST(HfArguments, EvalAndLogging) {
  const auto steps = rewrite("eval_strategy: steps\nlogging_steps: 50\n");
  EXPECT_EQ(steps.get("eval_strategy"), "steps");
  EXPECT_EQ(steps.get("eval_steps"), "50");  // Trainer: eval_steps defaults to logging_steps
  EXPECT_EQ(rewrite("evaluation_strategy: epoch\n").get("eval_strategy"), "epoch");
  EXPECT_EQ(rewrite("eval_strategy: steps\neval_steps: 20\nlogging_steps: 50\n").get("eval_steps"), "20");
  EXPECT_EQ(rewrite_error("eval_steps: 0.1\n").yaml_path, "eval_steps");
  const auto no_log = rewrite("logging_strategy: 'no'\nlogging_steps: 500\n");
  EXPECT_EQ(no_log.get("logging_steps"), "0");
  EXPECT_EQ(no_log.hf.ignored_keys, std::vector<std::string>{"logging_steps"});
  EXPECT_EQ(rewrite("logging_strategy: epoch\n").get("logging_steps"), "0");
  EXPECT_EQ(rewrite("logging_strategy: steps\n").get("logging_steps"), "<absent>");  // no Trainer default imposed
  EXPECT_EQ(rewrite("auto_find_batch_size: true\n").get("auto_find_batch_size"), "true");
}

TEST(HfArguments, AcceleratorConfigDebugProcesses) {
  const auto r = rewrite("accelerator_config: {split_batches: true, even_batches: false, use_seedable_sampler: true}\n"
                         "debug: tpu_metrics_debug underflow_overflow\nnum_processes: 8\n");
  EXPECT_EQ(r.get("split_batches"), "true");
  EXPECT_EQ(r.get("even_batches"), "false");
  EXPECT_EQ(r.get("tpu_metrics_debug"), "true");
  EXPECT_EQ(r.get("num_processes"), "8");
  EXPECT_EQ(r.hf.ignored_keys, (std::vector<std::string>{"accelerator_config.use_seedable_sampler", "debug"}));
  EXPECT_EQ(rewrite("debug: [tpu_metrics_debug]\n").get("tpu_metrics_debug"), "true");
  EXPECT_EQ(rewrite_error("debug: true\n").yaml_path, "debug");  // Accelerate's debug mode
  EXPECT_EQ(rewrite_error("distributed_type: MULTI_GPU\n").yaml_path, "distributed_type");
}

TEST(HfArguments, ConflictsNameBothKeys) {
  std::string what;
  const auto e = rewrite_error("per_device_batch_size: 16\nper_device_train_batch_size: 8\n", &what);
  EXPECT_EQ(e.yaml_path, "per_device_train_batch_size");
  EXPECT_EQ(e.line, 5);
  EXPECT_TRUE(contains(what, "'per_device_batch_size' (wl/hf.yaml:4)")) << what;
  const auto mp = rewrite_error("bf16: true\nmixed_precision: 'no'\n", &what);
  EXPECT_EQ(mp.yaml_path, "mixed_precision");
  EXPECT_EQ(mp.value, "no");  // the value as written, not what it maps to
  EXPECT_TRUE(contains(what, "'bf16' (wl/hf.yaml:4)")) << what;
  EXPECT_EQ(rewrite_error("eval_strategy: steps\nevaluation_strategy: epoch\n").yaml_path, "evaluation_strategy");
  // The same setting twice is fine.
  EXPECT_EQ(rewrite("per_device_batch_size: 8\nper_device_train_batch_size: 8.0\n").get("per_device_batch_size"), "8");
  EXPECT_EQ(rewrite("bf16: true\nmixed_precision: bf16\n").get("precision"), "bf16");
}

TEST(HfArguments, NullIsUnsetAndIgnoredKeysAreListed) {
  const auto r = rewrite("per_gpu_train_batch_size: null\nlearning_rate: 2.0e-5\nreport_to: [tensorboard]\n"
                         "output_dir: out\ntorch_compile: false\n");
  EXPECT_EQ(r.get("per_device_batch_size"), "<absent>");
  EXPECT_EQ(r.hf.ignored_keys, (std::vector<std::string>{"learning_rate", "output_dir", "report_to", "torch_compile"}));
  EXPECT_EQ(load("per_device_batch_size: 8\nweight_decay: 0.01\nlearning_rate: 1.0e-4\n").training().ignored_keys,
            (std::vector<std::string>{"learning_rate", "weight_decay"}));
  EXPECT_EQ(rewrite_error("torch_compile: true\n").yaml_path, "torch_compile");
}

TEST(HfArguments, TyposSuggestTheRightName) {
  std::string what;
  config_error_of([] { load("per_device_batch_size: 8\nper_device_eval_batch_sise: 8\n"); }, &what);
  EXPECT_TRUE(contains(what, "did you mean 'per_device_eval_batch_size' (Trainer's name for eval_per_device_batch_size)?")) << what;
  config_error_of([] { load("per_device_batch_sise: 8\n"); }, &what);
  EXPECT_TRUE(contains(what, "did you mean 'per_device_batch_size'?")) << what;
  config_error_of([] { load("per_device_batch_size: 8\ngradient_acumulation_steps: 2\n"); }, &what);
  EXPECT_TRUE(contains(what, "did you mean 'gradient_accumulation_steps'")) << what;
}

TEST(HfArguments, FullTrainingArgumentsDumpMapsTrainerDefaults) {
  config::Node tree = config::parse_yaml(kBase, "wl/hf.yaml");
  const config::Node args = config::parse_yaml(config::read_file(kFixtures + "training_args_full.json"), "training_args_full.json");
  EXPECT_GT(args.entries.size(), 100u);
  apply_training_args(tree, args, native_keys());
  const HfRewrite hf = rewrite_hf_arguments(tree, native_keys());
  auto get = [&](const char* k) { return tree.find(k) ? tree.find(k)->flow() : "<absent>"; };
  EXPECT_EQ(get("per_device_batch_size"), "8");
  EXPECT_EQ(get("eval_per_device_batch_size"), "8");
  EXPECT_EQ(get("epochs"), "3");
  EXPECT_EQ(get("steps"), "<absent>");      // max_steps -1: no cap
  EXPECT_EQ(get("precision"), "<absent>");  // bf16 false: the workload's precision stays
  EXPECT_EQ(get("optimizer"), "adamw");
  EXPECT_EQ(get("eval_strategy"), "no");
  EXPECT_EQ(get("logging_steps"), "500");
  EXPECT_EQ(get("eval_steps"), "<absent>");
  EXPECT_EQ(get("seed"), "42");
  EXPECT_EQ(get("drop_last"), "false");
  EXPECT_EQ(get("split_batches"), "false");
  EXPECT_EQ(get("even_batches"), "true");
  EXPECT_EQ(get("sharding"), "<absent>");
  EXPECT_EQ(get("tpu_metrics_debug"), "false");
  EXPECT_EQ(get("model"), "bert-tiny");
  for (const char* k : {"learning_rate", "output_dir", "fp16", "fsdp_config", "hub_token", "accelerator_config.use_seedable_sampler"})
    EXPECT_TRUE(std::count(hf.ignored_keys.begin(), hf.ignored_keys.end(), k)) << k;
  EXPECT_TRUE(std::is_sorted(hf.ignored_keys.begin(), hf.ignored_keys.end()));
  // Every field of the dump is a known name.
  for (const auto& e : args.entries) EXPECT_TRUE(find_hf_key(e.key)) << e.key;
}

TEST(HfArguments, TrainingArgsOverrideTheWorkloadHoweverSpelled) {
  const std::string dir = ::testing::TempDir() + "hf_args/";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "args.json") << R"({"per_device_train_batch_size": 4, "bf16": false, "dataloader_drop_last": true,
    "num_train_epochs": 2.0, "learning_rate": 1e-4, "max_steps": -1})";
  const WorkloadConfig w = load("per_device_batch_size: 16\nprecision: bf16\nepochs: 5\n", dir + "args.json");
  EXPECT_EQ(w.training().per_device_batch_size, 4u);
  EXPECT_EQ(w.training().precision, Precision::kBf16);  // bf16: false is Trainer's default: it sets nothing
  EXPECT_TRUE(w.training().drop_last);
  EXPECT_EQ(w.training().epochs, 2u);
  EXPECT_EQ(w.training().ignored_keys, std::vector<std::string>{"learning_rate"});
  // An alias in the workload is replaced too (no conflict), and max_steps takes the merged accumulation.
  std::ofstream(dir + "args2.json") << R"({"per_device_batch_size": 4, "max_steps": 10})";
  const WorkloadConfig w2 = load("per_device_train_batch_size: 16\ngradient_accumulation_steps: 3\n", dir + "args2.json");
  EXPECT_EQ(w2.training().per_device_batch_size, 4u);
  EXPECT_EQ(w2.training().steps, 30u);
}

TEST(HfArguments, AccelerateConfigLoads) {
  const WorkloadConfig w = load("per_device_batch_size: 8\n", kFixtures + "accelerate_tpu_config.yaml");
  EXPECT_EQ(w.training().precision, Precision::kBf16);
  EXPECT_EQ(w.training().num_processes, 8u);
  EXPECT_EQ(w.training().num_processes_line, 10);
  EXPECT_TRUE(std::count(w.training().ignored_keys.begin(), w.training().ignored_keys.end(), "compute_environment"));
  EXPECT_TRUE(std::count(w.training().ignored_keys.begin(), w.training().ignored_keys.end(), "distributed_type"));
}

TEST(HfArguments, TableIsConsistent) {
  std::vector<std::string> names;
  for (const HfKey& k : hf_keys()) {
    names.push_back(k.name);
    EXPECT_FALSE(k.rule.empty()) << k.name;
    EXPECT_FALSE(k.origin.empty()) << k.name;
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end()) << "a name is declared twice";
  const std::string md = hf_arguments_markdown();
  for (const HfKey& k : hf_keys()) EXPECT_TRUE(contains(md, "| `" + k.name + "` |")) << k.name;
}

}  // namespace
}  // namespace tpusim
