#include "models/kernels.h"

#include <cmath>

#include "base/config_error.h"
#include "models/kernel_specs.h"

namespace tpusim::models {

namespace {

const KernelSpec& find_spec(const std::string& name) {
  std::string known;
  for (const auto& s : kernel_specs()) {
    if (s.name == name) return s;
    known += (known.empty() ? "" : ", ") + s.name;
  }
  throw ConfigError({"", "kernel", 0, name, "is not a known kernel (known: " + known + ")", ""});
}

void check_shape(const KernelSpec& spec, const std::map<std::string, uint64_t>& shape) {
  for (const auto& key : spec.shape_keys) {
    auto it = shape.find(key);
    if (it == shape.end())
      throw ConfigError({"", "shape." + key, 0, "", "is required for kernel '" + spec.name + "'", ""});
    if (it->second == 0) throw ConfigError({"", "shape." + key, 0, "0", "must be at least 1", ""});
  }
  for (const auto& [key, v] : shape) {
    bool ok = false;
    for (const auto& k : spec.shape_keys) ok = ok || k == key;
    if (!ok) {
      std::string keys;
      for (const auto& k : spec.shape_keys) keys += (keys.empty() ? "" : ", ") + k;
      throw ConfigError({"", "shape." + key, 0, "", "is not a shape key of kernel '" + spec.name + "' (keys: " + keys + ")", ""});
    }
  }
}

int64_t dim(const std::map<std::string, uint64_t>& s, const char* k) { return int64_t(s.at(k)); }

// s = k @ q^T / sqrt(d); p = softmax(s, dim=-2); out = v^T @ p  (per head; data/README.md).
// q3/k3/v3 are [seq, heads, d] views or [heads, seq, d] tensors: `head_dim_index` says where heads are.
int attention_core(Graph& g, int q, int k, int v, int head_axis, int seq_axis, int64_t head_dim,
                   DotPrecision precision) {
  const int d_axis = 2;
  // s[h, i, j] = sum_d k[.., i, .., d] q[.., j, .., d]
  int s = g.dot(k, q, {{head_axis}, {head_axis}, {d_axis}, {d_axis}}, precision, "scores");
  s = g.ew(EwOp::kMul, s, g.constant(1.0 / std::sqrt(double(head_dim)), g.node(s).dtype), "scale");
  int p = softmax(g, s, 1);  // over i, i.e. dim=-2 of [h, i, j]
  // out[h, d, j] = sum_i v[.., i, .., d] p[h, i, j]
  return g.dot(v, p, {{head_axis}, {0}, {seq_axis}, {1}}, precision, "attn_out");
}

}  // namespace

int linear(Graph& g, int x, int64_t in, int64_t out, const std::string& name, DotPrecision precision) {
  DType t = g.node(x).dtype;
  int w = g.parameter(name + ".weight", {out, in}, t);
  int b = g.parameter(name + ".bias", {out}, t);
  int rank = int(g.node(x).shape.size());
  int y = g.dot(x, w, {{}, {}, {rank - 1}, {1}}, precision, name);
  return g.ew_bcast(EwOp::kAdd, y, b, {rank - 1}, name + ".bias_add");
}

// torch.nn.LayerNorm(cols) under PyTorch/XLA. ATen's math_native_layer_norm
// (aten/src/ATen/native/layer_norm.cpp) views x as [1, rows, cols] and calls native_batch_norm in
// training mode, the rows being the features; torch_xla lowers that to XLA's BatchNormTraining
// (feature_index 1: torch_xla/csrc/batch_norm.cpp), then applies `bias.addcmul(out, weight)`.
// XLA's TPU backend computes a batch norm with the feature dimension on lanes (the layout of
// convolution activations), so layout assignment gives the batch norm a transposed copy of x
// ([cols, rows]: its statistics become sums over a major dimension, plain vector adds, with
// var = E[x^2] - E[x]^2 as XLA's batch-norm expansion computes it) and copies its [cols, rows]
// result back to the row-major layout, where the affine is applied. Four passes over x-sized data:
// the copy (+ the sum, a multi-output reduction), the sum of squares, the normalization, the copy
// back with the affine. (An inference from how the ops are lowered, documented in
// docs/calibration.md: it is why a LayerNorm takes ~1.7x longer per byte than a softmax.)
int layer_norm(Graph& g, int x, const std::string& name) {
  const Node& n = g.node(x);
  DType t = n.dtype;
  int64_t cols = n.shape.at(1);
  int gamma = g.parameter(name + ".weight", {cols}, t);
  int beta = g.parameter(name + ".bias", {cols}, t);
  int inv_cols = g.constant(1.0 / double(cols), t);
  int xt = g.transpose(x, {1, 0});  // [cols, rows]: features (rows) on lanes
  g.set_materialize(xt);
  int mean = g.ew(EwOp::kMul, g.reduce(xt, 0, ReduceOp::kSum), inv_cols, "mean");
  int mean_sq = g.ew(EwOp::kMul, g.reduce(g.ew(EwOp::kMul, xt, xt, "square"), 0, ReduceOp::kSum), inv_cols, "mean_sq");
  int var = g.ew(EwOp::kSub, mean_sq, g.ew(EwOp::kMul, mean, mean, "mean2"), "var");
  int rstd = g.ew(EwOp::kRsqrt, g.ew(EwOp::kAdd, var, g.constant(1e-5, t), "var_eps"), -1, "rstd");
  int yt = g.ew_bcast(EwOp::kMul, g.ew_bcast(EwOp::kSub, xt, mean, {1}, "center"), rstd, {1}, "batch_norm");
  g.set_materialize(yt);  // the batch norm's result, in its [cols, rows] layout
  int y = g.transpose(yt, {1, 0});
  y = g.ew_bcast(EwOp::kMul, y, gamma, {1}, "gamma");
  return g.ew_bcast(EwOp::kAdd, y, beta, {1}, name);
}

int softmax(Graph& g, int x, int dim) {
  std::vector<int> keep;
  for (int d = 0; d < int(g.node(x).shape.size()); ++d)
    if (d != dim) keep.push_back(d);
  int m = g.reduce(x, dim, ReduceOp::kMax);
  int e = g.ew(EwOp::kExp, g.ew_bcast(EwOp::kSub, x, m, keep, "shift"), -1, "exp");
  int s = g.reduce(e, dim, ReduceOp::kSum);
  return g.ew_bcast(EwOp::kDiv, e, s, keep, "softmax");
}

Graph build_kernel(const KernelArgs& a) {
  const KernelSpec& spec = find_spec(a.kernel);
  check_shape(spec, a.shape);
  Graph g;
  const auto& s = a.shape;
  const DType t = a.dtype;
  if (a.kernel == "matmul") {
    int x = g.parameter("a", {dim(s, "m"), dim(s, "k")}, t);
    int y = g.parameter("b", {dim(s, "k"), dim(s, "n")}, t);
    g.mark_output(g.dot(x, y, {{}, {}, {1}, {0}}, a.precision, "matmul"));
  } else if (a.kernel == "layernorm") {
    int x = g.parameter("x", {dim(s, "rows"), dim(s, "cols")}, t);
    g.mark_output(layer_norm(g, x, "layernorm"));
  } else if (a.kernel == "softmax") {
    int x = g.parameter("x", {dim(s, "rows"), dim(s, "cols")}, t);
    g.mark_output(softmax(g, x, 1));
  } else if (a.kernel == "attention") {
    Dims shp = {dim(s, "heads"), dim(s, "seq"), dim(s, "head_dim")};
    int q = g.parameter("q", shp, t), k = g.parameter("k", shp, t), v = g.parameter("v", shp, t);
    g.mark_output(attention_core(g, q, k, v, /*head_axis=*/0, /*seq_axis=*/1, shp[2], a.precision));
  } else if (a.kernel == "encoder_block") {
    const int64_t seq = dim(s, "seq"), hidden = dim(s, "hidden"), heads = dim(s, "heads"), ffn = dim(s, "ffn");
    if (hidden % heads != 0)
      throw ConfigError({"", "shape.heads", 0, std::to_string(heads),
                         "must divide shape.hidden (" + std::to_string(hidden) + ")", ""});
    const int64_t hd = hidden / heads;
    int x = g.parameter("x", {seq, hidden}, t);
    auto heads_view = [&](int y) { return g.reshape(y, {seq, heads, hd}); };
    int q = heads_view(linear(g, x, hidden, hidden, "q_proj", a.precision));
    int k = heads_view(linear(g, x, hidden, hidden, "k_proj", a.precision));
    int v = heads_view(linear(g, x, hidden, hidden, "v_proj", a.precision));
    int o = attention_core(g, q, k, v, /*head_axis=*/1, /*seq_axis=*/0, hd, a.precision);  // [h, d, seq]
    // Output projection contracts (h, d) of o directly: attn[j, out] = sum_{h,d} o[h,d,j] Wo[out,h,d].
    int wo = g.parameter("o_proj.weight", {hidden, heads, hd}, t);
    int bo = g.parameter("o_proj.bias", {hidden}, t);
    int attn = g.dot(o, wo, {{}, {}, {0, 1}, {1, 2}}, a.precision, "o_proj");
    attn = g.ew_bcast(EwOp::kAdd, attn, bo, {1}, "o_proj.bias_add");
    int h1 = g.ew(EwOp::kAdd, x, attn, "residual1");
    // One LayerNorm module applied twice (data/README.md): the same gamma/beta.
    int y1 = layer_norm(g, h1, "layernorm1");
    int f = g.ew(EwOp::kRelu, linear(g, y1, hidden, ffn, "ffn1", a.precision), -1, "relu");
    int f2 = linear(g, f, ffn, hidden, "ffn2", a.precision);
    g.mark_output(layer_norm(g, g.ew(EwOp::kAdd, f2, y1, "residual2"), "layernorm2"));
  }
  return g;
}

}  // namespace tpusim::models
