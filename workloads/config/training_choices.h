// The enumerated settings of a `kind: training` (and `kind: hlo`) workload. The config structs hold
// these enums: the schema parses the YAML names straight into them (config/schema.h, named enums),
// and dumps and report.json print the names. Each enum's table below is the one place its names
// are spelt; the schema's allowed values come from it.
#pragma once
#include "base/enum_names.h"

namespace tpusim {

enum class Precision { kFp32, kBf16, kBf16Downcast, kMixedBf16 };
enum class EvalPrecision { kSame, kBf16 };                  // Trainer bf16_full_eval
enum class Sharding { kDataParallel, kFsdp };
enum class Task { kSequenceClassification, kMaskedLm, kImageClassification, kCausalLm, kSeq2seq };
enum class FrameworkKind { kTorchXla, kTfKeras, kJax };     // workloads/loop/framework.h
enum class Launcher { kXlaSpawn, kNotebookFork };
enum class TpuRuntime { kVm, kNode };
enum class DataLocation { kLocal, kGcs };
enum class EvalStrategy { kEpoch, kSteps, kNo };
// How attention runs: eager (the [B, heads, S, S] scores in HBM, what transformers' eager
// attention and XLA's fusions do) or flash (one fused kernel per direction: MaxText's splash
// attention, PyTorch/XLA's Pallas flash_attention); auto: flash for a model that has it under
// framework jax (MaxText's default: attention=autoselected is flash on TPU), eager otherwise
// (uses_flash_attention, workloads/config/workload_config.h).
enum class Attention { kAuto, kEager, kFlash };
// model_config's mlp_activation, gated_mlp and tie_word_embeddings: kPreset keeps the preset's.
enum class MlpActivation { kPreset, kSilu, kGelu, kGeluTanh, kRelu };
enum class Toggle { kPreset, kTrue, kFalse };
// Under tensor parallelism, the activations between the blocks: split along the hidden dimension
// over the tensor axis (MaxText's activation_embed rule: reduce-scatters and all-gathers) or whole
// on every replica (Megatron-LM's all-reduces); auto: sharded under framework jax, else replicated
// (uses_sharded_stream, workloads/config/workload_config.h).
enum class TensorActivations { kAuto, kSharded, kReplicated };
// MaxText's `quantization`: the decoder layers' matmuls as AQT int8 or fp8 (models/model.h).
enum class Quantization { kNone, kInt8, kFp8 };

// Each enum's YAML names, in the order the schema lists them.
const NameTable<Precision>& enum_names(Precision);
const NameTable<EvalPrecision>& enum_names(EvalPrecision);
const NameTable<Sharding>& enum_names(Sharding);
const NameTable<Quantization>& enum_names(Quantization);
const NameTable<MlpActivation>& enum_names(MlpActivation);
const NameTable<Toggle>& enum_names(Toggle);
const NameTable<Task>& enum_names(Task);
const NameTable<FrameworkKind>& enum_names(FrameworkKind);
const NameTable<Launcher>& enum_names(Launcher);
const NameTable<TpuRuntime>& enum_names(TpuRuntime);
const NameTable<DataLocation>& enum_names(DataLocation);
const NameTable<EvalStrategy>& enum_names(EvalStrategy);
const NameTable<Attention>& enum_names(Attention);
const NameTable<TensorActivations>& enum_names(TensorActivations);

}  // namespace tpusim
