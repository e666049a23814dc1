// Workload configs (YAML `kind:` selects the schema): `kind: kernel` (one kernel on one core),
// `kind: training` (a whole fine-tuning run under a framework personality, workloads/loop/training_run.h)
// and `kind: hlo` (the user's own XLA HLO step module, run for some steps: workloads/loop/hlo_run.h).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "compiler/hlo/hlo_spmd.h"
#include "config/hw_loader.h"
#include "models/dtype_names.h"
#include "models/families.h"
#include "models/graph.h"
#include "models/model.h"
#include "models/optimizers.h"
#include "models/remat_policy.h"
#include "models/sharding.h"
#include "workloads/config/training_choices.h"
#include "workloads/data/batching.h"

namespace tpusim {

// Where a key's value was written (file or "--set", 1-based line; empty: defaulted), for errors
// found after loading (an unknown dataset, a cache directory that cannot be made).
struct KeyOrigin {
  std::string file;
  int line = 0;
};

// kind: kernel — run one kernel once on one core.
struct KernelWorkload {
  std::string kernel;                      // matmul | layernorm | softmax | attention | encoder_block
  std::map<std::string, uint64_t> shape;   // keys per kernel, see models/kernel_specs.h
  models::DType dtype = models::DType::kF32;  // tensor dtype in HBM: f32 | bf16
  models::DotPrecision precision = models::DotPrecision::kDefault;  // fp32 matmul passes: default (1) | high (3) | highest (6)
  uint32_t chip = 0;                       // which chip and core run it
  uint32_t core = 0;
  // Where chip and core were written (file or "--set", line; 0: defaulted), for errors against the slice.
  std::string chip_file, core_file;
  int chip_line = 0, core_line = 0;
  std::map<std::string, KeyOrigin> shape_origins;  // each shape key's, for shape errors found by the compiler
};

// kind: training — the `dataset:` section: references as in workloads/data/dataset.h
// (a length-table key such as glue_mrpc/train/bert-base-cased, or fixed:/uniform:/normal: specs).
// Task seq2seq pairs each split with its targets' lengths (`train: {source: X, target: Y}` is the
// map form of `train: X` plus `train_target: Y`).
struct TrainingDatasets {
  std::string train;
  std::string eval;  // "" = no evaluation
  std::string train_target, eval_target;  // seq2seq only: the targets' lengths
};


// kind: training — `model_config:`, an inline architecture: each non-zero field replaces the named
// preset's (model: custom starts from nothing and needs layers, hidden, heads, intermediate, vocab).
struct ModelConfig {
  uint32_t layers = 0, hidden = 0, heads = 0, intermediate = 0, vocab = 0, max_position = 0;
  uint32_t kv_heads = 0, head_dim = 0;  // Llama family: grouped-query attention, the per-head width
  MlpActivation mlp_activation = MlpActivation::kPreset;  // Llama family: the MLP's activation
  Toggle gated_mlp = Toggle::kPreset;                     // ... gated (act(x W_gate) * x W_up) or not
  Toggle tie_word_embeddings = Toggle::kPreset;           // ... the LM head is the embedding table
};

// kind: training — the `mesh:` section (MaxText's ici_*_parallelism): devices per mesh axis; 0: not
// given, -1: the devices the other axes leave (resolve_mesh).
struct MeshConfig {
  int32_t data = 0, fsdp = 0, sequence = 0, tensor = 0;
  bool given() const { return data || fsdp || sequence || tensor; }
};

// kind: training — the `dcn_mesh:` section (MaxText's dcn_*_parallelism): the mesh across the
// slices of a multislice run (hw multislice.slices). Only data parallelism crosses slices here.
// 0: not given (the slices), -1: the slices.
struct DcnMeshConfig {
  int32_t data = 0;
};

// kind: training — the `remat_tensors:` section (remat_policy: custom): per named tensor of a decoder
// layer, kept on the device, kept in host memory or recomputed (models/remat_policy.h).
struct RematTensorsConfig {
  models::RematChoice query_proj = models::RematChoice::kRemat, key_proj = models::RematChoice::kRemat,
                      value_proj = models::RematChoice::kRemat, context = models::RematChoice::kRemat,
                      out_proj = models::RematChoice::kRemat, mlpwi = models::RematChoice::kRemat,
                      mlpwo = models::RematChoice::kRemat, decoder_layer_input = models::RematChoice::kDevice;
};

// kind: training — the `compile_cache:` section (torch_xla's in-memory LRU and persistent cache).
struct CompileCacheConfig {
  uint64_t capacity = 1024;    // entries (XLA_COMPILATION_CACHE_SIZE)
  std::string persistent_dir;  // "" = none (XLA_PERSISTENT_CACHE_PATH)
};

// kind: training — fine-tune a BERT-family model data-parallel on every core of the slice.
struct TrainingWorkload {
  std::string model;                       // preset name (models/families.h) or "custom"
  ModelConfig model_config;                // inline architecture (overrides the preset's fields)
  Task task = Task::kSequenceClassification;  // | masked_lm | image_classification (ViT) | causal_lm (GPT-2) | seq2seq
  uint32_t image_size = 224;               // image_classification: pixels per side (the ViT preset's)
  uint32_t max_predictions_per_seq = 20;   // masked_lm: P
  uint32_t num_labels = 2;                 // sequence_classification outputs
  TrainingDatasets dataset;
  uint32_t max_length = 128;               // tokens: truncation length (seq2seq: of the sources)
  uint32_t max_target_length = 128;        // seq2seq: the targets' truncation length
  data::PaddingSpec padding;               // max_length | longest | multiple_of:N
  // Examples per device and micro-step; a fraction where a tensor x sequence group's devices share
  // examples (MaxText's per_device_batch_size=0.25 with ici_sequence_parallelism=4): shard_examples.
  double per_device_batch_size = 0;
  double eval_per_device_batch_size = 0;   // resolved to per_device_batch_size when omitted
  uint32_t epochs = 1;
  uint64_t steps = 0;                      // cap on training micro-steps; 0 = none
  models::OptimizerKind optimizer = models::OptimizerKind::kAdamW;  // adamw | sgd | lamb | adafactor
  Precision precision = Precision::kFp32;  // fp32 | bf16 | bf16_downcast | mixed_bf16
  uint32_t gradient_accumulation_steps = 1;
  Sharding sharding = Sharding::kDataParallel;  // data_parallel | fsdp (compiler/step/fsdp_schedule.h)
  MeshConfig mesh;                         // the device mesh (resolve_mesh); not given: from `sharding`
  DcnMeshConfig dcn_mesh;                  // the mesh across slices (multislice)
  bool fsdp_grad_ckpt = false;             // fsdp: recompute each encoder layer in its backward
  models::RematPolicy remat_policy = models::RematPolicy::kNone;  // MaxText's (models/remat_policy.h)
  RematTensorsConfig remat_tensors;        // remat_policy custom: per named tensor
  Attention attention = Attention::kAuto;  // auto | eager | flash (uses_flash_attention() resolves auto)
  uint32_t sa_block_q = 512, sa_block_kv = 512;
  TensorActivations tensor_activations = TensorActivations::kAuto;  // mesh.tensor: the stream split or whole
  bool context_parallel_load_balance = true;  // mesh.sequence: each device two mirrored blocks (MaxText)
  Quantization quantization = Quantization::kNone;  // none | int8 | fp8 (MaxText AQT)  // flash attention's query and key block rows (MaxText's names)
  bool overlap_collectives = true;         // gradient all-reduces overlap the backward pass (XLA async collectives)
  bool rematerialization = true;           // over HBM: recompute as XLA's rematerialization pass (compiler/plan/rematerialize.h)
  FrameworkKind framework = FrameworkKind::kTorchXla;  // torch_xla | tf_keras | jax (workloads/loop/framework.h)
  bool spmd = false;  // torch_xla's SPMD mode (xr.use_spmd(); Trainer's FSDPv2): one process per host (framework.h)
  uint32_t steps_per_execution = 1;        // tf_keras: steps per host dispatch (Model.compile)
  bool jit_compile = true;                 // tf_keras: Model.compile(jit_compile=...)
  TpuRuntime tpu_runtime = TpuRuntime::kVm;        // vm | node (tf_keras): where the input pipeline runs
  DataLocation data_location = DataLocation::kLocal;  // local | gcs: where the dataset files are
  uint64_t seed = 0;
  bool split_batches = false, even_batches = true, drop_last = false;
  CompileCacheConfig compile_cache;
  Launcher launcher = Launcher::kXlaSpawn;  // xla_spawn | notebook_fork
  bool build_model_in_each_process = false;
  // Constructs of the user's training step that break XLA's rules (workloads/config/xla_constructs.h).
  std::vector<std::string> model_code;
  bool strict_xla = false;                 // such a construct fails the run (exit 3) instead of a warning
  bool tpu_metrics_debug = false;          // print a torch_xla-style metrics report at the end of the run
  uint32_t num_processes = 0;              // Accelerate num_processes; 0 = not given (one per device)
  // Not config keys: what the loader saw. Hugging Face / Accelerate names accepted without effect
  // (workloads/config/hf_arguments.h), sorted; and where num_processes was written, for the hardware check.
  std::vector<std::string> ignored_keys;
  std::string num_processes_file;
  int num_processes_line = 0;
  // Trainer semantics (docs/training.md "Evaluation and logging", "Batch size search", "FSDP").
  EvalStrategy eval_strategy = EvalStrategy::kEpoch;  // epoch | steps | no
  uint64_t eval_steps = 0;                 // steps: evaluate every N optimizer steps
  EvalPrecision eval_precision = EvalPrecision::kSame;  // same | bf16 (Trainer bf16_full_eval)
  uint64_t logging_steps = 0;              // loss.item() every N optimizer steps; 0 = never
  bool auto_find_batch_size = false;       // halve per_device_batch_size until the step fits in HBM
  uint64_t fsdp_min_num_params = 0;        // fsdp: size_based_auto_wrap_policy; 0 = off
  std::vector<std::string> fsdp_wrap_layer_classes;  // fsdp: transformer_auto_wrap_policy; empty = off
  // Where the keys checked after loading were written: dataset.train, dataset.eval,
  // dataset.train_target, dataset.eval_target, compile_cache.persistent_dir, epochs, steps.
  std::map<std::string, KeyOrigin> origins;
};

// kind: hlo — an XLA HLO text module (a file, or a directory of --xla_dump_to dumps whose step module
// is picked by name) run SPMD on `replicas` cores for `steps` steps (docs/hlo.md, "kind: hlo").
struct HloWorkload {
  std::string module;        // file or directory; a relative path written in the workload file is resolved
                             // against its directory by the loader
  std::string module_name;   // "" = pick the step module by name (workloads/loop/hlo_module.h)
  uint32_t replicas = 0;     // 0 = the module's replica_count x num_partitions
  uint64_t steps = 10;
  FrameworkKind framework = FrameworkKind::kTorchXla;  // the personality: torch_xla | tf_keras | jax (framework.h)
  uint64_t while_trip_count = 0;        // 0 = not given (hlo::ImportOptions::while_trip_count unset)
  hlo::SpmdMode spmd = hlo::SpmdMode::kAuto;  // auto | partition | as_written (docs/hlo.md)
  // Where `module`, `module_name` and `replicas` were written (file or "--set", line; empty:
  // defaulted), for errors found after loading (no step module in the directory, more replicas than cores).
  KeyOrigin module_origin, module_name_origin, replicas_origin;
};

// The kinds, in the order of WorkloadConfig::spec's alternatives.
enum class WorkloadKind { kKernel, kTraining, kHlo };
const NameTable<WorkloadKind>& enum_names(WorkloadKind);  // kernel | training | hlo

struct WorkloadConfig {
  std::string name;  // file stem or `name:` key
  // Top-level `hw:`, the hardware the workload was written for: a path relative to the workload
  // file's directory, or a built-in name (v3-32). Outside the kinds' schemas and not dumped: what it
  // names is the run's resolved hardware config, which --hw or a sweep point may replace.
  std::string hw;
  std::string hw_dir;     // the workload file's directory ("" for text: the working directory)
  std::string hw_origin;  // where `hw:` was written (file, line), for errors
  int hw_line = 0;
  // What `kind:` selected: one alternative per WorkloadKind.
  std::variant<KernelWorkload, TrainingWorkload, HloWorkload> spec;

  WorkloadKind kind() const { return static_cast<WorkloadKind>(spec.index()); }
  bool is(WorkloadKind k) const { return kind() == k; }
  // The kind's section; std::bad_variant_access for another kind (a programming error: check kind()).
  KernelWorkload& kernel() { return std::get<KernelWorkload>(spec); }
  const KernelWorkload& kernel() const { return std::get<KernelWorkload>(spec); }
  TrainingWorkload& training() { return std::get<TrainingWorkload>(spec); }
  const TrainingWorkload& training() const { return std::get<TrainingWorkload>(spec); }
  HloWorkload& hlo() { return std::get<HloWorkload>(spec); }
  const HloWorkload& hlo() const { return std::get<HloWorkload>(spec); }
};

// The training workload's architecture: the preset (models::custom_arch() for `custom`) with
// model_config's non-zero fields applied (models::with_overrides). Throws ConfigError for an unknown preset.
models::ModelArch resolve_model_arch(const TrainingWorkload& t);
// model_config's mlp_activation and gated_mlp against the preset's MLP: the activation they make, or
// the reason it is not modelled (silu not gated, gelu (exact) or relu gated).
struct MlpChoice {
  std::optional<models::Activation> activation;
  std::string error;
};
MlpChoice resolve_mlp(const ModelConfig& m, models::Activation preset);
// The family of the workload's model (BERT for `custom`); null for an unknown preset.
const models::Family* model_family(const TrainingWorkload& t);
// Whether the workload's attention is flash attention (`attention`, auto resolved: flash for a
// Llama-family model under framework jax).
bool uses_flash_attention(const TrainingWorkload& t);
// Whether, under tensor parallelism, the activations between the blocks are split along the hidden
// dimension (`tensor_activations`, auto resolved: sharded under framework jax, as MaxText).
bool uses_sharded_stream(const TrainingWorkload& t);

// The tensors of a decoder layer the backward recomputes (models/remat_policy.h): `remat_policy`, or
// `full` under fsdp_grad_ckpt; kNone: no recomputation.
models::RematPolicy effective_remat_policy(const TrainingWorkload& t);
models::RematTensors effective_remat_tensors(const TrainingWorkload& t);

// The workload's device mesh over `devices` devices (TensorCores; chips under megacore), docs/training.md
// "Meshes": `mesh:` as given, an axis not given 1 except data (fsdp under sharding: fsdp), which takes
// the devices the others leave unless another axis is -1 (the rest); without `mesh:`, `sharding` says
// it ({data: -1}, fsdp: {fsdp: -1}). ConfigError (at the mesh key) for a mesh whose axes do not
// multiply to the devices.
models::Mesh resolve_mesh(const TrainingWorkload& t, uint32_t devices, uint32_t slices = 1);
// The examples of one batch shard: the devices of a tensor x sequence group compute the same
// examples (a tensor replica 1/T of their work, a sequence replica 1/S of their tokens), so a shard
// takes per_device x T x S of them, which must be a whole number, at least 1 (MaxText: the global
// batch, per_device_batch_size x devices, split over the data axes only). `key` names the setting
// in the ConfigError otherwise.
uint32_t shard_examples(const TrainingWorkload& t, double per_device, const models::Mesh& mesh,
                        const std::string& key = "per_device_batch_size");
// The devices of a batch shard (mesh tensor x sequence).
uint32_t shard_devices(const models::Mesh& mesh);
// The model head of a training task (the same names).
models::Head model_head(Task task);
// The training workload's model behind the model interface (models/model.h): its architecture
// (resolve_model_arch) with the head of its task.
std::unique_ptr<models::Model> make_model(const TrainingWorkload& t);
// Tokens per example of an image task (ViT: (image_size / patch)^2 + 1, every batch that one
// length); 0 for a text task.
uint32_t image_tokens(const TrainingWorkload& t);
// Parameters of the workload's base model class as `tpusim models` counts them (no task head).
uint64_t base_model_parameters(const TrainingWorkload& t);

// `training_args`: a TrainingArguments-style YAML/JSON file applied on top of a training workload
// (`tpusim run --training-args`, workloads/config/hf_arguments.h); `maxtext_args`: MaxText arguments
// (a file or inline key=value tokens, `--maxtext-args`, workloads/config/maxtext_args.h), applied
// before it; empty: none.
WorkloadConfig load_workload_config(const std::string& path, const std::vector<Override>& overrides = {},
                                    const std::string& training_args = {}, const std::string& maxtext_args = {});
WorkloadConfig load_workload_config_text(const std::string& yaml, const std::string& origin,
                                         const std::vector<Override>& overrides = {},
                                         const std::string& training_args = {}, const std::string& maxtext_args = {});
std::string dump_workload_config(const WorkloadConfig& w);
// The top-level keys of a `kind: training` workload (what Hugging Face names are rewritten to).
std::vector<std::string> training_workload_keys();
std::string workload_schema_markdown();

// Splits command-line overrides between the hardware and the workload config. A path may be
// prefixed `hw.` or `workload.`; an unprefixed path goes to whichever schema has its first key
// (ConfigError if neither, with "did you mean").
struct SplitOverrides {
  std::vector<Override> hw, workload;
};
SplitOverrides split_overrides(const std::vector<Override>& all);

// Checks that an override's path names a key of the hardware config or of some workload kind's
// config (prefixes as in split_overrides), without loading any file: for sweep axes, whose values
// are checked per point. Throws ConfigError (file = ov.origin) with "did you mean".
void check_override_path(const Override& ov);

}  // namespace tpusim
