// The workload's model: the preset it names with model_config applied, and the Model (models/model.h)
// the step builder builds from it, both through the model family registry (models/families.h); and
// what the step builder needs resolved beside it: the remat policy and the device mesh. Declared in
// workload_config.h.
#include <array>
#include <cmath>

#include <fmt/format.h>

#include "base/config_error.h"
#include "models/families.h"
#include "models/vit.h"
#include "workloads/config/workload_config.h"

namespace tpusim {

models::Head model_head(Task task) {
  switch (task) {
    case Task::kSequenceClassification: return models::Head::kSequenceClassification;
    case Task::kMaskedLm: return models::Head::kMaskedLm;
    case Task::kImageClassification: return models::Head::kImageClassification;
    case Task::kCausalLm: return models::Head::kCausalLm;
    case Task::kSeq2seq: return models::Head::kSeq2Seq;
  }
  return models::Head::kSequenceClassification;
}

const models::Family* model_family(const TrainingWorkload& t) {
  if (t.model == "custom") return &models::family(models::ModelFamily::kBert);
  const auto preset = models::find_model_preset(t.model);
  return preset ? &models::family(preset->family) : nullptr;
}

bool uses_flash_attention(const TrainingWorkload& t) {
  if (t.attention != Attention::kAuto) return t.attention == Attention::kFlash;
  const models::Family* f = model_family(t);
  return t.framework == FrameworkKind::kJax && f && models::llama_like(f->id);
}

bool uses_sharded_stream(const TrainingWorkload& t) {
  if (t.tensor_activations != TensorActivations::kAuto) return t.tensor_activations == TensorActivations::kSharded;
  return t.framework == FrameworkKind::kJax;
}

MlpChoice resolve_mlp(const ModelConfig& m, models::Activation preset) {
  using models::Activation;
  MlpChoice c;
  if (m.mlp_activation == MlpActivation::kPreset && m.gated_mlp == Toggle::kPreset) return c;
  const bool gated = m.gated_mlp == Toggle::kPreset ? models::gated(preset) : m.gated_mlp == Toggle::kTrue;
  MlpActivation act = m.mlp_activation;
  if (act == MlpActivation::kPreset)  // the preset's own activation function
    act = preset == Activation::kSwiGlu ? MlpActivation::kSilu
          : preset == Activation::kRelu ? MlpActivation::kRelu
          : preset == Activation::kGelu ? MlpActivation::kGelu
                                        : MlpActivation::kGeluTanh;
  if (gated && act == MlpActivation::kSilu) c.activation = Activation::kSwiGlu;
  else if (gated && act == MlpActivation::kGeluTanh) c.activation = Activation::kGeGlu;
  else if (!gated && act == MlpActivation::kGelu) c.activation = Activation::kGelu;
  else if (!gated && act == MlpActivation::kGeluTanh) c.activation = Activation::kGeluNew;
  else if (!gated && act == MlpActivation::kRelu) c.activation = Activation::kRelu;
  else
    c.error = std::string("a ") + (gated ? "gated " : "non-gated ") + std::string(enum_name(act)) +
              " MLP is not modelled (gated: silu (SwiGLU) or gelu_tanh (GeGLU); not gated: gelu, gelu_tanh or relu)";
  return c;
}

models::ModelArch resolve_model_arch(const TrainingWorkload& t) {
  const ModelConfig& m = t.model_config;
  const models::ModelArch preset = t.model == "custom" ? models::custom_arch() : models::find_preset(t.model);
  models::ArchOverrides o{.layers = m.layers, .hidden = m.hidden, .heads = m.heads, .intermediate = m.intermediate,
                          .vocab = m.vocab, .max_position = m.max_position, .kv_heads = m.kv_heads, .head_dim = m.head_dim};
  o.activation = resolve_mlp(m, preset.activation).activation;
  if (m.tie_word_embeddings != Toggle::kPreset) o.tied_embeddings = m.tie_word_embeddings == Toggle::kTrue;
  return models::with_overrides(preset, o);
}

std::unique_ptr<models::Model> make_model(const TrainingWorkload& t) {
  return models::make_model(resolve_model_arch(t), {.head = model_head(t.task), .num_labels = t.num_labels,
                                                    .max_predictions_per_seq = t.max_predictions_per_seq});
}

uint32_t image_tokens(const TrainingWorkload& t) {
  if (t.task != Task::kImageClassification) return 0;
  return uint32_t(models::vit_seq(*models::find_model_preset(t.model)));
}

uint64_t base_model_parameters(const TrainingWorkload& t) { return models::model_parameters(resolve_model_arch(t)); }

}  // namespace tpusim

namespace tpusim {

namespace {

[[noreturn]] void mesh_error(const TrainingWorkload& t, const std::string& key, const std::string& value,
                             const std::string& rule, const std::string& suggestion) {
  ConfigErrorInfo i{"workload", key, 0, value, rule, suggestion};
  if (const auto o = t.origins.find(key); o != t.origins.end()) i.file = o->second.file, i.line = o->second.line;
  throw ConfigError(i);
}

}  // namespace

models::RematPolicy effective_remat_policy(const TrainingWorkload& t) {
  if (t.remat_policy != models::RematPolicy::kNone) return t.remat_policy;
  return t.fsdp_grad_ckpt ? models::RematPolicy::kFull : models::RematPolicy::kNone;
}

models::RematTensors effective_remat_tensors(const TrainingWorkload& t) {
  const RematTensorsConfig& c = t.remat_tensors;
  return models::remat_tensors(effective_remat_policy(t),
                               {c.query_proj, c.key_proj, c.value_proj, c.context, c.out_proj, c.mlpwi, c.mlpwo,
                                c.decoder_layer_input});
}

namespace {

// The mesh within one slice (resolve_mesh adds the slices).
models::Mesh slice_mesh(const TrainingWorkload& t, uint32_t devices) {
  using models::MeshAxis;
  const MeshConfig& c = t.mesh;
  if (!c.given())
    return models::Mesh::along(t.sharding == Sharding::kFsdp ? MeshAxis::kFsdp : MeshAxis::kData, devices);
  std::array<int64_t, models::kMeshAxes> v{c.data, c.fsdp, c.sequence, c.tensor};
  const char* keys[] = {"mesh.data", "mesh.fsdp", "mesh.sequence", "mesh.tensor"};
  int rest = -1;
  for (int a = 0; a < models::kMeshAxes; ++a) {
    if (v[size_t(a)] != -1) continue;
    if (rest >= 0) mesh_error(t, keys[a], "-1", "only one mesh axis may be -1 (the rest)", "give this axis a size");
    rest = a;
  }
  const int default_rest = t.sharding == Sharding::kFsdp ? 1 : 0;  // fsdp (sharding: fsdp), else data
  if (v[size_t(default_rest)] == 0 && rest < 0) rest = default_rest;
  int64_t given = 1;
  for (int a = 0; a < models::kMeshAxes; ++a)
    if (a != rest) given *= v[size_t(a)] == 0 ? (v[size_t(a)] = 1) : v[size_t(a)];
  const std::string mesh_text = fmt::format("data {} x fsdp {} x sequence {} x tensor {}", v[0], v[1], v[2], v[3]);
  const int key = rest >= 0 ? rest : 3;
  if (rest >= 0) {
    if (given > devices || devices % given != 0)
      mesh_error(t, keys[key], std::to_string(v[size_t(key)]),
                 fmt::format("the other mesh axes ({}) must divide the slice's {} devices", given, devices),
                 "choose axis sizes whose product divides the device count");
    v[size_t(rest)] = devices / given;
  } else if (given != devices) {
    mesh_error(t, keys[key], std::to_string(v[size_t(key)]),
               fmt::format("the mesh ({}) has {} devices; the slice has {}", mesh_text, given, devices),
               "make the axes multiply to the device count, or write -1 for one of them");
  }
  models::Mesh m;
  for (int a = 0; a < models::kMeshAxes; ++a) m.size[size_t(a)] = uint32_t(v[size_t(a)]);
  return m;
}

}  // namespace

uint32_t shard_devices(const models::Mesh& mesh) {
  return mesh[models::MeshAxis::kTensor] * mesh[models::MeshAxis::kSequence];
}

uint32_t shard_examples(const TrainingWorkload& t, double per_device, const models::Mesh& mesh, const std::string& key) {
  const uint32_t group = shard_devices(mesh);
  const double examples = per_device * group;
  const double whole = std::round(examples);
  if (whole < 1 || std::abs(examples - whole) > 1e-9 * whole)
    mesh_error(t, key, fmt::format("{}", per_device),
               fmt::format("times the {} devices that compute the same examples (mesh tensor {} x sequence {}) must "
                           "be a whole number of examples, at least 1",
                           group, mesh[models::MeshAxis::kTensor], mesh[models::MeshAxis::kSequence]),
               group == 1 ? std::string("give a whole number (a fraction needs a tensor or sequence axis to share the "
                                        "examples)")
                          : fmt::format("give a multiple of 1/{} (e.g. {})", group, 1.0 / group));
  return uint32_t(whole);
}

models::Mesh resolve_mesh(const TrainingWorkload& t, uint32_t devices, uint32_t slices) {
  if (t.dcn_mesh.data > 0 && uint32_t(t.dcn_mesh.data) != slices)
    mesh_error(t, "dcn_mesh.data", std::to_string(t.dcn_mesh.data),
               fmt::format("the data axis across slices must span the hardware's {} slice{} (multislice.slices)", slices,
                           slices == 1 ? "" : "s"),
               fmt::format("write dcn_mesh: {{data: {}}} (or -1), or set multislice.slices={}", slices, t.dcn_mesh.data));
  models::Mesh m = slice_mesh(t, devices);
  m.slices = slices;
  return m;
}

}  // namespace tpusim
