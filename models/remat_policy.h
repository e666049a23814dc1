// Rematerialization policies: which activations of a decoder layer the forward pass keeps for the
// backward and which the backward recomputes from the layer's input (models/recompute.h), by
// MaxText's policy names (MaxText layers: `remat_policy`, jax.checkpoint with
// save_only_these_names over the layer's named checkpoints). The named tensors of a layer, on
// Hugging Face's Llama module names:
//   decoder_layer_input  the layer's input (always kept: the recomputation starts from it)
//   query_proj, key_proj, value_proj   q_proj, k_proj, v_proj outputs
//   context              the attention's output before o_proj (flash: with its log-sum-exp)
//   out_proj             o_proj's output
//   mlpwi                gate_proj and up_proj outputs (MaxText's wi_0, wi_1)
//   mlpwo                down_proj's output
// Policies: `full` keeps none of them; `minimal` keeps every projection (jax's checkpoint_dots: the
// matmul outputs); `save_dot_except_mlpwi` all but mlpwi; `save_dot_except_mlp` the attention
// projections; `save_qkv_proj` query, key and value; `qkv_proj_offloaded` query, key and value in
// host memory; `minimal_offloaded` what `minimal` keeps, in host memory (jax's
// offload_dot_with_no_batch_dims); `custom` what `RematTensors` says. A tensor the policy keeps
// lives in HBM (or host memory: models/recompute.h) from the forward to the backward; the rest of
// the layer is recomputed. The layer's input is kept in HBM, or with `custom`'s
// decoder_layer_input: offload in host memory.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

#include "base/enum_names.h"
#include "models/graph.h"

namespace tpusim::models {

enum class RematPolicy : uint8_t {
  kNone, kFull, kMinimal, kSaveDotExceptMlpwi, kSaveDotExceptMlp, kSaveQkvProj, kCustom, kQkvProjOffloaded, kMinimalOffloaded
};
const NameTable<RematPolicy>& enum_names(RematPolicy);

// What happens to one named tensor (MaxText's custom policy values): recomputed, kept in HBM, kept
// in host memory.
enum class RematChoice : uint8_t { kRemat, kDevice, kOffload };
const NameTable<RematChoice>& enum_names(RematChoice);

// kDecoderLayerInput: the layer's input (device or offload; the recomputation starts from it).
enum class RematTensor : uint8_t { kQueryProj, kKeyProj, kValueProj, kContext, kOutProj, kMlpwi, kMlpwo, kDecoderLayerInput };
inline constexpr int kRematTensors = 8;
const NameTable<RematTensor>& enum_names(RematTensor);

// Per named tensor (RematTensor order) the choice: what `custom` reads, and what each policy means.
using RematTensors = std::array<RematChoice, kRematTensors>;
RematTensors remat_tensors(RematPolicy p, const RematTensors& custom = {});

// The named tensor node `n` is (by its Hugging Face Llama name), if any.
std::optional<RematTensor> remat_tensor_of(const Node& n);

// What the forward keeps of a recomputed layer for the backward (models/recompute.h).
struct RematSpec {
  // Per value computed inside a layer: kDevice kept in HBM, kOffload kept in host memory, kRemat
  // recomputed. No function: everything recomputed.
  std::function<RematChoice(const Node&)> saved;
  // Each layer's input from the residual stream (a value computed before the layer, of its
  // output's shape; MaxText's decoder_layer_input): kDevice kept in HBM, or kOffload.
  RematChoice input = RematChoice::kDevice;
};
// The policy's choices as a RematSpec: a named tensor (remat_tensor_of) as `t` says, the rest
// recomputed.
RematSpec remat_spec(const RematTensors& t);

}  // namespace tpusim::models
