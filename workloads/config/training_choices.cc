#include "workloads/config/training_choices.h"

namespace tpusim {

const NameTable<Precision>& enum_names(Precision) {
  static const NameTable<Precision> t = {{Precision::kFp32, "fp32"},
                                         {Precision::kBf16, "bf16"},
                                         {Precision::kBf16Downcast, "bf16_downcast"},
                                         {Precision::kMixedBf16, "mixed_bf16"}};
  return t;
}
const NameTable<MlpActivation>& enum_names(MlpActivation) {
  static const NameTable<MlpActivation> t = {{MlpActivation::kPreset, "preset"}, {MlpActivation::kSilu, "silu"},
                                             {MlpActivation::kGelu, "gelu"},     {MlpActivation::kGeluTanh, "gelu_tanh"},
                                             {MlpActivation::kRelu, "relu"}};
  return t;
}

const NameTable<Toggle>& enum_names(Toggle) {
  static const NameTable<Toggle> t = {{Toggle::kPreset, "preset"}, {Toggle::kTrue, "true"}, {Toggle::kFalse, "false"}};
  return t;
}

const NameTable<Quantization>& enum_names(Quantization) {
  static const NameTable<Quantization> t = {
      {Quantization::kNone, "none"}, {Quantization::kInt8, "int8"}, {Quantization::kFp8, "fp8"}};
  return t;
}

const NameTable<Attention>& enum_names(Attention) {
  static const NameTable<Attention> t = {{Attention::kAuto, "auto"}, {Attention::kEager, "eager"}, {Attention::kFlash, "flash"}};
  return t;
}
const NameTable<TensorActivations>& enum_names(TensorActivations) {
  static const NameTable<TensorActivations> t = {{TensorActivations::kAuto, "auto"},
                                                 {TensorActivations::kSharded, "sharded"},
                                                 {TensorActivations::kReplicated, "replicated"}};
  return t;
}
const NameTable<EvalPrecision>& enum_names(EvalPrecision) {
  static const NameTable<EvalPrecision> t = {{EvalPrecision::kSame, "same"}, {EvalPrecision::kBf16, "bf16"}};
  return t;
}
const NameTable<Sharding>& enum_names(Sharding) {
  static const NameTable<Sharding> t = {{Sharding::kDataParallel, "data_parallel"}, {Sharding::kFsdp, "fsdp"}};
  return t;
}
const NameTable<Task>& enum_names(Task) {
  static const NameTable<Task> t = {{Task::kSequenceClassification, "sequence_classification"},
                                    {Task::kMaskedLm, "masked_lm"},
                                    {Task::kImageClassification, "image_classification"},
                                    {Task::kCausalLm, "causal_lm"},
                                    {Task::kSeq2seq, "seq2seq"}};
  return t;
}
const NameTable<FrameworkKind>& enum_names(FrameworkKind) {
  static const NameTable<FrameworkKind> t = {
      {FrameworkKind::kTorchXla, "torch_xla"}, {FrameworkKind::kTfKeras, "tf_keras"}, {FrameworkKind::kJax, "jax"}};
  return t;
}
const NameTable<Launcher>& enum_names(Launcher) {
  static const NameTable<Launcher> t = {{Launcher::kXlaSpawn, "xla_spawn"}, {Launcher::kNotebookFork, "notebook_fork"}};
  return t;
}
const NameTable<TpuRuntime>& enum_names(TpuRuntime) {
  static const NameTable<TpuRuntime> t = {{TpuRuntime::kVm, "vm"}, {TpuRuntime::kNode, "node"}};
  return t;
}
const NameTable<DataLocation>& enum_names(DataLocation) {
  static const NameTable<DataLocation> t = {{DataLocation::kLocal, "local"}, {DataLocation::kGcs, "gcs"}};
  return t;
}
const NameTable<EvalStrategy>& enum_names(EvalStrategy) {
  static const NameTable<EvalStrategy> t = {
      {EvalStrategy::kEpoch, "epoch"}, {EvalStrategy::kSteps, "steps"}, {EvalStrategy::kNo, "no"}};
  return t;
}

}  // namespace tpusim
