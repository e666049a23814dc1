// The schema of `kind: training` workloads (docs/config-workload.md): its fields, the sections it
// holds (datasets, model_config, compile_cache) and the checks across fields; registered with the
// other kinds in workload_config.cc.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "config/schema.h"
#include "config/suggest.h"
#include "models/families.h"
#include "workloads/config/hf_arguments.h"
#include "workloads/config/training_choices.h"
#include "workloads/config/workload_schemas.h"
#include "workloads/config/xla_constructs.h"
#include "workloads/data/batching.h"
#include "workloads/data/dataset.h"
#include "workloads/data/dataset_file.h"

namespace tpusim {

using config::CheckContext;
using config::Schema;

namespace {

// The longest sequence any setting may name: 2^20 tokens, above every public model's context
// (Llama-3.1: 131,072 positions). The model's own positions bound max_length further (below).
constexpr int64_t kMaxTokens = int64_t(1) << 20;

const Schema<TrainingDatasets>& datasets_schema() {
  static const Schema<TrainingDatasets> s = [] {
    Schema<TrainingDatasets> s("Datasets", "Token-length datasets of the training and evaluation splits.");
    const std::string refs =
        "A key of a length table in configs/datasets/*.json (e.g. `glue_mrpc/train/bert-base-cased`), or a "
        "synthetic spec: `fixed:N[:COUNT]`, `uniform:MIN-MAX[:COUNT]`, `normal:MEAN,STD[:COUNT]`, or a file of "
        "lengths (`PATH[#FIELD]`: .json list, .txt/.csv/.tsv, .jsonl; relative to the workload file; docs/datasets.md). "
        "Task image_classification takes `images:COUNT` (COUNT images, each the model's fixed sequence).";
    s.field(&TrainingDatasets::train, "train").doc("training split").details(refs);
    s.field(&TrainingDatasets::eval, "eval").default_value("", "none").doc("evaluation split, run after every epoch");
    s.field(&TrainingDatasets::train_target, "train_target").default_value("", "none")
        .doc("task seq2seq: the training split's target lengths (any reference `train` takes); required there")
        .details("The map form `train: {source: REF, target: REF}` is the same as `train: REF` with `train_target: REF`. "
                 "Each example's target length is drawn independently of its source length: a seeded permutation of "
                 "the target lengths when both sides have the same count, a seeded draw otherwise (docs/datasets.md).");
    s.field(&TrainingDatasets::eval_target, "eval_target").default_value("", "none")
        .doc("task seq2seq: the evaluation split's target lengths; required there when `eval` is given");
    return s;
  }();
  return s;
}

const Schema<ModelConfig>& model_config_schema() {
  static const Schema<ModelConfig> s = [] {
    Schema<ModelConfig> s("Model config", "An inline architecture over the preset (Hugging Face config.json names in parentheses); "
                                          "each field left at 0 keeps the preset's value.");
    s.field(&ModelConfig::layers, "layers").range(0, 1024).default_value(0, "preset").doc("encoder layers (num_hidden_layers)");
    s.field(&ModelConfig::hidden, "hidden").range(0, 1 << 16).default_value(0, "preset").doc("hidden size (hidden_size)");
    s.field(&ModelConfig::heads, "heads").range(0, 1024).default_value(0, "preset")
        .doc("attention heads (num_attention_heads); must divide hidden");
    s.field(&ModelConfig::intermediate, "intermediate").range(0, 1 << 18).default_value(0, "preset")
        .doc("feed-forward width (intermediate_size)");
    s.field(&ModelConfig::vocab, "vocab").range(0, 1 << 22).default_value(0, "preset").doc("vocabulary size (vocab_size)");
    s.field(&ModelConfig::max_position, "max_position").range(0, kMaxTokens).default_value(0, "preset")
        .doc("position embeddings (max_position_embeddings); bounds max_length");
    s.field(&ModelConfig::kv_heads, "kv_heads").range(0, 1024).default_value(0, "preset")
        .doc("Llama family: key/value heads (num_key_value_heads, grouped-query attention); must divide heads");
    s.field(&ModelConfig::head_dim, "head_dim").range(0, 4096).default_value(0, "preset")
        .doc("Llama family: width of each attention head (head_dim; Gemma's 256); even. Given, heads need not divide hidden");
    s.field(&ModelConfig::mlp_activation, "mlp_activation").default_value(MlpActivation::kPreset)
        .doc("Llama family: the MLP's activation (hidden_act): silu, gelu (exact), gelu_tanh (gelu_pytorch_tanh) or relu");
    s.field(&ModelConfig::gated_mlp, "gated_mlp").default_value(Toggle::kPreset)
        .doc("Llama family: a gated MLP, down(act(x W_gate) * x W_up) (SwiGLU with silu, GeGLU with gelu_tanh), or "
             "down(act(x W_in))");
    s.field(&ModelConfig::tie_word_embeddings, "tie_word_embeddings").default_value(Toggle::kPreset)
        .doc("Llama family: the LM head is the embedding table (tie_word_embeddings; Gemma true)");
    return s;
  }();
  return s;
}

const Schema<MeshConfig>& mesh_schema() {
  static const Schema<MeshConfig> s = [] {
    Schema<MeshConfig> s("Mesh", "The device mesh: how many devices each mesh axis spans (MaxText's "
                                 "ici_data_parallelism, ici_fsdp_parallelism, ici_sequence_parallelism, "
                                 "ici_tensor_parallelism). The axes multiply to the slice's devices; one may be "
                                 "-1: the devices the others leave. docs/training.md, \"Meshes\".");
    const std::string axes = "not given: 1; -1: the devices the other axes leave";
    s.field(&MeshConfig::data, "data").range(-1, 1 << 20).default_value(0, "the rest")
        .doc("data-parallel replicas: each holds the whole model (under sharding: fsdp, its fsdp group's shards: "
             "hybrid sharding) and a share of the batch; not given, it takes the devices the other axes leave (1 when "
             "another axis is -1, or under sharding: fsdp)");
    s.field(&MeshConfig::fsdp, "fsdp").range(-1, 1 << 20).default_value(0, "1")
        .doc("FSDP (sharding: fsdp): parameters, gradients and optimizer state split over these devices; under "
             "sharding: fsdp, not given, it takes the devices the data and tensor axes leave; else 1. -1: the rest");
    s.field(&MeshConfig::sequence, "sequence").range(-1, 1 << 20).default_value(0, "1")
        .doc("sequence (context) parallelism: each sequence's tokens split over the axis, keys and values "
             "all-gathered for attention (flash), the weights sharded over fsdp x sequence (sharding: fsdp; "
             "Llama-family models); " + axes);
    s.field(&MeshConfig::tensor, "tensor").range(-1, 1 << 20).default_value(0, "1")
        .doc("tensor (Megatron) parallelism: attention heads, the MLP width and the vocabulary split over these "
             "devices, two all-reduces per layer forward and two backward, or with the activations sharded "
             "(tensor_activations) a reduce-scatter and an all-gather for each (Llama family: Llama, Mistral, Gemma, "
             "GPT-3); " + axes)
        .source("Shoeybi et al., Megatron-LM, arXiv:1909.08053; MaxText logical axis rules");
    return s;
  }();
  return s;
}

const Schema<DcnMeshConfig>& dcn_mesh_schema() {
  static const Schema<DcnMeshConfig> s = [] {
    Schema<DcnMeshConfig> s("DCN mesh", "The mesh across the slices of a multislice run (hardware multislice.slices; "
                                        "MaxText's dcn_*_parallelism): the slices joined by the data-center network. "
                                        "docs/training.md, \"Multislice\".");
    s.field(&DcnMeshConfig::data, "data").range(-1, 1024).default_value(0, "the slices")
        .doc("data-parallel replicas across slices: each slice holds the whole model (as its own mesh shards it) and "
             "a share of the batch; the gradients' sums cross the data-center network. Must equal the hardware's "
             "multislice.slices (-1: all of them)");
    return s;
  }();
  return s;
}

// remat_policy and remat_tensors against each other, the model and fsdp_grad_ckpt.
void check_remat(const TrainingWorkload& t, const CheckContext& c, bool known_model) {
  using models::RematPolicy;
  const RematTensorsConfig& r = t.remat_tensors;
  const models::RematChoice choices[] = {r.query_proj, r.key_proj, r.value_proj, r.context, r.out_proj, r.mlpwi, r.mlpwo};
  bool any = r.decoder_layer_input != models::RematChoice::kDevice;
  for (models::RematChoice x : choices) any = any || x != models::RematChoice::kRemat;
  if (r.decoder_layer_input == models::RematChoice::kRemat)
    c.fail("remat_tensors.decoder_layer_input", "the recomputation starts from the layer's input: it cannot be recomputed",
           "use device (kept in HBM) or offload (kept in host memory)");
  if (any && t.remat_policy != RematPolicy::kCustom)
    c.fail("remat_tensors", "applies to remat_policy: custom only", "add remat_policy: custom, or remove remat_tensors");
  const bool named = t.remat_policy != RematPolicy::kNone && t.remat_policy != RematPolicy::kFull;
  if (named && known_model && !models::llama_like(model_family(t)->id))
    c.fail("remat_policy", "names Llama's tensors (q_proj, ..., down_proj): Llama-family models only",
           "use remat_policy: full (each layer recomputed from its input)");
  if (t.fsdp_grad_ckpt && t.remat_policy != RematPolicy::kNone && t.remat_policy != RematPolicy::kFull)
    c.fail("fsdp_grad_ckpt", "recomputes whole layers; remat_policy " + std::string(enum_name(t.remat_policy)) +
           " says otherwise", "remove fsdp_grad_ckpt (remat_policy applies under fsdp too)");
}

const Schema<RematTensorsConfig>& remat_tensors_schema() {
  static const Schema<RematTensorsConfig> s = [] {
    Schema<RematTensorsConfig> s("Remat tensors", "remat_policy: custom: for each named tensor of a decoder layer, "
                                                  "`device` (kept in HBM from the forward to the backward), `offload` "
                                                  "(copied to the host's memory over PCIe after the forward computes "
                                                  "it, and back into HBM one layer before the backward reads it) or "
                                                  "`remat` (recomputed in the backward from the layer's input).");
    using R = RematTensorsConfig;
    const std::pair<models::RematChoice R::*, const char*> fields[] = {
        {&R::query_proj, "query_proj"}, {&R::key_proj, "key_proj"}, {&R::value_proj, "value_proj"},
        {&R::context, "context"},       {&R::out_proj, "out_proj"}, {&R::mlpwi, "mlpwi"}, {&R::mlpwo, "mlpwo"}};
    const char* docs[] = {"q_proj's output", "k_proj's output", "v_proj's output",
                          "the attention's output before o_proj (flash: with its log-sum-exp)", "o_proj's output",
                          "gate_proj's and up_proj's outputs (MaxText wi_0, wi_1)", "down_proj's output (MaxText wo)"};
    for (size_t i = 0; i < std::size(fields); ++i)
      s.field(fields[i].first, fields[i].second).default_value(models::RematChoice::kRemat).doc(docs[i]);
    s.field(&R::decoder_layer_input, "decoder_layer_input").default_value(models::RematChoice::kDevice)
        .doc("the layer's input (the residual stream), where the recomputation starts: device or offload");
    return s;
  }();
  return s;
}

const Schema<CompileCacheConfig>& compile_cache_schema() {
  static const Schema<CompileCacheConfig> s = [] {
    Schema<CompileCacheConfig> s("Compile cache", "The per-process XLA compilation cache.");
    s.field(&CompileCacheConfig::capacity, "capacity").range(1, 1 << 24).default_value(1024)
        .doc("entries kept in memory, LRU (XLA_COMPILATION_CACHE_SIZE)").source("torch_xla default 1024");
    s.field(&CompileCacheConfig::persistent_dir, "persistent_dir").default_value("", "none")
        .doc("directory of the persistent cache (XLA_PERSISTENT_CACHE_PATH); a later run with the same "
             "directory loads instead of compiling");
    return s;
  }();
  return s;
}

// The simulated presets by task, from the model family registry (models/families.h).
std::string presets_by_task() {
  std::vector<std::pair<std::string, std::vector<std::string>>> groups;  // tasks with the same presets
  for (models::Head h : models::kHeads) {
    std::vector<std::string> names = models::preset_names_with_head(h);
    if (!groups.empty() && groups.back().second == names)
      groups.back().first += " or " + models::head_name(h);
    else
      groups.push_back({models::head_name(h), std::move(names)});
  }
  std::string s;
  for (const auto& [tasks, names] : groups) s += (s.empty() ? "with task " : "; with task ") + tasks + ": " + config::join(names);
  return s;
}

// The settings modelled for the Llama family only (flash attention, tensor parallelism, quantization,
// named remat policies) and the parallelism settings against each other.
void check_llm_settings(const TrainingWorkload& t, const CheckContext& c, bool known_model) {
  const bool llama = !known_model || models::llama_like(model_family(t)->id);
  auto llama_only = [&](bool set, const char* key, const std::string& what, const char* suggestion) {
    if (set && !llama) c.fail(key, what + " modelled for Llama-family models only", suggestion);
  };
  llama_only(t.attention == Attention::kFlash, "attention", "flash attention is", "use attention: eager");
  llama_only(t.mesh.tensor != 0 && t.mesh.tensor != 1, "mesh.tensor", "tensor parallelism is", "remove mesh.tensor");
  llama_only(t.quantization != Quantization::kNone, "quantization", "quantized matmuls are", "remove quantization");
  if (t.mesh.fsdp != 0 && t.mesh.fsdp != 1 && t.sharding != Sharding::kFsdp)
    c.fail("mesh.fsdp", "splits the model state: that is sharding: fsdp", "add sharding: fsdp");
  llama_only(t.mesh.sequence != 0 && t.mesh.sequence != 1, "mesh.sequence", "sequence parallelism is", "remove mesh.sequence");
  if (t.mesh.sequence != 0 && t.mesh.sequence != 1 && t.sharding != Sharding::kFsdp)
    c.fail("mesh.sequence", "splits the model state too (MaxText shards the weights over the fsdp and sequence axes): "
           "that is sharding: fsdp", "add sharding: fsdp");
  check_remat(t, c, known_model);
  if (t.fsdp_grad_ckpt && t.sharding != Sharding::kFsdp)
    c.fail("fsdp_grad_ckpt", "applies to sharding: fsdp only (checkpointing of FSDP-wrapped layers)",
           "add sharding: fsdp, or remove fsdp_grad_ckpt");
  if (t.sharding == Sharding::kFsdp && t.gradient_accumulation_steps > 1)
    c.fail("gradient_accumulation_steps", "is not modelled with sharding: fsdp (FSDP accumulates sharded "
           "gradients across micro-steps without reduce-scatters, which tpusim does not build)",
           "use gradient_accumulation_steps: 1 with fsdp, or sharding: data_parallel");
}

// The checks across the fields of a training workload (each at the key it names).
void check_training(const WorkloadConfig& w, const CheckContext& c) {
  const TrainingWorkload& t = w.training();
  if (t.eval_strategy == EvalStrategy::kSteps && t.eval_steps == 0)
    c.fail_missing("eval_steps", "must be > 0 with eval_strategy: steps (evaluate every N optimizer steps)",
           "set eval_steps: N, or use eval_strategy: epoch");
  if (t.eval_strategy == EvalStrategy::kSteps && t.dataset.eval.empty())
    c.fail_missing("dataset.eval", "is required by eval_strategy: steps (Trainer: evaluation requires an eval_dataset)",
           "add dataset.eval, or use eval_strategy: no");
  if (t.sharding != Sharding::kFsdp && (t.fsdp_min_num_params > 0 || !t.fsdp_wrap_layer_classes.empty()))
    c.fail(t.fsdp_min_num_params > 0 ? "fsdp_min_num_params" : "fsdp_wrap_layer_classes",
           "decides FSDP's wrapping units: applies to sharding: fsdp only", "add sharding: fsdp, or remove it");
  if (t.fsdp_min_num_params > 0 && !t.fsdp_wrap_layer_classes.empty())
    c.fail("fsdp_wrap_layer_classes", "and fsdp_min_num_params are mutually exclusive (Trainer: min_num_params and "
           "transformer_layer_cls_to_wrap)", "keep one of them");
  for (size_t i = 0; i < t.fsdp_wrap_layer_classes.size(); ++i) {
    const std::string& n = t.fsdp_wrap_layer_classes[i];
    const models::Family* family = model_family(t);
    const std::vector<std::string>& known =
        (family ? *family : models::family(models::ModelFamily::kBert)).modules.classes();
    if (std::find(known.begin(), known.end(), n) == known.end())
      c.fail("fsdp_wrap_layer_classes", "'" + n + "' is not a module class of the model; known: " + config::join(known),
             config::suggest(n, known, "known classes"));
  }
  const auto preset = models::find_model_preset(t.model);
  const bool vit = preset && preset->family == models::ModelFamily::kVit;
  if (t.task == Task::kImageClassification) {
    if (!vit)
      c.fail("model", "task image_classification needs a ViT preset (ViTForImageClassification)",
             "model: google/vit-base-patch16-224");
    else if (t.image_size % uint32_t(preset->patch_size) != 0 || t.image_size != uint32_t(preset->image_size))
      c.fail("image_size", "must be " + std::to_string(preset->image_size) + ", the image size of " + preset->name +
             " (a multiple of its patch " + std::to_string(preset->patch_size) + "; Hugging Face raises for another "
             "size unless interpolate_pos_encoding, which tpusim does not model)",
             "image_size: " + std::to_string(preset->image_size) + " (resize the images in the transform)");
    const ModelConfig& m = t.model_config;
    if (m.layers || m.hidden || m.heads || m.intermediate || m.vocab || m.max_position)
      c.fail("model_config", "is a BERT architecture override: it does not apply to task image_classification",
             "remove model_config");
    if (t.padding != data::PaddingSpec::max_length())
      c.fail("padding", "does not apply to task image_classification (every image is one sequence of fixed length)",
             "remove padding");
    for (const auto& [key, ref] : {std::pair{"dataset.train", t.dataset.train}, std::pair{"dataset.eval", t.dataset.eval}})
      if (!ref.empty() && ref.rfind("images:", 0) != 0)
        c.fail(key, "must be images:COUNT with task image_classification (a count of images, not token lengths)",
               "e.g. images:50000");
  } else {
    if (vit)
      c.fail("task", "'" + std::string(enum_name(t.task)) + "' is a text task; " + t.model + " is a vision model (ViTForImageClassification)",
             "task: image_classification");
    for (const auto& [key, ref] : {std::pair{"dataset.train", t.dataset.train}, std::pair{"dataset.eval", t.dataset.eval}})
      if (ref.rfind("images:", 0) == 0)
        c.fail(key, "is an image dataset: it applies to task image_classification only",
               "use a token-length dataset, or task: image_classification");
  }
  if (t.model == "custom") {
    const ModelConfig& m = t.model_config;
    for (auto [key, v] : {std::pair{"layers", m.layers}, std::pair{"hidden", m.hidden}, std::pair{"heads", m.heads},
                          std::pair{"intermediate", m.intermediate}, std::pair{"vocab", m.vocab}})
      if (v == 0) c.fail(std::string("model_config.") + key, "is required with model: custom (no preset to take it from)");
  } else {
    if (const auto e = models::unsimulated_model_error(t.model))
      c.fail("model", e->rule + (models::find_model_preset(t.model) ? "" : "; or custom with a model_config"),
             e->suggestion);
  }
  models::ModelArch r;
  bool known_model = true;
  try {
    r = resolve_model_arch(t);
  } catch (const ConfigError&) {  // an unknown preset: reported above
    known_model = false;
  }
  const ModelConfig& mc = t.model_config;
  const bool decoder_fields = mc.mlp_activation != MlpActivation::kPreset || mc.gated_mlp != Toggle::kPreset ||
                              mc.tie_word_embeddings != Toggle::kPreset;
  if (decoder_fields && known_model && !models::llama_like(model_family(t)->id))
    c.fail("model_config", "mlp_activation, gated_mlp and tie_word_embeddings apply to Llama-family models (Llama, Mistral, "
           "Gemma, GPT-3)", "remove them");
  else if (decoder_fields && known_model) {
    const MlpChoice mlp = resolve_mlp(mc, models::find_preset(t.model).activation);
    if (!mlp.error.empty()) c.fail(mc.gated_mlp != Toggle::kPreset ? "model_config.gated_mlp" : "model_config.mlp_activation", mlp.error);
  }
  if ((t.model_config.kv_heads || t.model_config.head_dim) && known_model && !models::llama_like(model_family(t)->id))
    c.fail(t.model_config.kv_heads ? "model_config.kv_heads" : "model_config.head_dim",
           "applies to Llama-family models (their attention takes it from config.json)", "remove it");
  if (t.model_config.kv_heads && r.heads % r.kv_heads != 0)
    c.fail("model_config.kv_heads", "must divide heads (" + std::to_string(r.heads) + ")");
  if ((t.model_config.hidden || t.model_config.heads) && r.heads > 0 && r.hidden % r.heads != 0 &&
      t.model_config.head_dim == 0)
    c.fail("model_config.heads", "must divide hidden (" + std::to_string(r.hidden) + ")");
  // The task's head belongs to some families only (models/families.h): causal_lm is GPT2LMHeadModel's
  // or LlamaForCausalLM's, seq2seq an encoder–decoder's.
  auto has_head = [&](models::Head h) {
    const auto& heads = model_family(t)->heads;
    return std::find(heads.begin(), heads.end(), h) != heads.end();
  };
  if (known_model && (t.task == Task::kCausalLm) != has_head(models::Head::kCausalLm))
    c.fail("task", t.task == Task::kCausalLm
                       ? "causal_lm is GPT2LMHeadModel's and LlamaForCausalLM's task: it needs a GPT-2 or Llama "
                         "model (" + config::join(models::preset_names_with_head(models::Head::kCausalLm)) + ")"
                       : "is a BERT head; " + t.model + " is a causal LM, simulated with task causal_lm",
           t.task == Task::kCausalLm ? "use model: gpt2, or a BERT task" : "use task: causal_lm");
  if (known_model && (t.task == Task::kSeq2seq) != has_head(models::Head::kSeq2Seq))
    c.fail("task", t.task == Task::kSeq2seq
                       ? "seq2seq is an encoder–decoder task: it needs a T5 or BART model (" +
                             config::join(models::preset_names_with_head(models::Head::kSeq2Seq)) + ")"
                       : "is not an encoder–decoder task; " + t.model + " is simulated with task seq2seq",
           t.task == Task::kSeq2seq ? "use model: t5-small, or another task" : "use task: seq2seq");
  if (t.task == Task::kSeq2seq) {
    if (t.dataset.train_target.empty())
      c.fail_missing("dataset.train_target", "is required by task seq2seq: the targets' lengths",
                     "e.g. dataset: {train: {source: fixed:512, target: fixed:128}}");
    if (!t.dataset.eval.empty() && t.dataset.eval_target.empty())
      c.fail_missing("dataset.eval_target", "is required by task seq2seq when dataset.eval is given",
                     "e.g. dataset: {eval: {source: fixed:512, target: fixed:128}}");
  } else {
    for (const auto& [key, ref] : {std::pair{"dataset.train_target", t.dataset.train_target},
                                   std::pair{"dataset.eval_target", t.dataset.eval_target}})
      if (!ref.empty())
        c.fail(key, "is a seq2seq target: task " + std::string(enum_name(t.task)) + " reads single sequences", "remove it, or use task: seq2seq");
  }
  if (known_model && t.task == Task::kSeq2seq && r.max_position > 0 && t.max_target_length > r.max_position)
    c.fail("max_target_length", "must be at most the model's " + std::to_string(r.max_position) +
                                    " position embeddings (max_position_embeddings)",
           "max_target_length: " + std::to_string(r.max_position));
  if (known_model && r.max_position > 0 && t.max_length > r.max_position)
    c.fail("max_length", "must be at most the model's " + std::to_string(r.max_position) +
                             " position embeddings (max_position_embeddings / n_positions)",
           "max_length: " + std::to_string(r.max_position));
  if (t.steps_per_execution > 1 && t.framework != FrameworkKind::kTfKeras)
    c.fail("steps_per_execution", "is a Keras Model.compile setting: only framework tf_keras runs several steps "
           "per dispatch", "remove it, or use framework: tf_keras");
  if (t.spmd && t.framework != FrameworkKind::kTorchXla)
    c.fail("spmd", "is PyTorch/XLA's SPMD mode; framework " + std::string(enum_name(t.framework)) +
                       " runs SPMD programs already", "remove it");
  if (t.spmd && t.launcher != Launcher::kXlaSpawn)
    c.fail("spmd", "SPMD mode runs one process per host; a notebook's forked processes are one per device",
           "remove launcher: notebook_fork");
  if (t.tpu_runtime == TpuRuntime::kNode && t.framework != FrameworkKind::kTfKeras)
    c.fail("tpu_runtime", "TPU Nodes are modelled for framework tf_keras only (JAX and current PyTorch/XLA run on "
           "TPU VMs)", "use tpu_runtime: vm");
  if (t.framework != FrameworkKind::kTorchXla && (t.launcher != Launcher::kXlaSpawn || !t.model_code.empty()))
    c.fail(t.launcher != Launcher::kXlaSpawn ? "launcher" : "model_code",
           "is a PyTorch/XLA setting; framework " + std::string(enum_name(t.framework)) + " does not use it", "remove it");
  data::ErrorWhere where{};
  for (const auto& [key, ref] : {std::pair{"dataset.train", t.dataset.train}, std::pair{"dataset.eval", t.dataset.eval},
                                 std::pair{"dataset.train_target", t.dataset.train_target},
                                 std::pair{"dataset.eval_target", t.dataset.eval_target}}) {
    if (ref.empty() && std::string(key) != "dataset.train") continue;
    try {
      data::parse_dataset_ref(ref, where);
    } catch (const ConfigError& e) {
      c.fail(key, std::string("is not a dataset reference: ") + e.what());
    }
  }
  check_llm_settings(t, c, known_model);
  // A fraction is MaxText's (a tensor x sequence group sharing examples: shard_examples checks it
  // against the mesh); Accelerate's batch settings take whole examples.
  const bool fraction = t.per_device_batch_size != std::floor(t.per_device_batch_size);
  if (fraction && t.split_batches)
    c.fail("per_device_batch_size", "must be a whole number under split_batches (the global batch)", "give a whole number");
  if (fraction && t.auto_find_batch_size)
    c.fail("auto_find_batch_size", "halves a whole per_device_batch_size; this one is a fraction",
           "remove auto_find_batch_size, or give a whole per_device_batch_size");
}

}  // namespace

const Schema<WorkloadConfig>& training_schema() {
  static const Schema<WorkloadConfig> s = [] {
    using TW = TrainingWorkload;
    Schema<WorkloadConfig> s("Workload, kind: training",
                             "Fine-tunes a BERT-family, GPT-2, Llama, T5, BART or ViT model data-parallel or FSDP-sharded on every device (TensorCore; chip under megacore) of the slice, step by "
                             "step under a framework's semantics (compiles, recompiles, warm-up, host tracing, "
                             "evaluation), as docs/training.md describes.");
    s.tag("kind", "training", "workload kind (selects this schema)");
    s.field(&WorkloadConfig::name, "name").default_value("", "file stem").doc("workload name, shown in reports");
    s.field(&WorkloadConfig::spec, &TW::model, "model").doc("model preset (Hugging Face hub name), or `custom`")
        .details("Simulated " + presets_by_task() + " (`tpusim models` lists every preset). `custom` takes the whole architecture from `model_config`; the inline form `model: {layers: 4, hidden: 256, ...}` is the same as "
                 "`model: custom` with that `model_config`.");
    s.section(&WorkloadConfig::spec, &TW::model_config, "model_config", model_config_schema());
    s.field(&WorkloadConfig::spec, &TW::task, "task")
        .default_value(Task::kSequenceClassification)
        .doc("head and loss: BertForSequenceClassification, BertForPreTraining, GPT2LMHeadModel or LlamaForCausalLM "
             "(causal_lm), T5ForConditionalGeneration or BartForConditionalGeneration (seq2seq) or ViTForImageClassification")
        .details("`causal_lm` (GPT-2 and Llama models only): GPT2LMHeadModel (the LM head tied to the token embedding; "
                 "models/gpt2.h) or LlamaForCausalLM (untied lm_head; models/llama.h), the shifted cross-entropy over "
                 "the vocabulary at every position. "
                 "`seq2seq` (T5 and BART models): T5ForConditionalGeneration or BartForConditionalGeneration, an encoder over the padded source (S = "
                 "`max_length` and `padding`) and a decoder over the padded target (T = `max_target_length`, the same "
                 "padding rule), cross-entropy over the vocabulary at every target position (models/t5.h, models/bart.h); the "
                 "dataset gives source and target lengths (`dataset.train_target`), and a change of S or T is a "
                 "compilation. "
                 "`image_classification` takes a ViT preset (google/vit-base-patch16-224) and an `images:COUNT` "
                 "dataset; the sequence is fixed by the image ((image_size / patch)^2 + 1 = 197), so `max_length` "
                 "and `padding` do not apply (one shape, one compile), and each example's infeed is the "
                 "normalized float tensor of 3 x image_size^2 values, as torch_xla moves it (docs/models.md, \"ViT\").");
    s.field(&WorkloadConfig::spec, &TW::image_size, "image_size").unit("pixels").range(1, 1 << 14).default_value(224)
        .doc("image_classification: image height and width; must be the preset's image_size (a multiple of its patch)")
        .source("Hugging Face ViTEmbeddings raises for another size unless interpolate_pos_encoding");
    s.field(&WorkloadConfig::spec, &TW::max_predictions_per_seq, "max_predictions_per_seq").range(1, 512)
        .default_value(20).doc("masked_lm: masked positions per sequence").source("BERT pre-training data, S=128");
    s.field(&WorkloadConfig::spec, &TW::num_labels, "num_labels").range(1, 1 << 20).default_value(2)
        .doc("sequence_classification, image_classification: classifier outputs (1 = regression)");
    s.section(&WorkloadConfig::spec, &TW::dataset, "dataset", datasets_schema());
    s.field(&WorkloadConfig::spec, &TW::max_length, "max_length").unit("tokens").range(1, kMaxTokens).default_value(128)
        .doc("tokenizer truncation length")
        .details("At most the model's position embeddings (BERT 512, GPT-2 1024, Llama-2 4,096, Meta-Llama-3 8,192, Llama-3.1 131,072).");
    s.field(&WorkloadConfig::spec, &TW::max_target_length, "max_target_length").unit("tokens").range(1, kMaxTokens)
        .default_value(128).doc("seq2seq: truncation length of the targets (run_summarization's max_target_length)")
        .details("`max_length` (also spelt `max_source_length`) truncates the sources; `padding` applies to both "
                 "sides, each padded by its own lengths.")
        .source("transformers examples run_summarization.py / run_translation.py (default 128)");
    s.field(&WorkloadConfig::spec, &TW::padding, "padding").default_value(data::PaddingSpec::max_length())
        .doc("max_length | longest | multiple_of:N (also the map form {multiple_of: N})")
        .details("`max_length`: every batch is padded to max_length; `longest`: to the longest example of the "
                 "batch (DataCollatorWithPadding); `multiple_of:N`: the longest rounded up to a multiple of N, "
                 "capped at max_length (pad_to_multiple_of). Every distinct padded shape is a compilation.");
    s.field(&WorkloadConfig::spec, &TW::per_device_batch_size, "per_device_batch_size").unit("examples")
        .greater_than(0).max(1 << 20)
        .doc("batch per device and micro-step (per_device_train_batch_size): per TensorCore on v2/v3, per chip on a "
             "megacore chip (v4, chip.megacore), whose two cores take half each. A fraction where the devices of a "
             "tensor x sequence group share examples (MaxText's per_device_batch_size=0.25 with a sequence axis of "
             "4: one sequence over 4 devices); per_device_batch_size x tensor x sequence must be a whole number")
        .source("MaxText base.yml per_device_batch_size; Trainer per_device_train_batch_size");
    s.field(&WorkloadConfig::spec, &TW::eval_per_device_batch_size, "eval_per_device_batch_size").unit("examples")
        .range(0, 1 << 20).default_value(0, "per_device_batch_size")
        .doc("evaluation batch per device (a fraction as per_device_batch_size); a different batch is a different "
             "program (a compile and an allocation)");
    s.field(&WorkloadConfig::spec, &TW::epochs, "epochs").range(1, 1 << 20).default_value(1).doc("passes over the training split");
    s.field(&WorkloadConfig::spec, &TW::steps, "steps").default_value(0, "no cap")
        .doc("stop after this many training micro-steps in total (0 = no cap); evaluation still runs at the end");
    s.field(&WorkloadConfig::spec, &TW::optimizer, "optimizer").default_value(models::OptimizerKind::kAdamW).doc("optimizer (torch.optim.AdamW / SGD / LAMB / transformers Adafactor)")
        .details("`adafactor` is Trainer's optim=\"adafactor\" (scale_parameter=False, relative_step=False, no first "
                 "moment): a factored second moment (a row and a column vector) per weight of rank >= 2, a full "
                 "one per 1-D parameter, the update's RMS clipped at 1 (docs/training.md, \"Optimizers\"); under "
                 "`sharding: fsdp` the flattened 1-D slices get full second moments, as in torch_xla FSDP")
        .source("Shazeer & Stern 2018, arXiv:1804.04235; transformers optimization.py Adafactor");
    s.field(&WorkloadConfig::spec, &TW::precision, "precision")
        .default_value(Precision::kFp32).doc("float precision of the step graph")
        .details("`fp32`: every float tensor f32. `bf16` (XLA_USE_BF16=1, Accelerate mixed_precision=bf16 on TPU): "
                 "every float tensor bf16, incl. weights, gradients and optimizer state. `bf16_downcast` "
                 "(XLA_DOWNCAST_BF16=1): f32 tensors become bf16, the same tensors as `bf16` for BERT. "
                 "`mixed_bf16` (torch.autocast with bfloat16): f32 master weights, gradients and optimizer "
                 "state; every weight is converted to bf16 where it is used (XLA fuses the convert into the "
                 "consumer or keeps a bf16 copy for the backward pass) and activations are bf16.")
        .source("docs/sources.md; torch_xla docs");
    s.field(&WorkloadConfig::spec, &TW::gradient_accumulation_steps, "gradient_accumulation_steps").range(1, 1 << 16)
        .default_value(1).doc("micro-steps per optimizer step; non-sync micro-steps skip the all-reduce and optimizer");
    s.field(&WorkloadConfig::spec, &TW::sharding, "sharding")
        .default_value(Sharding::kDataParallel).doc("how the model state is spread over the cores (docs/training.md, \"FSDP\")")
        .details("`data_parallel`: every core holds all parameters, gradients and optimizer state; the gradients "
                 "are all-reduced before the update. `fsdp` (torch_xla XlaFullyShardedDataParallel, "
                 "flatten_parameters=True, each BertLayer, the embeddings and the heads wrapped as units): each "
                 "core holds 1/n of them; a unit's parameters are all-gathered before its forward and again "
                 "before its backward, its gradients reduce-scattered after its backward, and each core updates "
                 "its own slice.")
        .source("torch_xla FSDP docs; Xu et al., arXiv:2004.13336");
    s.section(&WorkloadConfig::spec, &TW::mesh, "mesh", mesh_schema());
    s.section(&WorkloadConfig::spec, &TW::dcn_mesh, "dcn_mesh", dcn_mesh_schema());
    s.field(&WorkloadConfig::spec, &TW::remat_policy, "remat_policy").default_value(models::RematPolicy::kNone)
        .doc("which activations of each decoder layer the backward recomputes (MaxText remat_policy; docs/training.md, "
             "\"Rematerialization\")")
        .details("`none`: every activation is kept. `full`: only each layer's input (Hugging Face "
                 "gradient_checkpointing, fsdp_grad_ckpt). `minimal`: the layer's matmul outputs are kept, the rest "
                 "recomputed. `save_dot_except_mlpwi`, `save_dot_except_mlp`, `save_qkv_proj`: fewer of them. "
                 "`qkv_proj_offloaded`: q, k and v kept in host memory; `minimal_offloaded`: minimal's tensors in host "
                 "memory (copied over PCIe after the forward computes them, back one layer before the backward reads "
                 "them). `custom`: per tensor, `remat_tensors`. Policies other than none and full name Llama's "
                 "tensors (Llama family).")
        .source("MaxText base.yml remat_policy; jax.checkpoint_policies");
    s.section(&WorkloadConfig::spec, &TW::remat_tensors, "remat_tensors", remat_tensors_schema());
    s.field(&WorkloadConfig::spec, &TW::quantization, "quantization").default_value(Quantization::kNone)
        .doc("none | int8 | fp8: the decoder layers' projections as quantized matmuls, forward and backward (MaxText's "
             "AQT int8 / fp8; docs/training.md, \"Quantization\"); Llama family")
        .details("The operands are quantized on the VPU as the matmul reads them, the MXU runs at the chip's int8 "
                 "(fp8) rate (chip mxu.int8_rate: twice bf16 on v5e, v5p, v6e; the bf16 rate on v4; fp8 on v6e only), "
                 "the result is dequantized. Attention's matmuls and the LM head stay bf16. A chip without the "
                 "format is an error.")
        .source("MaxText quantization=int8 (AQT); Cloud TPU v5e/v5p/v6e peak int8 TOP/s");
    s.field(&WorkloadConfig::spec, &TW::fsdp_grad_ckpt, "fsdp_grad_ckpt").default_value(false)
        .doc("fsdp: gradient checkpointing per encoder layer (Trainer fsdp_config xla_fsdp_grad_ckpt): only each "
             "layer's input is kept, its forward is recomputed in the backward");
    s.field(&WorkloadConfig::spec, &TW::attention, "attention").default_value(Attention::kAuto)
        .doc("auto | eager | flash: how attention runs (docs/models.md, \"Flash attention\"); auto is flash under "
             "framework jax (MaxText), eager otherwise")
        .details("`eager`: the scores and probabilities [B, heads, S, S] are tensors in HBM, as transformers' eager "
                 "attention runs under XLA. `flash`: one fused kernel per direction (MaxText's splash attention, "
                 "PyTorch/XLA's Pallas flash_attention): blocks of queries and keys in VMEM, an online softmax, "
                 "causal blocks skipped, the backward recomputing the probabilities; no [S, S] tensor. Llama "
                 "models; packed (unpadded) sequences.")
        .source("MaxText attention=flash / splash attention; torch_xla.experimental.custom_kernel.flash_attention");
    s.field(&WorkloadConfig::spec, &TW::sa_block_q, "sa_block_q").unit("tokens").range(8, 1 << 16).default_value(512)
        .doc("flash attention: query rows per block (MaxText sa_block_q)").source("MaxText base.yml (512)");
    s.field(&WorkloadConfig::spec, &TW::sa_block_kv, "sa_block_kv").unit("tokens").range(8, 1 << 16).default_value(512)
        .doc("flash attention: key rows per block (MaxText sa_block_kv)").source("MaxText base.yml (512)");
    s.field(&WorkloadConfig::spec, &TW::tensor_activations, "tensor_activations").default_value(TensorActivations::kAuto)
        .doc("auto | sharded | replicated: under mesh.tensor, the activations between the blocks (the residual "
             "stream); auto is sharded under framework jax (MaxText), replicated otherwise (docs/training.md, "
             "\"Meshes\")")
        .details("`sharded`: split along the hidden dimension over the tensor axis (MaxText's logical axis rule "
                 "activation_embed -> tensor): each block's normed input is all-gathered before its first "
                 "projections and its o_proj / down_proj sums reduce-scattered back, the norms run on each "
                 "device's columns (their sums all-reduced), and the saved layer inputs take 1/T of the memory. "
                 "`replicated`: the stream whole on every device, each o_proj / down_proj sum all-reduced "
                 "(Megatron-LM without sequence parallelism). The same bytes cross the links either way.")
        .source("MaxText base.yml logical_axis_rules; Korthikanti et al., arXiv:2205.05198");
    s.field(&WorkloadConfig::spec, &TW::context_parallel_load_balance, "context_parallel_load_balance").default_value(true)
        .doc("mesh.sequence: the sequence is cut into 2 x S chunks and device i of a sequence group takes chunks i "
             "and 2S - 1 - i, so that under the causal mask every device has the same attention work; false: "
             "device i takes the i-th block of max_length / S tokens, and the step waits for the last, whose "
             "queries see every key (docs/training.md, \"Meshes\")")
        .source("MaxText base.yml context_parallel_load_balance (True)");
    s.field(&WorkloadConfig::spec, &TW::overlap_collectives, "overlap_collectives").default_value(true)
        .doc("run collectives in the background of compute where XLA's latency-hiding scheduler does: each "
             "combined gradient all-reduce starts when the backward pass has produced its gradients; fsdp: "
             "all-gathers are issued one unit ahead and reduce-scatters run beside the backward pass")
        .details("XLA splits a collective into start and done and schedules compute between them. With "
                 "`true` each combined all-reduce runs on the cores' background DMA and VPU queues while the rest "
                 "of the backward pass computes (those kernels get 4 x 1 MiB less VMEM, the collective's staging); "
                 "the optimizer waits for all of them. `false`: every all-reduce starts after the backward pass "
                 "(what a framework that syncs gradients outside the compiled step does). With `sharding: fsdp` the "
                 "all-gathers and reduce-scatters go on the background queues the same way, each unit's all-gather "
                 "issued when the previous unit's parameters are needed (so two units' gathered parameters are "
                 "live at once, which the memory plan counts), each kernel waiting only for the gathers it reads.")
        .source("XLA latency-hiding scheduler (xla/service/latency_hiding_scheduler.h); async collectives "
                "(all-reduce-start / all-reduce-done in XLA's HLO)");
    s.field(&WorkloadConfig::spec, &TW::rematerialization, "rematerialization").default_value(true)
        .doc("when a step's buffers exceed the device's HBM, recompute values live across the memory peak before "
             "declaring out of HBM, as XLA's rematerialization pass does (docs/training.md, \"Automatic "
             "rematerialization\")")
        .details("The compiler walks the memory peaks and recomputes, one at a time, the values live across the "
                 "peak whose recomputation costs the least time per byte it frees (a dropout's or GELU's output "
                 "before a matmul's), each with a kernel of its own right before its first reader after the peak, "
                 "until the program fits. What it recomputed is reported (programs[].rematerialization, the "
                 "`remat` line). `false`: a program over HBM fails as it is planned.")
        .source("XLA HloRematerialization (xla/service/hlo_rematerialization.h), run by the TPU compiler with the "
                "device's memory as its limit");
    s.field(&WorkloadConfig::spec, &TW::framework, "framework").default_value(FrameworkKind::kTorchXla)
        .doc("framework personality (docs/training.md, \"Frameworks\")")
        .details("`torch_xla` (PyTorch/XLA + Accelerate: a process per device, lazy tracing every step), `tf_keras` "
                 "(TPUStrategy: one client, one SPMD compile per input signature, `steps_per_execution`), `jax` "
                 "(pjit: a process per host, one compile per signature on each).");
    s.field(&WorkloadConfig::spec, &TW::spmd, "spmd").default_value(false)
        .doc("torch_xla: SPMD mode (torch_xla.runtime.use_spmd(); what Trainer's fsdp_config xla_fsdp_v2 runs): one "
             "process per host drives its devices as one SPMD program")
        .details("Without it PyTorch/XLA runs a process per device (xla_spawn), each compiling its own program. In "
                 "SPMD mode one process per host traces the step every step (lazy tensors, as before) and compiles "
                 "one program for the global batch shape, which XLA's partitioner splits over the devices; "
                 "torch.optim still builds its state in the first step. With `sharding: fsdp` this is FSDPv2 "
                 "(SpmdFullyShardedDataParallel, parameters sharded over the mesh's fsdp axis, gathered per wrapped "
                 "layer): tpusim gathers each unit's parameters as one flat buffer, the same bytes.")
        .source("PyTorch/XLA SPMD user guide (torch_xla.runtime.use_spmd, FSDPv2); transformers Trainer fsdp_config "
                "xla_fsdp_v2");
    s.field(&WorkloadConfig::spec, &TW::steps_per_execution, "steps_per_execution").range(1, 1 << 20)
        .default_value(1).doc("tf_keras: training steps per host dispatch (Model.compile(steps_per_execution=N))");
    s.field(&WorkloadConfig::spec, &TW::jit_compile, "jit_compile").default_value(true)
        .doc("tf_keras: Model.compile(jit_compile=...); under TPUStrategy every step is XLA-compiled either way");
    s.field(&WorkloadConfig::spec, &TW::tpu_runtime, "tpu_runtime").default_value(TpuRuntime::kVm)
        .doc("TPU VM (the input pipeline runs on the TPU host) or TPU Node (tf_keras: it runs on your VM and "
             "reaches the TPU over the network; it cannot read your VM's local disk)");
    s.field(&WorkloadConfig::spec, &TW::data_location, "data_location")
        .default_value(DataLocation::kLocal).doc("where the dataset files are: local disk, or Cloud Storage (gs://)");
    s.field(&WorkloadConfig::spec, &TW::seed, "seed").default_value(0).doc("run seed (epoch shuffles, synthetic datasets)");
    s.field(&WorkloadConfig::spec, &TW::split_batches, "split_batches").default_value(false)
        .doc("Accelerate split_batches: per_device_batch_size is the global batch, split across processes");
    s.field(&WorkloadConfig::spec, &TW::even_batches, "even_batches").default_value(true)
        .doc("Accelerate even_batches: pad the last round with examples from the start of the epoch");
    s.field(&WorkloadConfig::spec, &TW::drop_last, "drop_last").default_value(false)
        .doc("DataLoader drop_last: drop the last incomplete global batch");
    s.section(&WorkloadConfig::spec, &TW::compile_cache, "compile_cache", compile_cache_schema());
    s.field(&WorkloadConfig::spec, &TW::launcher, "launcher")
        .default_value(Launcher::kXlaSpawn).doc("xla_spawn (xmp.spawn, one process per device) or notebook_fork (notebook_launcher)");
    s.field(&WorkloadConfig::spec, &TW::build_model_in_each_process, "build_model_in_each_process")
        .default_value(false)
        .doc("notebook_fork: the training function builds its own model (a copy per process in host RAM)");
    std::string constructs;
    for (const XlaConstruct& c : xla_constructs())
      constructs += fmt::format("{}`{}` (`{}`: {}; rewrite: {})", constructs.empty() ? "" : "; ", c.name, c.code, c.rule,
                                c.rewrite);
    s.field(&WorkloadConfig::spec, &TW::model_code, "model_code").one_of(xla_construct_names())
        .default_value(std::vector<std::string>{}, "none")
        .doc("XLA-incompatible constructs present in the training step (each once per step)")
        .details("Each is reported (report.json `diagnostics`, a warning) with the rule it breaks and the standard "
                 "rewrite, and costs what PyTorch/XLA makes it cost (docs/training.md, \"XLA rules\"): " + constructs + ".")
        .source("docs/sources.md; PyTorch/XLA troubleshooting guide");
    s.field(&WorkloadConfig::spec, &TW::strict_xla, "strict_xla").default_value(false)
        .doc("a `model_code` construct fails the run like an XLA error (exit 3) instead of a warning");
    s.field(&WorkloadConfig::spec, &TW::tpu_metrics_debug, "tpu_metrics_debug").default_value(false)
        .doc("print a torch_xla-style metrics report at the end of the run (Trainer debug: tpu_metrics_debug)");
    s.field(&WorkloadConfig::spec, &TW::num_processes, "num_processes").range(0, 1 << 20)
        .default_value(0, "one per device")
        .doc("Accelerate num_processes: must equal the slice's devices (tpusim runs one process per device); "
             "0 = not given");
    s.field(&WorkloadConfig::spec, &TW::eval_strategy, "eval_strategy")
        .default_value(EvalStrategy::kEpoch).doc("when the eval split is evaluated: after every epoch, every `eval_steps` optimizer "
                                    "steps, or never (Trainer eval_strategy)")
        .details("`epoch` (the default) evaluates after each epoch when `dataset.eval` is given; `steps` after every "
                 "optimizer step whose count is a multiple of `eval_steps` (Trainer's DefaultFlowCallback: no extra "
                 "evaluation at the end); `no` never, even with `dataset.eval`.")
        .source("transformers TrainingArguments.eval_strategy, DefaultFlowCallback");
    s.field(&WorkloadConfig::spec, &TW::eval_steps, "eval_steps").unit("optimizer steps").default_value(0, "none")
        .doc("eval_strategy steps: evaluate every N optimizer steps (required > 0 there)");
    s.field(&WorkloadConfig::spec, &TW::eval_precision, "eval_precision")
        .default_value(EvalPrecision::kSame).doc("evaluation programs' float precision: the training's, or bf16 (Trainer bf16_full_eval)")
        .details("`bf16`: the eval program is its own compile whose activations are bf16 while training stays as set; "
                 "the stored weights are cast to bf16 where each eval step uses them (docs/training.md, "
                 "\"Evaluation and logging\").")
        .source("transformers TrainingArguments.bf16_full_eval");
    s.field(&WorkloadConfig::spec, &TW::logging_steps, "logging_steps").unit("optimizer steps").default_value(0, "never")
        .doc("every N optimizer steps the loop logs the loss (loss.item(): the host waits for the device)")
        .source("transformers TrainingArguments.logging_steps; Trainer._maybe_log_save_evaluate");
    s.field(&WorkloadConfig::spec, &TW::auto_find_batch_size, "auto_find_batch_size").default_value(false)
        .doc("on out-of-HBM, halve per_device_batch_size and start over, down to 1 (accelerate's "
             "find_executable_batch_size)")
        .source("transformers TrainingArguments.auto_find_batch_size; accelerate.utils.find_executable_batch_size");
    s.field(&WorkloadConfig::spec, &TW::fsdp_min_num_params, "fsdp_min_num_params").unit("parameters")
        .default_value(0, "off").doc("sharding fsdp: a module becomes an FSDP unit once its parameters not in a sub-unit reach N "
                                     "(size_based_auto_wrap_policy)")
        .details("Bottom-up over the module tree (BertLayer's sub-modules, the layer, the encoder, the model); "
                 "what no unit takes is the root unit, gathered for the whole step. With neither this nor "
                 "`fsdp_wrap_layer_classes`: the embeddings, each BertLayer and the heads are the units.")
        .source("torch_xla.distributed.fsdp.wrap.size_based_auto_wrap_policy; Trainer fsdp_config min_num_params");
    s.field(&WorkloadConfig::spec, &TW::fsdp_wrap_layer_classes, "fsdp_wrap_layer_classes")
        .default_value(std::vector<std::string>{}, "none")
        .doc("sharding fsdp: the module classes that are FSDP units, e.g. [BertLayer] (transformer_auto_wrap_policy); "
             "the rest is the root unit")
        .source("torch_xla.distributed.fsdp.wrap.transformer_auto_wrap_policy; Trainer fsdp_config "
                "transformer_layer_cls_to_wrap");
    s.check(check_training);
    return s;
  }();
  return s;
}

}  // namespace tpusim
