#include "models/stack.h"

#include "base/config_error.h"
#include "models/losses.h"
#include "models/sharding.h"

namespace tpusim::models {

StackBuilder::StackBuilder(const ModelArch& arch, const StepShape& shape)
    : arch_(arch), shape_(shape), t_(shape.dtype), B_(shape.batch), H_(arch.hidden),
      head_dim_(arch.heads ? arch.hidden / arch.heads : 0) {}

ModelGraph StackBuilder::build() {
  self_biases_.resize(stacks_.size());
  int x = -1, memory = -1;
  for (size_t i = 0; i < stacks_.size(); ++i) {
    const StackSpec& st = stacks_[i];
    const int first = next();
    if (i > 0) memory = x = finish(i - 1, x);  // the encoder's final norm opens the decoder's first unit
    x = embed(i);
    add_unit(out_, st.embed_unit, first);
    if (embed_unit_end_ >= 0) out_.units.back().last = embed_unit_end_ - 1, embed_unit_end_ = -1;
    for (int64_t l = 0; l < st.layers; ++l) {
      const std::string prefix = st.layer_prefix + std::to_string(st.shared ? 0 : l);
      const int block_first = next();
      x = block(i, l, x, memory, prefix);
      add_unit(out_, st.shared ? prefix + "#" + std::to_string(l) : prefix, block_first, /*layer=*/true);
    }
  }
  const int heads_first = next();
  head(finish(stacks_.size() - 1, x));
  add_unit(out_, "heads", heads_first);
  mark_outputs(out_, shape_.training);
  return std::move(out_);
}

int StackBuilder::finish(size_t stack, int x) {
  const StackSpec& st = stacks_[stack];
  if (!st.final_norm.empty()) x = norm(x, st.final_norm, stack);
  if (!st.final_dropout.empty()) x = dropout(x, st.final_dropout_rate, st.final_dropout);
  return x;
}

int StackBuilder::block(size_t stack, int64_t, int x, int memory, const std::string& p) {
  const BlockSpec& b = blocks_[stack];
  x = residual(stack, x, p, b.self, [&](int h) { return attention(stack, h, h, p, false); });
  if (memory >= 0) x = residual(stack, x, p, b.cross, [&](int h) { return attention(stack, h, memory, p, true); });
  return residual(stack, x, p, b.mlp, [&](int h) { return mlp(stack, h, p); });
}

layers::AttentionSpec StackBuilder::attention_spec(size_t stack, size_t kv_stack, const layers::AttentionNames& n,
                                                   const std::string& p) const {
  const BlockSpec& b = blocks_[stack];
  return {.names = {p + n.scope, p + n.q, p + n.k, p + n.v, p + n.o, n.dropout},
          .batch = B_, .q_len = stacks_[stack].length, .kv_len = stacks_[kv_stack].length, .hidden = H_,
          .heads = arch_.heads, .head_dim = head_dim_, .projection = b.projection, .scale = b.scale,
          .dropout = b.attention_dropout};
}

int StackBuilder::attention(size_t stack, int h, int kv, const std::string& p, bool cross) {
  const BlockSpec& b = blocks_[stack];
  const auto spec = attention_spec(stack, cross ? 0 : stack, cross ? b.cross_attn : b.self_attn, p);
  return layers::attention(cx(), spec, h, kv, cross ? cross_biases_ : self_biases_[stack]);
}

int StackBuilder::norm(int x, const std::string& name, size_t stack) {
  const double eps = blocks_[stack].norm_eps;
  const int64_t shards = sharded_stream() ? shape_.tensor : 1;
  return arch_.norm == NormKind::kRmsNorm ? layers::rms_norm(cx(), x, eps, name, shards)
                                          : layers::layer_norm(cx(), x, eps, name, shards);
}

namespace {

CollectiveAttrs along_tensor(const Mesh& mesh, CollectiveOp op) {
  CollectiveAttrs a;
  a.op = op;
  a.replicas = mesh.devices();
  a.groups = axis_groups(mesh, MeshAxis::kTensor);
  a.dim = 1;
  a.axis = MeshAxis::kTensor;
  return a;
}

}  // namespace

int StackBuilder::gather_columns(int x, const std::string& name) {
  return g().collective(x, along_tensor(shape_.mesh, CollectiveOp::kAllGather), name);
}

// The rows' partial sums over the tensor axis, each replica keeping the sum of its columns: the
// result is split along them (annotated: the norms' sums over the row then partial, all-reduced).
int StackBuilder::scatter_columns(int x, const std::string& name) {
  const int y = g().collective(x, along_tensor(shape_.mesh, CollectiveOp::kReduceScatter), name);
  g().set_sharding(y, TensorSharding::split_along(1, MeshAxis::kTensor));
  return y;
}

// A row-parallel projection (o_proj, down_proj: its input the replica's share of the heads or the
// MLP width, its product a partial sum over the tensor axis). On a sharded stream the sum is
// reduce-scattered and the bias (GPT-3) added to the replica's columns after it.
int StackBuilder::row_parallel(int x, int64_t in, int64_t out, const std::string& name, size_t stack) {
  if (!sharded_stream()) return dense(x, in, out, name, stack);
  const layers::Projection kind = blocks_[stack].projection;
  require(kind != layers::Projection::kConv1D, "tensor", shape_.tensor, "a Conv1D projection's stream is not split");
  layers::LayerContext c = cx();
  if (shape_.quantization != DotPrecision::kDefault) c.precision = shape_.quantization;
  const int y = scatter_columns(layers::project(c, x, in, out, layers::Projection::kLinearNoBias, name), name + ".reduce_scatter");
  if (kind == layers::Projection::kLinearNoBias) return y;
  return g().ew_bcast(EwOp::kAdd, y, weight(name + ".bias", {out / shape_.tensor}), {1}, name + ".bias_add");
}

int StackBuilder::activation(int x, const std::string& name) {
  switch (arch_.activation) {
    case Activation::kGelu: return layers::gelu(cx(), x, name);
    case Activation::kGeluNew: return layers::gelu_new(cx(), x, name);
    case Activation::kRelu: return g().ew(EwOp::kRelu, x, -1, name);
    case Activation::kSwiGlu: return layers::silu(cx(), x, name);
    case Activation::kGeGlu: return layers::gelu_new(cx(), x, name);
  }
  return x;
}

int StackBuilder::residual(size_t stack, int x, const std::string& p, const Residual& r,
                           const std::function<int(int)>& branch) {
  const BlockSpec& b = blocks_[stack];
  int h = b.pre_norm ? norm(x, p + r.norm, stack) : x;
  if (sharded_stream()) {
    require(b.pre_norm, "tensor", shape_.tensor, "a post-norm block's stream is not split");
    h = gather_columns(h, p + r.norm + ".all_gather");
  }
  const int y = dropout(branch(h), r.dropout_rate, p + r.dropout);
  const int sum = b.residual_first ? g().ew(EwOp::kAdd, x, y, p + r.add) : g().ew(EwOp::kAdd, y, x, p + r.add);
  if (b.materialize) g().set_materialize(sum);
  return b.pre_norm ? sum : norm(sum, p + r.norm, stack);
}

int StackBuilder::mlp(size_t stack, int h, const std::string& p) {
  const MlpNames& n = blocks_[stack].ffn;
  const int64_t I = arch_.intermediate;
  if (gated(arch_.activation)) {  // down_proj(act(gate_proj(x)) * up_proj(x)): SwiGLU, GeGLU
    const int gate = activation(dense(h, H_, I, p + n.in, stack), p + n.act);
    const int up = dense(h, H_, I, p + n.up, stack);
    return row_parallel(g().ew(EwOp::kMul, gate, up, p + n.gate), I, H_, p + n.out, stack);
  }
  int f = activation(dense(h, H_, I, p + n.in, stack), p + n.act);
  f = dropout(f, n.dropout_rate, p + n.dropout);
  return row_parallel(f, I, H_, p + n.out, stack);
}

void StackBuilder::classification_loss(int64_t num_labels) {
  if (num_labels == 1) {
    int labels = input("labels", {B_}, t_);
    out_.loss = mse_loss(g(), g().reshape(out_.logits, {B_}), labels, "loss");
  } else {
    int labels = input("labels", {B_}, DType::kS32);
    out_.loss = cross_entropy(g(), out_.logits, labels, -1, "loss");
  }
}

void StackBuilder::token_loss(int64_t length, const std::array<std::string, 3>& names) {
  int labels = g().reshape(input("labels", {B_, length}, DType::kS32), {B_ * length});
  int ignored = g().convert(g().ew(EwOp::kCmpEq, labels, g().constant(-100, DType::kS32), names[0]), t_);
  int weights = g().ew(EwOp::kAdd, g().ew(EwOp::kNeg, ignored, -1, names[1]), c(1.0), names[2]);
  out_.loss = cross_entropy(g(), out_.logits, labels, weights, "loss");
}

void require(bool ok, const std::string& key, int64_t value, const std::string& rule) {
  if (!ok) throw ConfigError({"", key, 0, std::to_string(value), rule, ""});
}

void check_batch(const StepShape& s) { require(s.batch >= 1, "batch", s.batch, "must be at least 1"); }

void check_seq(int64_t seq, int64_t max, const std::string& rows, const std::string& key) {
  require(seq >= 1 && seq <= max, key, seq, "must be in [1, " + std::to_string(max) + "] (" + rows + ")");
}

void check_heads_divide_hidden(const ModelArch& a) {
  require(a.heads >= 1 && a.hidden % a.heads == 0, "heads", a.heads, "must divide hidden (" + std::to_string(a.hidden) + ")");
}

void check_float(const StepShape& s) {
  if (!is_float(s.dtype)) throw ConfigError({"", "dtype", 0, dtype_name(s.dtype), "must be f32 or bf16", ""});
  if (s.param_dtype && !is_float(*s.param_dtype))
    throw ConfigError({"", "param_dtype", 0, dtype_name(*s.param_dtype), "must be f32 or bf16", ""});
}

}  // namespace tpusim::models
