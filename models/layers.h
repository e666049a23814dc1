// The graph pieces every model builder shares (models/stack.h and the families): how a trainable
// parameter is stored and used, nn.Linear and GPT-2's Conv1D, nn.LayerNorm, RMSNorm, the attention
// masks, dropout, the two GELUs and SiLU, each written once. A builder passes its LayerContext (the
// graph it builds, the compute dtype, autocast's stored-parameter dtype, the dot precision, training
// or evaluation).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "models/graph.h"

namespace tpusim::models::layers {

struct LayerContext {
  Graph& g;
  std::vector<int>& params;            // trainable parameters, in creation order
  std::vector<int>& inputs;            // per-step inputs, in creation order
  DType dtype;                         // every float tensor
  std::optional<DType> param_dtype;    // stored trainable parameters (autocast: f32 master weights)
  DotPrecision precision;              // dot precision
  bool training;                       // dropout on
  // When set, a parameter name seen before is the same node (ALBERT's shared layer: parameters once,
  // used by every application, so their gradients add up).
  std::map<std::string, int>* shared = nullptr;
};

// A trainable parameter as stored (f32 master weights under autocast).
int stored_weight(const LayerContext& cx, const std::string& name, Dims shape);
// `x` in the compute dtype: a convert under autocast (XLA fuses it into the consumer), else x.
int compute(const LayerContext& cx, int x);
// A trainable parameter as the model uses it.
int weight(const LayerContext& cx, const std::string& name, Dims shape);
int input(const LayerContext& cx, const std::string& name, Dims shape, DType t);
int constant(const LayerContext& cx, double v);

// nn.Linear on rows: y = x W^T + b, x [rows, in], W [out, in] (`w` given: its weight node).
int linear_w(const LayerContext& cx, int x, int w, int64_t out, const std::string& name);
int linear(const LayerContext& cx, int x, int64_t in, int64_t out, const std::string& name);
// A projection of rows [rows, in] to [rows, out], of one of the kinds the families use:
// nn.Linear with its bias, nn.Linear(bias=False) (T5, Llama), or transformers' Conv1D (GPT-2: y = x W + b
// with W [in, out], as its state_dict stores it).
enum class Projection { kLinear, kLinearNoBias, kConv1D };
// Conv1D on rows with the weight [in, out] and bias [out] nodes given: y = x W + b.
int conv1d(const LayerContext& cx, int x, int w, int b, const std::string& name);
int project(const LayerContext& cx, int x, int64_t in, int64_t out, Projection kind, const std::string& name);
// nn.LayerNorm over the last dim of rows [rows, H]. `shards` > 1: the rows' H columns are these
// [rows, H / shards], one replica's share (activations split along the hidden dimension): the means
// are over the whole row, their sums partial over the replicas (all-reduced by the partitioner), the
// weight and bias the replica's columns.
int layer_norm(const LayerContext& cx, int x, double eps, const std::string& name, int64_t shards = 1);
// RMSNorm over the last dim of rows [rows, H], weight only (LlamaRMSNorm, T5LayerNorm):
// y = x * rsqrt(mean(x^2) + eps) * weight. Zhang & Sennrich, "Root Mean Square Layer Normalization" (2019).
// `shards` as for layer_norm.
int rms_norm(const LayerContext& cx, int x, double eps, const std::string& name, int64_t shards = 1);
// Additive attention-score biases, as transformers' eager attention applies its masks (finfo.min
// where masked; GPT2Attention's torch.where, the extended attention mask of every family):
// causal_bias [L, L] is -max where key j > query i (nodes PREFIX.causal_mask, PREFIX.causal_bias),
// and with `window` > 0 (Mistral's sliding window) where i >= j + window too;
// padding_bias [B, S] is -max where the attention_mask input `mask` is 0 (PREFIX.padding_mask,
// PREFIX.padding_bias).
int causal_bias(const LayerContext& cx, int64_t length, const std::string& prefix, int64_t window = 0);
int padding_bias(const LayerContext& cx, int mask, const std::string& prefix);
// nn.Dropout(rate); nothing in evaluation graphs or at rate 0.
int dropout(const LayerContext& cx, int x, double rate, const std::string& name);
// Hugging Face's "gelu": the exact form x * 0.5 * (1 + erf(x / sqrt(2))).
int gelu(const LayerContext& cx, int x, const std::string& name);
// "gelu_new" (transformers' NewGELUActivation, Hendrycks & Gimpel's tanh form):
// 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
int gelu_new(const LayerContext& cx, int x, const std::string& name);
// SiLU (swish): x * sigmoid(x) = x / (1 + exp(-x)) (nn.SiLU, Llama's "silu" MLP activation).
int silu(const LayerContext& cx, int x, const std::string& name);

}  // namespace tpusim::models::layers
