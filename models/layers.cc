#include "models/layers.h"

#include <cmath>
#include <limits>
#include <numbers>

namespace tpusim::models::layers {

int stored_weight(const LayerContext& cx, const std::string& name, Dims shape) {
  if (cx.shared)
    if (auto it = cx.shared->find(name); it != cx.shared->end()) return it->second;
  int p = cx.g.parameter(name, std::move(shape), cx.param_dtype.value_or(cx.dtype), ParamRole::kTrainable);
  cx.params.push_back(p);
  if (cx.shared) (*cx.shared)[name] = p;
  return p;
}

int compute(const LayerContext& cx, int x) { return cx.g.node(x).dtype == cx.dtype ? x : cx.g.convert(x, cx.dtype); }

int weight(const LayerContext& cx, const std::string& name, Dims shape) {
  return compute(cx, stored_weight(cx, name, std::move(shape)));
}

int input(const LayerContext& cx, const std::string& name, Dims shape, DType t) {
  int p = cx.g.parameter(name, std::move(shape), t, ParamRole::kInput);
  cx.inputs.push_back(p);
  return p;
}

int constant(const LayerContext& cx, double v) { return cx.g.constant(v, cx.dtype); }

int linear_w(const LayerContext& cx, int x, int w, int64_t out, const std::string& name) {
  int b = weight(cx, name + ".bias", {out});
  int y = cx.g.dot(x, w, {{}, {}, {1}, {1}}, cx.precision, name);
  return cx.g.ew_bcast(EwOp::kAdd, y, b, {1}, name + ".bias_add");
}

int linear(const LayerContext& cx, int x, int64_t in, int64_t out, const std::string& name) {
  return linear_w(cx, x, weight(cx, name + ".weight", {out, in}), out, name);
}

int project(const LayerContext& cx, int x, int64_t in, int64_t out, Projection kind, const std::string& name) {
  switch (kind) {
    case Projection::kLinear: return linear(cx, x, in, out, name);
    case Projection::kLinearNoBias:
      return cx.g.dot(x, weight(cx, name + ".weight", {out, in}), {{}, {}, {1}, {1}}, cx.precision, name);
    case Projection::kConv1D: {
      // The bias parameter before the weight: the order GPT-2's graphs have always had (node order is
      // part of the compile-cache key).
      const int b = weight(cx, name + ".bias", {out});
      return conv1d(cx, x, weight(cx, name + ".weight", {in, out}), b, name);
    }
  }
  return -1;
}

int conv1d(const LayerContext& cx, int x, int w, int b, const std::string& name) {
  int y = cx.g.dot(x, w, {{}, {}, {1}, {0}}, cx.precision, name);
  return cx.g.ew_bcast(EwOp::kAdd, y, b, {1}, name + ".bias_add");
}

int layer_norm(const LayerContext& cx, int x, double eps, const std::string& name, int64_t shards) {
  Graph& g = cx.g;
  const int64_t cols = g.node(x).shape.at(1);
  int gamma = weight(cx, name + ".weight", {cols});
  int beta = weight(cx, name + ".bias", {cols});
  int inv = constant(cx, 1.0 / double(cols * shards));
  int mean = g.ew(EwOp::kMul, g.reduce(x, 1, ReduceOp::kSum), inv, name + ".mean");
  int xc = g.ew_bcast(EwOp::kSub, x, mean, {0}, name + ".center");
  int var = g.ew(EwOp::kMul, g.reduce(g.ew(EwOp::kMul, xc, xc, name + ".square"), 1, ReduceOp::kSum), inv,
                 name + ".var");
  int rstd = g.ew(EwOp::kRsqrt, g.ew(EwOp::kAdd, var, constant(cx, eps), name + ".var_eps"), -1, name + ".rstd");
  int y = g.ew_bcast(EwOp::kMul, xc, rstd, {0}, name + ".normalize");
  y = g.ew_bcast(EwOp::kMul, y, gamma, {1}, name + ".gamma");
  return g.ew_bcast(EwOp::kAdd, y, beta, {1}, name);
}

int rms_norm(const LayerContext& cx, int x, double eps, const std::string& name, int64_t shards) {
  Graph& g = cx.g;
  const int64_t cols = g.node(x).shape.at(1);
  int gamma = weight(cx, name + ".weight", {cols});
  int ms = g.ew(EwOp::kMul, g.reduce(g.ew(EwOp::kMul, x, x, name + ".square"), 1, ReduceOp::kSum),
                constant(cx, 1.0 / double(cols * shards)), name + ".mean_square");
  int rstd = g.ew(EwOp::kRsqrt, g.ew(EwOp::kAdd, ms, constant(cx, eps), name + ".ms_eps"), -1, name + ".rstd");
  int y = g.ew_bcast(EwOp::kMul, x, rstd, {0}, name + ".normalize");
  return g.ew_bcast(EwOp::kMul, y, gamma, {1}, name);
}

int causal_bias(const LayerContext& cx, int64_t length, const std::string& prefix, int64_t window) {
  Graph& g = cx.g;
  const double lowest = double(std::numeric_limits<float>::max());
  // The query index first, then the key index: the node order (part of the compile-cache key) the
  // graphs have always had.
  const int i = g.iota({length, length}, 0, DType::kS32);
  const int j = g.iota({length, length}, 1, DType::kS32);
  int later = g.ew(EwOp::kCmpGt, j, i, prefix + ".causal_mask");
  if (window > 0) {  // masked too where i >= j + window, i.e. i > j + window - 1 (0/1, added: never both)
    const int early = g.ew(EwOp::kCmpGt, i, g.ew(EwOp::kAdd, j, g.constant(double(window - 1), DType::kS32), prefix + ".window_end"),
                           prefix + ".window_mask");
    later = g.ew(EwOp::kAdd, later, early, prefix + ".sliding_mask");
  }
  return g.ew(EwOp::kMul, g.convert(later, cx.dtype), constant(cx, -lowest), prefix + ".causal_bias");
}

int padding_bias(const LayerContext& cx, int mask, const std::string& prefix) {
  Graph& g = cx.g;
  const double lowest = double(std::numeric_limits<float>::max());
  int m = g.convert(mask, cx.dtype);
  return g.ew(EwOp::kMul, g.ew(EwOp::kSub, m, constant(cx, 1.0), prefix + ".padding_mask"), constant(cx, lowest),
              prefix + ".padding_bias");
}

int dropout(const LayerContext& cx, int x, double rate, const std::string& name) {
  if (!cx.training || rate <= 0) return x;
  return cx.g.ew(EwOp::kMul, x, cx.g.dropout_mask(x, rate, name + ".mask"), name);
}

int gelu(const LayerContext& cx, int x, const std::string& name) {
  Graph& g = cx.g;
  int e = g.ew(EwOp::kErf, g.ew(EwOp::kMul, x, constant(cx, 1.0 / std::sqrt(2.0)), name + ".scale"), -1, name + ".erf");
  int u = g.ew(EwOp::kAdd, e, constant(cx, 1.0), name + ".one_plus");
  return g.ew(EwOp::kMul, g.ew(EwOp::kMul, x, u, name + ".mul"), constant(cx, 0.5), name);
}

int gelu_new(const LayerContext& cx, int x, const std::string& name) {
  Graph& g = cx.g;
  int x3 = g.ew(EwOp::kMul, g.ew(EwOp::kMul, x, x, name + ".square"), x, name + ".cube");
  int inner = g.ew(EwOp::kAdd, x, g.ew(EwOp::kMul, x3, constant(cx, 0.044715), name + ".cubic"), name + ".inner");
  int th = g.ew(EwOp::kTanh, g.ew(EwOp::kMul, inner, constant(cx, std::sqrt(2.0 / std::numbers::pi)), name + ".scale"), -1,
                name + ".tanh");
  int u = g.ew(EwOp::kAdd, th, constant(cx, 1.0), name + ".one_plus");
  return g.ew(EwOp::kMul, g.ew(EwOp::kMul, x, u, name + ".mul"), constant(cx, 0.5), name);
}

int silu(const LayerContext& cx, int x, const std::string& name) {
  Graph& g = cx.g;
  int e = g.ew(EwOp::kExp, g.ew(EwOp::kNeg, x, -1, name + ".neg"), -1, name + ".exp");
  int d = g.ew(EwOp::kAdd, e, constant(cx, 1.0), name + ".one_plus");
  return g.ew(EwOp::kDiv, x, d, name);
}

}  // namespace tpusim::models::layers
