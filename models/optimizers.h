// Optimizer update ops appended after the backward pass, one small element-wise chain per
// parameter, as torch.optim / torch_xla trace them.
//
// State (moments, momentum buffers) is a graph Parameter with role kOptimizerState; every updated
// parameter and state tensor is a graph output, donated in place by the runtime (`donated`). As in
// torch.optim's default (non-capturable) mode, the step count lives on the host: the learning rate
// and the bias-correction factors arrive each step as scalar inputs (PyTorch/XLA sends Python
// scalars as device data, so their values do not change the graph).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "base/enum_names.h"
#include "models/autodiff.h"
#include "models/graph.h"

namespace tpusim::models {

enum class OptimizerKind { kAdamW, kSgd, kLamb, kAdafactor };
const NameTable<OptimizerKind>& enum_names(OptimizerKind);  // adamw | sgd | lamb | adafactor

// "adamw" | "sgd" | "lamb" | "adafactor"; throws ConfigError naming the known optimizers otherwise.
OptimizerKind optimizer_from_name(const std::string& name);
const char* optimizer_name(OptimizerKind k);

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::kAdamW;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;  // AdamW / LAMB (torch.optim.AdamW defaults)
  // Adafactor (transformers.optimization.Adafactor as Trainer builds it for optim="adafactor":
  // scale_parameter=False, relative_step=False, warmup_init=False, beta1=None): eps[0] added to
  // g^2, and the update's RMS clipped at clip_threshold. beta2_t = 1 - t^decay_rate (decay_rate
  // -0.8) comes from the host's step count each step, like AdamW's bias corrections.
  double adafactor_eps = 1e-30, clip_threshold = 1.0;
  double weight_decay = 0.01;                     // decoupled for AdamW/LAMB, added to the gradient for SGD
  double momentum = 0;                            // SGD; 0 = no momentum buffer
  bool nesterov = false;                          // SGD
  // Hugging Face Trainer's grouping: biases and LayerNorm weights get no weight decay.
  bool no_decay_for_bias_and_norm = true;
  // torch.nn.utils.clip_grad_norm_ before the update (Trainer's max_grad_norm, 1.0 there); 0 = off.
  double max_grad_norm = 0;
  // Moments' dtype: f32 by default; bf16 under XLA_USE_BF16 (every float tensor becomes bf16).
  DType state_dtype = DType::kF32;
  // The first optimizer step: torch.optim creates the state lazily (zeros_like inside the traced
  // step), so that graph fills zeros instead of reading state inputs, and differs from later steps'
  // graph (the "second compile" of docs/sources.md).
  bool first_step = false;
};

struct ParamUpdate {
  int param = -1, grad = -1, updated = -1;  // updated: the new value (a graph output)
  int rms = -1;  // Adafactor: state["RMS"] = ||p|| / sqrt(numel), computed every step (an output)
  // AdamW/LAMB: {exp_avg, exp_avg_sq}; SGD: {momentum_buffer} or {}; Adafactor: {exp_avg_sq_row,
  // exp_avg_sq_col} for a parameter of rank >= 2 (shape[:-1] and shape[:-2] + shape[-1:]), else
  // {exp_avg_sq}. State parameters, or zero fills on the first step.
  std::vector<int> state, updated_state;
};

struct OptimizerGraph {
  std::vector<ParamUpdate> updates;         // in Gradients::params order
  std::vector<int> scalars;                 // per-step scalar inputs (lr, bias corrections)
  std::vector<std::pair<int, int>> donated;  // (input parameter, output that replaces it)
  uint64_t state_bytes = 0;                 // unpadded bytes of all optimizer state tensors
};

OptimizerGraph append_optimizer(Graph& g, const Gradients& grads, const OptimizerConfig& cfg);

}  // namespace tpusim::models
