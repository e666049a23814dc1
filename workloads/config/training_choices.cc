#include "workloads/config/training_choices.h"

#include "base/config_error.h"
#include "config/suggest.h"
#include "workloads/config/workload_config.h"

namespace tpusim {

const NameTable<Precision>& precision_names() {
  static const NameTable<Precision> t = {{Precision::kFp32, "fp32"},
                                         {Precision::kBf16, "bf16"},
                                         {Precision::kBf16Downcast, "bf16_downcast"},
                                         {Precision::kMixedBf16, "mixed_bf16"}};
  return t;
}
const NameTable<EvalPrecision>& eval_precision_names() {
  static const NameTable<EvalPrecision> t = {{EvalPrecision::kSame, "same"}, {EvalPrecision::kBf16, "bf16"}};
  return t;
}
const NameTable<Sharding>& sharding_names() {
  static const NameTable<Sharding> t = {{Sharding::kDataParallel, "data_parallel"}, {Sharding::kFsdp, "fsdp"}};
  return t;
}
const NameTable<Task>& task_names() {
  static const NameTable<Task> t = {{Task::kSequenceClassification, "sequence_classification"},
                                    {Task::kMaskedLm, "masked_lm"},
                                    {Task::kImageClassification, "image_classification"},
                                    {Task::kCausalLm, "causal_lm"},
                                    {Task::kSeq2seq, "seq2seq"}};
  return t;
}
const NameTable<FrameworkKind>& framework_kind_names() {
  static const NameTable<FrameworkKind> t = {
      {FrameworkKind::kTorchXla, "torch_xla"}, {FrameworkKind::kTfKeras, "tf_keras"}, {FrameworkKind::kJax, "jax"}};
  return t;
}
const NameTable<Launcher>& launcher_names() {
  static const NameTable<Launcher> t = {{Launcher::kXlaSpawn, "xla_spawn"}, {Launcher::kNotebookFork, "notebook_fork"}};
  return t;
}
const NameTable<TpuRuntime>& tpu_runtime_names() {
  static const NameTable<TpuRuntime> t = {{TpuRuntime::kVm, "vm"}, {TpuRuntime::kNode, "node"}};
  return t;
}
const NameTable<DataLocation>& data_location_names() {
  static const NameTable<DataLocation> t = {{DataLocation::kLocal, "local"}, {DataLocation::kGcs, "gcs"}};
  return t;
}
const NameTable<EvalStrategy>& eval_strategy_names() {
  static const NameTable<EvalStrategy> t = {
      {EvalStrategy::kEpoch, "epoch"}, {EvalStrategy::kSteps, "steps"}, {EvalStrategy::kNo, "no"}};
  return t;
}

namespace {

template <class E>
E lookup(const NameTable<E>& t, const std::string& key, const std::string& value) {
  for (const auto& [e, s] : t)
    if (value == s) return e;
  const std::vector<std::string> names = names_of(t);
  throw ConfigError({"", key, 0, value, "must be one of: " + config::join(names), config::suggest(value, names, "allowed values")});
}

}  // namespace

TrainingChoices resolve_choices(const TrainingWorkload& t) {
  TrainingChoices c;
  c.padding = data::parse_padding(t.padding, {"", "padding", 0});
  c.precision = lookup(precision_names(), "precision", t.precision);
  c.eval_precision = lookup(eval_precision_names(), "eval_precision", t.eval_precision);
  c.sharding = lookup(sharding_names(), "sharding", t.sharding);
  c.optimizer = models::optimizer_from_name(t.optimizer);
  c.task = lookup(task_names(), "task", t.task);
  c.framework = lookup(framework_kind_names(), "framework", t.framework);
  c.launcher = lookup(launcher_names(), "launcher", t.launcher);
  c.tpu_runtime = lookup(tpu_runtime_names(), "tpu_runtime", t.tpu_runtime);
  c.data_location = lookup(data_location_names(), "data_location", t.data_location);
  c.eval_strategy = lookup(eval_strategy_names(), "eval_strategy", t.eval_strategy);
  return c;
}

}  // namespace tpusim
