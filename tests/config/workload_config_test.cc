// Workload config (kind: kernel) and the routing of --set between hardware and workload.
#include <gtest/gtest.h>

#include "workloads/config/workload_config.h"
#include "tests/config/test_util.h"

namespace tpusim {
namespace {

using testing::config_error_of;
using testing::contains;

const char* kMatmul = R"(# a matmul
kind: kernel
kernel: matmul
shape: {m: 1024, k: 512, n: 256}
)";

WorkloadConfig load(const std::string& text, const std::vector<Override>& ovs = {}) {
  return load_workload_config_text(text, "wl/kernel_mm.yaml", ovs);
}

TEST(WorkloadConfig, KernelWithDefaults) {
  const WorkloadConfig w = load(kMatmul);
  EXPECT_EQ(w.kind(), WorkloadKind::kKernel);
  EXPECT_EQ(w.name, "kernel_mm");
  EXPECT_EQ(w.kernel().kernel, "matmul");
  EXPECT_EQ(w.kernel().shape, (std::map<std::string, uint64_t>{{"m", 1024}, {"k", 512}, {"n", 256}}));
  EXPECT_EQ(w.kernel().dtype, models::DType::kF32);
  EXPECT_EQ(w.kernel().precision, models::DotPrecision::kDefault);
  EXPECT_EQ(w.kernel().chip, 0u);
  EXPECT_EQ(w.kernel().core, 0u);
}

TEST(WorkloadConfig, DumpRoundTrips) {
  WorkloadConfig w = load(std::string(kMatmul) + "dtype: bf16\nprecision: highest\ncore: 1\nname: mm\n");
  const std::string y = dump_workload_config(w);
  EXPECT_TRUE(contains(y, "precision: highest")) << y;
  const WorkloadConfig back = load(y);
  EXPECT_EQ(back.name, "mm");
  EXPECT_EQ(back.kernel().shape, w.kernel().shape);
  EXPECT_EQ(back.kernel().dtype, models::DType::kBF16);
  EXPECT_EQ(back.kernel().precision, models::DotPrecision::kHighest);
  EXPECT_EQ(back.kernel().core, 1u);
  EXPECT_EQ(dump_workload_config(back), y);
}

TEST(WorkloadConfig, ShapeKeyMissingOrExtra) {
  std::string what;
  auto e = config_error_of([] { load("kind: kernel\nkernel: matmul\nshape: {m: 1, k: 2}\n"); }, &what);
  EXPECT_EQ(e.yaml_path, "shape");
  EXPECT_EQ(e.line, 3);
  EXPECT_EQ(e.rule, "missing shape key 'n'; kernel 'matmul' takes m, k, n") << what;
  e = config_error_of([] { load("kind: kernel\nkernel: matmul\nshape: {m: 1, k: 2, nn: 3}\n"); }, &what);
  EXPECT_EQ(e.yaml_path, "shape.nn");
  EXPECT_EQ(e.value, "3");
  EXPECT_TRUE(contains(e.rule, "unknown shape key")) << what;
  EXPECT_EQ(e.suggestion, "did you mean 'n'?");
  e = config_error_of([] { load("kind: kernel\nkernel: softmax\nshape: {rows: 1, cols: 2, zzzz: 3}\n"); });
  EXPECT_EQ(e.suggestion, "valid keys: rows, cols");
  e = config_error_of([] { load("kind: kernel\nkernel: softmax\nshape: {rows: 0, cols: 2}\n"); });
  EXPECT_EQ(e.yaml_path, "shape.rows");
  EXPECT_EQ(e.rule, "must be an integer >= 1");
}

TEST(WorkloadConfig, UnknownKernelAndKind) {
  auto e = config_error_of([] { load("kind: kernel\nkernel: matmull\nshape: {m: 1, k: 1, n: 1}\n"); });
  EXPECT_EQ(e.yaml_path, "kernel");
  EXPECT_EQ(e.rule, "must be one of: matmul, layernorm, softmax, attention, encoder_block");
  EXPECT_EQ(e.suggestion, "did you mean 'matmul'?");
  std::string what;
  e = config_error_of([] { load("kind: trainig\n"); }, &what);
  EXPECT_EQ(e.yaml_path, "kind");
  EXPECT_EQ(e.line, 1);
  EXPECT_EQ(e.rule, "unknown kind 'trainig'; known: kernel, training, hlo") << what;
  EXPECT_EQ(e.suggestion, "did you mean 'training'?");
  e = config_error_of([] { load("kernel: matmul\n"); });
  EXPECT_TRUE(contains(e.rule, "missing required key")) << e.rule;
}

TEST(WorkloadConfig, OneOfFields) {
  auto e = config_error_of([] { load(std::string(kMatmul) + "dtype: fp16\n"); });
  EXPECT_EQ(e.rule, "must be one of: f32, bf16");
  e = config_error_of([] { load(std::string(kMatmul) + "precision: hihg\n"); });
  EXPECT_EQ(e.suggestion, "did you mean 'high'?");
  e = config_error_of([] { load(std::string(kMatmul) + "dtipe: bf16\n"); });
  EXPECT_EQ(e.suggestion, "did you mean 'dtype'?");
}

TEST(WorkloadConfig, Overrides) {
  const WorkloadConfig w = load(kMatmul, {parse_override("shape.m=2048"), parse_override("dtype=bf16")});
  EXPECT_EQ(w.kernel().shape.at("m"), 2048u);
  EXPECT_EQ(w.kernel().dtype, models::DType::kBF16);
  const WorkloadConfig s = load(kMatmul, {parse_override("kernel=softmax"), parse_override("shape={rows: 8, cols: 16}")});
  EXPECT_EQ(s.kernel().shape, (std::map<std::string, uint64_t>{{"rows", 8}, {"cols", 16}}));  // a map is replaced
  auto e = config_error_of([] { load(kMatmul, {parse_override("shape.m=0")}); });
  EXPECT_EQ(e.file, "--set");
  EXPECT_EQ(e.yaml_path, "shape.m");
  e = config_error_of([] { load(kMatmul, {parse_override("kind=trainnig")}); });
  EXPECT_TRUE(contains(e.rule, "unknown kind 'trainnig'")) << e.rule;
}

TEST(WorkloadConfig, MissingFile) {
  auto e = config_error_of([] { load_workload_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/workloads/kernel_matmul_4096.yaml"); });
  EXPECT_EQ(e.rule, "file not found");
  EXPECT_TRUE(contains(e.suggestion, "kernel_matmul_")) << e.suggestion;
}

TEST(SplitOverrides, RoutesByPrefixOrSchema) {
  const auto s = split_overrides({parse_override("hw.name=x"), parse_override("workload.name=y"),
                                  parse_override("chip.core.mxu.count=4"), parse_override("shape.m=8"),
                                  parse_override("slice.hosts=2"), parse_override("precision=high")});
  ASSERT_EQ(s.hw.size(), 3u);
  ASSERT_EQ(s.workload.size(), 3u);
  EXPECT_EQ(s.hw[0].path, "name");
  EXPECT_EQ(s.hw[1].path, "chip.core.mxu.count");
  EXPECT_EQ(s.hw[2].path, "slice.hosts");
  EXPECT_EQ(s.workload[0].path, "name");
  EXPECT_EQ(s.workload[1].path, "shape.m");
  EXPECT_EQ(s.workload[2].path, "precision");
}

TEST(SplitOverrides, AmbiguousAndUnknown) {
  std::string what;
  auto e = config_error_of([] { split_overrides({parse_override("name=x")}); }, &what);
  EXPECT_EQ(e.file, "--set");
  EXPECT_TRUE(contains(e.rule, "both the hardware and the workload")) << what;
  EXPECT_EQ(e.suggestion, "prefix it: hw.name or workload.name");
  e = config_error_of([] { split_overrides({parse_override("slcie.hosts=2")}); }, &what);
  EXPECT_EQ(e.suggestion, "did you mean 'hw.slice'?") << what;
  e = config_error_of([] { split_overrides({parse_override("shap.m=2")}); });
  EXPECT_EQ(e.suggestion, "did you mean 'workload.shape'?");
  e = config_error_of([] { split_overrides({parse_override("qqqqqq=2")}); });
  EXPECT_TRUE(contains(e.suggestion, "valid keys: hw.name, hw.chip")) << e.suggestion;
  e = config_error_of([] { split_overrides({parse_override("chip.core.mxu.cont=2")}); });
  EXPECT_EQ(e.yaml_path, "chip.core.mxu.cont");
  EXPECT_EQ(e.suggestion, "did you mean 'count'?");
}

TEST(TrainingWorkloadConfig, InlineModelConfig) {
  // The inline form is model: custom with that model_config; every architecture field is required.
  const WorkloadConfig w = load_workload_config_text(
      "kind: training\nmodel: {layers: 2, hidden: 256, heads: 4, intermediate: 1024, vocab: 30522, max_position: 128}\n"
      "dataset: {train: 'fixed:8:8'}\nper_device_batch_size: 1\nnum_labels: 3\n", "t.yaml");
  EXPECT_EQ(w.training().model, "custom");
  const models::ModelArch c = resolve_model_arch(w.training());
  EXPECT_EQ(c.layers, 2);
  EXPECT_EQ(c.hidden, 256);
  EXPECT_EQ(c.heads, 4);
  EXPECT_EQ(c.intermediate, 1024);
  EXPECT_EQ(c.vocab, 30522);
  EXPECT_EQ(c.max_position, 128);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.embedding_size, 256);
  const models::ModelGraph m = make_model(w.training())->build_forward({.batch = 1, .seq = 8});
  EXPECT_EQ(m.graph.node(m.logits).shape, (models::Dims{1, 3}));  // num_labels: the head's
  auto e = config_error_of([] {
    load_workload_config_text("kind: training\nmodel: custom\nmodel_config: {layers: 2, hidden: 256, heads: 4, "
                              "intermediate: 1024}\ndataset: {train: 'fixed:8:8'}\nper_device_batch_size: 1\n", "t.yaml");
  });
  EXPECT_EQ(e.yaml_path, "model_config.vocab");
  e = config_error_of([] {
    load_workload_config_text("kind: training\nmodel: bert-base-uncased\nmodel_config: {heads: 7}\n"
                              "dataset: {train: 'fixed:8:8'}\nper_device_batch_size: 1\n", "t.yaml");
  });
  EXPECT_EQ(e.yaml_path, "model_config.heads");
  // A preset with fields replaced: bert-base with 6 layers.
  const WorkloadConfig six = load_workload_config_text(
      "kind: training\nmodel: bert-base-uncased\nmodel_config: {layers: 6}\ndataset: {train: 'fixed:8:8'}\n"
      "per_device_batch_size: 1\n", "t.yaml");
  const models::ModelArch base = models::find_preset("bert-base-uncased");
  const models::ModelArch r = resolve_model_arch(six.training());
  EXPECT_EQ(r.layers, 6);
  EXPECT_EQ(r.hidden, base.hidden);
  EXPECT_EQ(r.vocab, base.vocab);
}

}  // namespace
}  // namespace tpusim

namespace tpusim {
namespace {

using testing::config_error_of;
using testing::contains;

constexpr const char* kTraining =
    "kind: training\nmodel: bert-base-cased\ndataset: {train: glue_mrpc/train/bert-base-cased}\n"
    "per_device_batch_size: 4\n";

TEST(TrainingWorkloadConfig, DefaultsAndDerivedEvalBatch) {
  const WorkloadConfig w = load_workload_config_text(kTraining, "t.yaml");
  EXPECT_EQ(w.kind(), WorkloadKind::kTraining);
  EXPECT_EQ(w.training().eval_per_device_batch_size, 4u);  // = per_device_batch_size
  EXPECT_EQ(w.training().max_length, 128u);
  EXPECT_EQ(w.training().padding, data::PaddingSpec::max_length());
  EXPECT_EQ(w.training().compile_cache.capacity, 1024u);
  EXPECT_EQ(w.training().launcher, Launcher::kXlaSpawn);
  EXPECT_EQ(w.training().dataset.eval, "");
  // The dump parses back to the same config.
  const WorkloadConfig again = load_workload_config_text(dump_workload_config(w), "dump.yaml");
  EXPECT_EQ(again.training().model, w.training().model);
  EXPECT_EQ(again.training().eval_per_device_batch_size, 4u);
}

// The schema parses the enumerated names straight into the config's enums (config/schema.h).
TEST(TrainingWorkloadConfig, TypedFieldsParsedByTheSchema) {
  const TrainingWorkload d = load_workload_config_text(kTraining, "t.yaml").training();
  EXPECT_EQ(d.padding, data::PaddingSpec::max_length());
  EXPECT_EQ(d.precision, Precision::kFp32);
  EXPECT_EQ(d.sharding, Sharding::kDataParallel);
  EXPECT_EQ(d.optimizer, models::OptimizerKind::kAdamW);
  EXPECT_EQ(d.framework, FrameworkKind::kTorchXla);
  EXPECT_EQ(d.eval_strategy, EvalStrategy::kEpoch);
  const WorkloadConfig w = load_workload_config_text(
      std::string(kTraining) + "padding: {multiple_of: 32}\nprecision: mixed_bf16\neval_precision: bf16\n"
                               "sharding: fsdp\noptimizer: lamb\ntask: masked_lm\nframework: tf_keras\n"
                               "tpu_runtime: node\ndata_location: gcs\neval_strategy: 'no'\n", "t.yaml");
  const TrainingWorkload& c = w.training();
  EXPECT_EQ(c.padding, data::PaddingSpec::multiple_of(32));
  EXPECT_EQ(c.precision, Precision::kMixedBf16);
  EXPECT_EQ(c.eval_precision, EvalPrecision::kBf16);
  EXPECT_EQ(c.sharding, Sharding::kFsdp);
  EXPECT_EQ(c.optimizer, models::OptimizerKind::kLamb);
  EXPECT_EQ(c.task, Task::kMaskedLm);
  EXPECT_EQ(c.framework, FrameworkKind::kTfKeras);
  EXPECT_EQ(c.tpu_runtime, TpuRuntime::kNode);
  EXPECT_EQ(c.data_location, DataLocation::kGcs);
  EXPECT_EQ(c.eval_strategy, EvalStrategy::kNo);
  // The names stay the user-facing form: the dump prints them, and parses back to the same values.
  const std::string dumped = dump_workload_config(w);
  EXPECT_TRUE(contains(dumped, "precision: mixed_bf16")) << dumped;
  EXPECT_TRUE(contains(dumped, "padding: \"multiple_of:32\"")) << dumped;
  const WorkloadConfig again = load_workload_config_text(dumped, "dump.yaml");
  EXPECT_EQ(again.training().padding, c.padding);
  EXPECT_EQ(again.training().precision, c.precision);
  EXPECT_EQ(again.training().task, c.task);
  EXPECT_EQ(again.training().eval_strategy, c.eval_strategy);
  // A name that is none of its table's is an error at the key, with the closest name.
  auto e = config_error_of([] { load_workload_config_text(std::string(kTraining) + "launcher: xla_spwan\n", "t.yaml"); });
  EXPECT_EQ(e.yaml_path, "launcher");
  EXPECT_EQ(e.suggestion, "did you mean 'xla_spawn'?");
}

// The workload config is a variant by kind: the kind is the alternative the loader parsed into.
TEST(WorkloadConfig, VariantByKind) {
  const WorkloadConfig k = load(kMatmul);
  EXPECT_TRUE(std::holds_alternative<KernelWorkload>(k.spec));
  EXPECT_THROW((void)k.training(), std::bad_variant_access);
  const WorkloadConfig t = load_workload_config_text(kTraining, "t.yaml");
  EXPECT_TRUE(std::holds_alternative<TrainingWorkload>(t.spec));
  EXPECT_EQ(t.kind(), WorkloadKind::kTraining);
  // `kind:` is dumped from the alternative, and a kind's own keys are not another kind's.
  EXPECT_TRUE(contains(dump_workload_config(t), "kind: training")) << dump_workload_config(t);
  auto e = config_error_of([] { load_workload_config_text(std::string(kTraining) + "kernel: matmul\n", "t.yaml"); });
  EXPECT_EQ(e.yaml_path, "kernel");
}

TEST(TrainingWorkloadConfig, PaddingMapForm) {
  const WorkloadConfig w = load_workload_config_text(std::string(kTraining) + "padding: {multiple_of: 32}\n", "t.yaml");
  EXPECT_EQ(w.training().padding, data::PaddingSpec::multiple_of(32));
  auto e = config_error_of([] { load_workload_config_text(std::string(kTraining) + "padding: longst\n", "t.yaml"); });
  EXPECT_EQ(e.yaml_path, "padding");
}

TEST(TrainingWorkloadConfig, ModelFrameworkAndDatasetErrors) {
  auto e = config_error_of([] { load_workload_config_text("kind: training\nmodel: bert-bsae-cased\ndataset: {train: 'fixed:8:8'}\nper_device_batch_size: 1\n", "t.yaml"); });
  EXPECT_EQ(e.yaml_path, "model");
  EXPECT_EQ(e.suggestion, "did you mean 'bert-base-cased'?");
  e = config_error_of([] { load_workload_config_text(std::string(kTraining) + "steps_per_execution: 8\n", "t.yaml"); });
  EXPECT_EQ(e.yaml_path, "steps_per_execution");
  EXPECT_TRUE(contains(e.rule, "only framework tf_keras")) << e.rule;
  e = config_error_of([] { load_workload_config_text(std::string(kTraining) + "framework: pytorch\n", "t.yaml"); });
  EXPECT_EQ(e.yaml_path, "framework");
  EXPECT_TRUE(contains(e.rule, "torch_xla")) << e.rule;
  e = config_error_of([] { load_workload_config_text("kind: training\nmodel: bert-tiny\ndataset: {train: 'fixed:x'}\nper_device_batch_size: 1\n", "t.yaml"); });
  EXPECT_EQ(e.yaml_path, "dataset.train");
}

TEST(TrainingWorkloadConfig, Sharding) {
  const WorkloadConfig d = load_workload_config_text(kTraining, "t.yaml");
  EXPECT_EQ(d.training().sharding, Sharding::kDataParallel);
  EXPECT_FALSE(d.training().fsdp_grad_ckpt);
  const WorkloadConfig f =
      load_workload_config_text(std::string(kTraining) + "sharding: fsdp\nfsdp_grad_ckpt: true\n", "t.yaml");
  EXPECT_EQ(f.training().sharding, Sharding::kFsdp);
  EXPECT_TRUE(f.training().fsdp_grad_ckpt);
  // An unknown strategy names the choices (and the closest).
  auto e = config_error_of([] { load_workload_config_text(std::string(kTraining) + "sharding: fsdb\n", "t.yaml"); });
  EXPECT_EQ(e.yaml_path, "sharding");
  EXPECT_TRUE(contains(e.rule, "data_parallel") && contains(e.rule, "fsdp")) << e.rule;
  // Checkpointing is an FSDP option; FSDP with gradient accumulation is not modelled.
  e = config_error_of([] { load_workload_config_text(std::string(kTraining) + "fsdp_grad_ckpt: true\n", "t.yaml"); });
  EXPECT_EQ(e.yaml_path, "fsdp_grad_ckpt");
  EXPECT_TRUE(contains(e.suggestion, "sharding: fsdp")) << e.suggestion;
  e = config_error_of([] {
    load_workload_config_text(std::string(kTraining) + "sharding: fsdp\ngradient_accumulation_steps: 2\n", "t.yaml");
  });
  EXPECT_EQ(e.yaml_path, "gradient_accumulation_steps");
}


// RoBERTa, DistilBERT and ALBERT (models/encoders.h): make_model builds their classifier or masked-LM
// model; another family's wrap classes are bad input at their key.
TEST(TrainingWorkloadConfig, EncoderFamilies) {
  const std::string base = "kind: training\ndataset: {train: 'fixed:8:8'}\nper_device_batch_size: 1\n";
  for (auto [model, cls] : {std::pair{"roberta-base", "RobertaForSequenceClassification"},
                            std::pair{"distilbert-base-uncased", "DistilBertForSequenceClassification"},
                            std::pair{"albert-base-v2", "AlbertForSequenceClassification"}}) {
    const WorkloadConfig w = load_workload_config_text(base + "model: " + model + "\n", "t.yaml");
    EXPECT_EQ(make_model(w.training())->module_class(""), cls);
    EXPECT_EQ(resolve_model_arch(w.training()).name, model);
  }
  const WorkloadConfig mlm = load_workload_config_text(base + "model: roberta-base\ntask: masked_lm\n", "t.yaml");
  EXPECT_EQ(make_model(mlm.training())->module_class(""), "RobertaForMaskedLM");
  auto e = config_error_of([&] {
    load_workload_config_text(base + "model: albert-base-v2\nsharding: fsdp\nfsdp_wrap_layer_classes: [BertLayer]\n", "t.yaml");
  });
  EXPECT_EQ(e.yaml_path, "fsdp_wrap_layer_classes");
  EXPECT_TRUE(contains(e.rule, "AlbertLayer")) << e.rule;
  EXPECT_NO_THROW(load_workload_config_text(
      base + "model: albert-base-v2\nsharding: fsdp\nfsdp_wrap_layer_classes: [AlbertLayer]\n", "t.yaml"));
}
}  // namespace
}  // namespace tpusim
