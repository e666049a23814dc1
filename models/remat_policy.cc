#include "models/remat_policy.h"

#include <optional>
#include <string>
#include <utility>

namespace tpusim::models {

const NameTable<RematPolicy>& enum_names(RematPolicy) {
  static const NameTable<RematPolicy> t = {{RematPolicy::kNone, "none"},
                                           {RematPolicy::kFull, "full"},
                                           {RematPolicy::kMinimal, "minimal"},
                                           {RematPolicy::kSaveDotExceptMlpwi, "save_dot_except_mlpwi"},
                                           {RematPolicy::kSaveDotExceptMlp, "save_dot_except_mlp"},
                                           {RematPolicy::kSaveQkvProj, "save_qkv_proj"},
                                           {RematPolicy::kCustom, "custom"},
                                           {RematPolicy::kQkvProjOffloaded, "qkv_proj_offloaded"},
                                           {RematPolicy::kMinimalOffloaded, "minimal_offloaded"}};
  return t;
}

const NameTable<RematChoice>& enum_names(RematChoice) {
  static const NameTable<RematChoice> t = {
      {RematChoice::kRemat, "remat"}, {RematChoice::kDevice, "device"}, {RematChoice::kOffload, "offload"}};
  return t;
}

const NameTable<RematTensor>& enum_names(RematTensor) {
  static const NameTable<RematTensor> t = {{RematTensor::kQueryProj, "query_proj"}, {RematTensor::kKeyProj, "key_proj"},
                                           {RematTensor::kValueProj, "value_proj"}, {RematTensor::kContext, "context"},
                                           {RematTensor::kOutProj, "out_proj"},     {RematTensor::kMlpwi, "mlpwi"},
                                           {RematTensor::kMlpwo, "mlpwo"},      {RematTensor::kDecoderLayerInput, "decoder_layer_input"}};
  return t;
}

RematTensors remat_tensors(RematPolicy p, const RematTensors& custom) {
  using enum RematTensor;
  RematTensors t;
  t.fill(RematChoice::kRemat);
  t[size_t(kDecoderLayerInput)] = RematChoice::kDevice;
  auto keep = [&](std::initializer_list<RematTensor> names, RematChoice where = RematChoice::kDevice) {
    for (RematTensor x : names) t[size_t(x)] = where;
  };
  switch (p) {
    case RematPolicy::kNone:  // no recomputation at all: the caller does not recompute
    case RematPolicy::kFull: break;
    case RematPolicy::kMinimal: keep({kQueryProj, kKeyProj, kValueProj, kOutProj, kMlpwi, kMlpwo}); break;
    case RematPolicy::kMinimalOffloaded:
      keep({kQueryProj, kKeyProj, kValueProj, kOutProj, kMlpwi, kMlpwo}, RematChoice::kOffload);
      break;
    case RematPolicy::kQkvProjOffloaded: keep({kQueryProj, kKeyProj, kValueProj}, RematChoice::kOffload); break;
    case RematPolicy::kSaveDotExceptMlpwi: keep({kQueryProj, kKeyProj, kValueProj, kOutProj, kMlpwo}); break;
    case RematPolicy::kSaveDotExceptMlp: keep({kQueryProj, kKeyProj, kValueProj, kOutProj}); break;
    case RematPolicy::kSaveQkvProj: keep({kQueryProj, kKeyProj, kValueProj}); break;
    case RematPolicy::kCustom: return custom;
  }
  return t;
}

std::optional<RematTensor> remat_tensor_of(const Node& n) {
  using enum RematTensor;
  // The node names the Llama builder gives (models/llama.cc): the projections' dots, and the
  // attention's output (eager: the probabilities-times-values dot; flash: the kernel's output and
  // its log-sum-exp).
  static const std::pair<std::string_view, RematTensor> kNames[] = {
      {".self_attn.q_proj", kQueryProj}, {".self_attn.k_proj", kKeyProj},   {".self_attn.v_proj", kValueProj},
      {".self_attn.context", kContext},  {".self_attn.attention", kContext}, {".self_attn.attention.lse", kContext},
      {".self_attn.o_proj", kOutProj},   {".mlp.gate_proj", kMlpwi},        {".mlp.up_proj", kMlpwi},
      {".mlp.down_proj", kMlpwo}};
  const std::string& s = n.name;
  for (const auto& [suffix, t] : kNames)
    if (s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0) return t;
  return std::nullopt;
}

RematSpec remat_spec(const RematTensors& t) {
  RematSpec s;
  s.saved = [t](const Node& n) {
    const std::optional<RematTensor> x = remat_tensor_of(n);
    return x ? t[size_t(*x)] : RematChoice::kRemat;
  };
  s.input = t[size_t(RematTensor::kDecoderLayerInput)];
  return s;
}

}  // namespace tpusim::models
