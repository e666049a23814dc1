#include "models/graph.h"

#include <algorithm>
#include <stdexcept>
#include <stdexcept>

namespace tpusim::models {

namespace {
void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("graph builder: " + what);
}
bool is_scalar_constant(const Node& n) { return n.kind == OpKind::kConstant; }
}  // namespace

int Graph::add(Node n) {
  // Shapes come from user sizes: an overflowing or impossible element count is refused here,
  // before any product of it is taken (std::length_error; compile_kernel names the shape keys).
  int64_t elements = 1;
  for (int64_t d : n.shape)
    if (d < 0 || __builtin_mul_overflow(elements, d, &elements) || elements > kMaxTensorElements)
      throw std::length_error("tensor '" + n.name + "' has more than 2^40 elements");
  n.id = int(nodes_.size());
  if (n.kind == OpKind::kAttention) attention_calls_ = std::max(attention_calls_, n.attention.call + 1);
  nodes_.push_back(std::move(n));
  return nodes_.back().id;
}

namespace {

// q [B, heads, S, hd], k and v [B, kv_heads, Skv, hd]: the shapes flash attention pairs up.
void check_attention_operands(const Node& q, const Node& k, const Node& v, const AttentionAttrs& a) {
  require(q.shape.size() == 4 && k.shape.size() == 4 && v.shape.size() == 4, "attention: q, k and v must be [B, heads, S, hd]");
  require(k.shape == v.shape, "attention: k and v must have one shape");
  require(q.shape[0] == k.shape[0] && q.shape[3] == k.shape[3], "attention: q and k must agree in batch and head size");
  require(k.shape[1] >= 1 && q.shape[1] % k.shape[1] == 0, "attention: the key/value heads must divide the query heads");
  require(a.q_offset >= 0 && a.q_offset + q.shape[2] <= k.shape[2], "attention: the queries' positions (from q_offset) must lie among the keys'");
  require(a.block_q >= 1 && a.block_kv >= 1 && a.window >= 0, "attention: block sizes must be positive");
  require(q.dtype == k.dtype && k.dtype == v.dtype && is_float(q.dtype), "attention: q, k and v must be one float dtype");
}

}  // namespace

Graph::AttentionValues Graph::attention(int q, int k, int v, AttentionAttrs a, const std::string& name) {
  const Node& qn = node(q);
  check_attention_operands(qn, node(k), node(v), a);
  a.call = attention_calls_;
  Node out;
  out.kind = OpKind::kAttention;
  out.name = name;
  out.shape = qn.shape;
  out.dtype = qn.dtype;
  out.inputs = {q, k, v};
  out.attention = a;
  out.attention.part = AttentionPart::kOut;
  Node lse = out;
  lse.name = name + ".lse";
  lse.shape = {qn.shape[0], qn.shape[1], qn.shape[2]};
  lse.dtype = DType::kF32;
  lse.attention.part = AttentionPart::kLse;
  lse.stop_gradient = true;
  AttentionValues r;
  r.out = add(std::move(out));
  r.lse = add(std::move(lse));
  return r;
}

Graph::AttentionGrads Graph::attention_grad(int q, int k, int v, int out, int lse, int d_out, AttentionAttrs a,
                                            const std::string& name) {
  check_attention_operands(node(q), node(k), node(v), a);
  require(node(out).shape == node(q).shape && node(d_out).shape == node(q).shape, "attention grad: out and d_out have q's shape");
  require(node(lse).shape == Dims{node(q).shape[0], node(q).shape[1], node(q).shape[2]}, "attention grad: lse is [B, heads, S]");
  a.call = attention_calls_;
  AttentionGrads r;
  auto part = [&](AttentionPart p, int like, const std::string& suffix) {
    Node n;
    n.kind = OpKind::kAttention;
    n.name = name + suffix;
    n.shape = node(like).shape;
    n.dtype = node(like).dtype;
    n.inputs = {q, k, v, out, lse, d_out};
    n.attention = a;
    n.attention.part = p;
    return add(std::move(n));
  };
  r.dq = part(AttentionPart::kDq, q, ".dq");
  r.dk = part(AttentionPart::kDk, k, ".dk");
  r.dv = part(AttentionPart::kDv, v, ".dv");
  return r;
}

int Graph::parameter(const std::string& name, Dims shape, DType dtype, ParamRole role) {
  Node n;
  n.kind = OpKind::kParameter;
  n.name = name;
  n.shape = std::move(shape);
  n.dtype = dtype;
  n.role = role;
  return add(std::move(n));
}

int Graph::constant(double value, DType dtype) {
  Node n;
  n.kind = OpKind::kConstant;
  n.name = "constant";
  n.dtype = dtype;
  n.constant = value;
  return add(std::move(n));
}

int Graph::dot(int lhs, int rhs, DotDims dims, DotPrecision precision, const std::string& name) {
  const Node& a = node(lhs);
  const Node& b = node(rhs);
  require(dims.lhs_batch.size() == dims.rhs_batch.size(), "dot batch dims differ in count");
  require(dims.lhs_contract.size() == dims.rhs_contract.size(), "dot contracting dims differ in count");
  auto contains = [](const std::vector<int>& v, int x) {
    for (int y : v)
      if (y == x) return true;
    return false;
  };
  Node n;
  n.kind = OpKind::kDot;
  n.name = name;
  n.dtype = a.dtype;
  n.precision = precision;
  for (size_t i = 0; i < dims.lhs_batch.size(); ++i) {
    require(a.shape.at(dims.lhs_batch[i]) == b.shape.at(dims.rhs_batch[i]), "dot batch sizes differ");
    n.shape.push_back(a.shape[dims.lhs_batch[i]]);
  }
  for (size_t i = 0; i < dims.lhs_contract.size(); ++i)
    require(a.shape.at(dims.lhs_contract[i]) == b.shape.at(dims.rhs_contract[i]), "dot contracting sizes differ");
  for (int d = 0; d < int(a.shape.size()); ++d)
    if (!contains(dims.lhs_batch, d) && !contains(dims.lhs_contract, d)) n.shape.push_back(a.shape[d]);
  for (int d = 0; d < int(b.shape.size()); ++d)
    if (!contains(dims.rhs_batch, d) && !contains(dims.rhs_contract, d)) n.shape.push_back(b.shape[d]);
  n.dot = std::move(dims);
  n.inputs = {lhs, rhs};
  return add(std::move(n));
}

int Graph::ew(EwOp op, int a, int b, const std::string& name) {
  const Node& x = node(a);
  require(!is_scalar_constant(x), "element-wise op needs a tensor first operand");
  Node n;
  n.kind = OpKind::kElementwise;
  n.ew = op;
  n.name = name.empty() ? "ew" : name;
  n.shape = x.shape;
  n.dtype = x.dtype;
  n.inputs = {a};
  if (b >= 0) {
    const Node& y = node(b);
    require(is_scalar_constant(y) || y.shape == x.shape, "element-wise operands must have equal shapes");
    n.inputs.push_back(b);
  }
  return add(std::move(n));
}

int Graph::ew_bcast(EwOp op, int a, int b, std::vector<int> b_dims, const std::string& name) {
  if (is_scalar_constant(node(b))) return ew(op, a, b, name);
  int bb = broadcast(b, node(a).shape, std::move(b_dims));
  return ew(op, a, bb, name);
}

int Graph::broadcast(int x, Dims shape, std::vector<int> broadcast_dims) {
  const Node& in = node(x);
  require(in.shape.size() == broadcast_dims.size(), "broadcast dims must map every operand dim");
  for (size_t i = 0; i < broadcast_dims.size(); ++i)
    require(shape.at(broadcast_dims[i]) == in.shape[i], "broadcast size mismatch");
  Node n;
  n.kind = OpKind::kBroadcast;
  n.name = "broadcast";
  n.shape = std::move(shape);
  n.dtype = in.dtype;
  n.broadcast_dims = std::move(broadcast_dims);
  n.inputs = {x};
  return add(std::move(n));
}

int Graph::reduce(int x, int dim, ReduceOp op) {
  const Node& in = node(x);
  require(dim >= 0 && dim < int(in.shape.size()), "reduce dim out of range");
  Node n;
  n.kind = OpKind::kReduce;
  n.name = op == ReduceOp::kSum ? "reduce_sum" : "reduce_max";
  n.reduce = op;
  n.reduce_dim = dim;
  n.dtype = in.dtype;
  for (int d = 0; d < int(in.shape.size()); ++d)
    if (d != dim) n.shape.push_back(in.shape[d]);
  n.inputs = {x};
  return add(std::move(n));
}

int Graph::reshape(int x, Dims shape) {
  const Node& in = node(x);
  require(num_elements(in.shape) == num_elements(shape), "reshape changes the element count");
  Node n;
  n.kind = OpKind::kReshape;
  n.name = "reshape";
  n.shape = std::move(shape);
  n.dtype = in.dtype;
  n.inputs = {x};
  return add(std::move(n));
}

int Graph::transpose(int x, std::vector<int> permutation) {
  const Node& in = node(x);
  require(permutation.size() == in.shape.size(), "transpose permutation rank mismatch");
  Node n;
  n.kind = OpKind::kTranspose;
  n.name = "transpose";
  for (int p : permutation) n.shape.push_back(in.shape.at(p));
  n.dtype = in.dtype;
  n.permutation = std::move(permutation);
  n.inputs = {x};
  return add(std::move(n));
}

int Graph::convert(int x, DType to) {
  const Node& in = node(x);
  Node n;
  n.kind = OpKind::kConvert;
  n.name = "convert";
  n.shape = in.shape;
  n.dtype = to;
  n.inputs = {x};
  return add(std::move(n));
}

int Graph::iota(Dims shape, int dim, DType dtype) {
  require(dim >= 0 && dim < int(shape.size()), "iota dim out of range");
  Node n;
  n.kind = OpKind::kIota;
  n.name = "iota";
  n.shape = std::move(shape);
  n.dtype = dtype;
  n.iota_dim = dim;
  return add(std::move(n));
}

int Graph::gather(int table, int ids, const std::string& name) {
  const Node& t = node(table);
  const Node& i = node(ids);
  require(i.dtype == DType::kS32, "gather ids must be s32");
  require(!t.shape.empty(), "gather table must have a row dimension");
  Node n;
  n.kind = OpKind::kGather;
  n.name = name;
  n.shape = i.shape;
  n.shape.insert(n.shape.end(), t.shape.begin() + 1, t.shape.end());
  n.dtype = t.dtype;
  n.inputs = {table, ids};
  return add(std::move(n));
}

int Graph::scatter_add(int updates, int ids, int64_t rows, const std::string& name) {
  const Node& u = node(updates);
  const Node& i = node(ids);
  require(i.dtype == DType::kS32, "scatter-add ids must be s32");
  require(rows > 0, "scatter-add needs at least one row");
  require(u.shape.size() >= i.shape.size() && std::equal(i.shape.begin(), i.shape.end(), u.shape.begin()),
          "scatter-add updates must start with the ids' shape");
  Node n;
  n.kind = OpKind::kScatterAdd;
  n.name = name;
  n.shape = {rows};
  n.shape.insert(n.shape.end(), u.shape.begin() + i.shape.size(), u.shape.end());
  n.dtype = u.dtype;
  n.inputs = {updates, ids};
  return add(std::move(n));
}

int Graph::dropout_mask(int x, double rate, const std::string& name) {
  require(rate >= 0 && rate < 1, "dropout rate must be in [0, 1)");
  int m = ew(EwOp::kDropoutMask, x, -1, name);
  nodes_[m].rate = rate;
  return m;
}

int Graph::slice(int x, int axis, int64_t start, int64_t limit, const std::string& name) {
  const Node& in = node(x);
  require(axis >= 0 && axis < int(in.shape.size()), "slice axis out of range");
  require(start >= 0 && start < limit && limit <= in.shape[axis], "slice range must be within the dimension");
  Node n;
  n.kind = OpKind::kSlice;
  n.name = name;
  n.shape = in.shape;
  n.shape[axis] = limit - start;
  n.dtype = in.dtype;
  n.axis = axis;
  n.start = start;
  n.inputs = {x};
  return add(std::move(n));
}

int Graph::concatenate(const std::vector<int>& xs, int axis, const std::string& name) {
  require(!xs.empty(), "concatenate needs an operand");
  const Node& first = node(xs[0]);
  require(axis >= 0 && axis < int(first.shape.size()), "concatenate axis out of range");
  Node n;
  n.kind = OpKind::kConcatenate;
  n.name = name;
  n.shape = first.shape;
  n.shape[axis] = 0;
  n.dtype = first.dtype;
  n.axis = axis;
  for (int x : xs) {
    const Node& in = node(x);
    require(in.dtype == first.dtype, "concatenate operands must have one dtype");
    require(in.shape.size() == first.shape.size(), "concatenate operands must have one rank");
    for (int d = 0; d < int(in.shape.size()); ++d)
      require(d == axis || in.shape[d] == first.shape[d], "concatenate operands differ outside the axis");
    n.shape[axis] += in.shape[axis];
  }
  n.inputs = xs;
  return add(std::move(n));
}

const char* collective_op_name(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllReduce: return "all-reduce";
    case CollectiveOp::kAllGather: return "all-gather";
    case CollectiveOp::kReduceScatter: return "reduce-scatter";
    case CollectiveOp::kAllToAll: return "all-to-all";
    case CollectiveOp::kCollectivePermute: return "collective-permute";
  }
  return "collective";
}

std::vector<std::vector<int64_t>> CollectiveAttrs::resolved_groups() const {
  if (!groups.empty()) return groups;
  std::vector<int64_t> all;
  for (int64_t r = 0; r < replicas; ++r) all.push_back(r);
  return {all};
}

namespace {

// The replica count in range and the groups a partition of the replicas into groups of one size.
void check_groups(const CollectiveAttrs& a, const std::string& what) {
  require(a.replicas >= 1 && a.replicas <= kMaxReplicas, what + "the replica count must be 1.." + std::to_string(kMaxReplicas));
  std::vector<char> seen(size_t(a.replicas), 0);
  size_t members = 0;
  for (const auto& grp : a.groups) {
    require(!grp.empty() && grp.size() == a.groups.front().size(), what + "replica groups must have one size");
    for (int64_t r : grp) {
      require(r >= 0 && r < a.replicas, what + "replica " + std::to_string(r) + " is not among the " +
                                            std::to_string(a.replicas) + " replicas");
      require(!seen[size_t(r)], what + "replica " + std::to_string(r) + " is in two groups");
      seen[size_t(r)] = 1;
      ++members;
    }
  }
  require(a.groups.empty() || int64_t(members) == a.replicas, what + "replica groups must hold every replica");
}

}  // namespace

int Graph::collective(int x, CollectiveAttrs a, const std::string& name) {
  const Node& in = node(x);
  const std::string what = std::string(collective_op_name(a.op)) + ": ";
  check_groups(a, what);
  const int64_t g = a.group_size();
  Node n;
  n.kind = OpKind::kCollective;
  n.name = name.empty() ? collective_op_name(a.op) : name;
  n.shape = in.shape;
  n.dtype = in.dtype;
  n.inputs = {x};
  if (a.op == CollectiveOp::kAllGather || a.op == CollectiveOp::kReduceScatter || a.op == CollectiveOp::kAllToAll) {
    require(a.dim >= 0 && a.dim < int(in.shape.size()), what + "dimension out of range");
    if (a.op == CollectiveOp::kAllGather) {
      n.shape[a.dim] *= g;
    } else {
      require(in.shape[a.dim] % g == 0, what + "the group size " + std::to_string(g) + " must divide dimension " +
                                            std::to_string(a.dim) + " (" + std::to_string(in.shape[a.dim]) + ")");
      if (a.op == CollectiveOp::kReduceScatter) n.shape[a.dim] /= g;
    }
  } else {
    a.dim = -1;
  }
  if (a.op == CollectiveOp::kCollectivePermute) {
    std::vector<char> src(size_t(a.replicas), 0), dst(size_t(a.replicas), 0);
    for (const auto& [s, t] : a.pairs) {
      require(s >= 0 && s < a.replicas && t >= 0 && t < a.replicas, what + "pair {" + std::to_string(s) + "," +
                                                                      std::to_string(t) + "} names a replica outside 0.." +
                                                                      std::to_string(a.replicas - 1));
      require(!src[size_t(s)] && !dst[size_t(t)], what + "a replica is the source or the target of two pairs");
      src[size_t(s)] = dst[size_t(t)] = 1;
    }
  } else {
    require(a.pairs.empty(), what + "source-target pairs belong to collective-permute");
  }
  n.collective = std::move(a);
  return add(std::move(n));
}

int Graph::collective_done(int x, const std::string& name) {
  const Node& in = node(x);
  require((in.kind == OpKind::kCollective && in.collective.async) || in.kind == OpKind::kHostOffload,
          "collective done: '" + in.name + "' is not an asynchronous collective or a host offload");
  Node n;
  n.kind = OpKind::kCollectiveDone;
  n.name = !name.empty()                       ? name
           : in.kind == OpKind::kHostOffload ? std::string("copy-done")
                                             : std::string(collective_op_name(in.collective.op)) + "-done";
  n.shape = in.shape;
  n.dtype = in.dtype;
  n.inputs = {x};
  n.collective = in.collective;  // a combined collective's parts' dones are awaited as one
  return add(std::move(n));
}

namespace {

// A host copy (kHostOffload or kHostReload) of `in`: its shape, type and sharding.
Node host_copy_of(const Node& in, OpKind kind, std::string name) {
  Node n;
  n.kind = kind;
  n.name = std::move(name);
  n.shape = in.shape;
  n.dtype = in.dtype;
  n.inputs = {in.id};
  n.sharding = in.sharding;
  return n;
}

}  // namespace

int Graph::host_offload(int x, const std::string& name) {
  const Node& in = node(x);
  require(in.kind != OpKind::kHostOffload && in.kind != OpKind::kHostReload && in.kind != OpKind::kCollectiveDone,
          "host offload: '" + in.name + "' is already a host copy or a done");
  return add(host_copy_of(in, OpKind::kHostOffload, name.empty() ? in.name + ".offload" : name));
}

int Graph::host_reload(int h, const std::string& name) {
  const Node& in = node(h);
  const bool offloaded = in.kind == OpKind::kHostOffload ||
                         (in.kind == OpKind::kCollectiveDone && node(in.inputs.at(0)).kind == OpKind::kHostOffload);
  require(offloaded, "host reload: '" + in.name + "' is not an offloaded value");
  return add(host_copy_of(in, OpKind::kHostReload, name.empty() ? in.name + ".reload" : name));
}

int Graph::flat_all_gather(int shard, Dims shape, CollectiveAttrs a, const std::string& name) {
  const Node& in = node(shard);
  require(a.op == CollectiveOp::kAllGather && a.combine >= 0, "flat all-gather: an all-gather with a combine id");
  require(in.shape.size() == 1, "flat all-gather: the shard must be 1-D");
  check_groups(a, "flat all-gather: ");
  require(num_elements(shape) <= a.group_size() * in.shape[0], "flat all-gather: the tensor is larger than the gathered buffer");
  a.flat = true;
  a.dim = 0;
  Node n;
  n.kind = OpKind::kCollective;
  n.name = name.empty() ? "all-gather" : name;
  n.shape = std::move(shape);
  n.dtype = in.dtype;
  n.inputs = {shard};
  n.collective = std::move(a);
  return add(std::move(n));
}

int Graph::flat_reduce_scatter(const std::vector<int>& xs, int64_t shard_elements, CollectiveAttrs a,
                               const std::string& name) {
  require(a.op == CollectiveOp::kReduceScatter && !xs.empty(), "flat reduce-scatter: a reduce-scatter of tensors");
  check_groups(a, "flat reduce-scatter: ");
  int64_t elements = 0;
  for (int x : xs) {
    require(node(x).dtype == node(xs[0]).dtype, "flat reduce-scatter: the tensors must have one dtype");
    elements += num_elements(node(x).shape);
  }
  require(shard_elements >= 1 && elements <= a.group_size() * shard_elements,
          "flat reduce-scatter: the tensors are larger than group x shard");
  a.flat = true;
  a.dim = 0;
  Node n;
  n.kind = OpKind::kCollective;
  n.name = name.empty() ? "reduce-scatter" : name;
  n.shape = {shard_elements};
  n.dtype = node(xs[0]).dtype;
  n.inputs = xs;
  n.collective = std::move(a);
  return add(std::move(n));
}

int Graph::full(double value, Dims shape, DType dtype) {
  // A scalar broadcast: every output dimension is new.
  return broadcast(constant(value, dtype), std::move(shape), {});
}

std::vector<AttentionBlock> attention_blocks(int64_t s_q, int64_t s_kv, const AttentionAttrs& a) {
  std::vector<AttentionBlock> out;
  const int64_t bq = std::min(a.block_q, s_q), bk = std::min(a.block_kv, s_kv);
  for (int64_t i = 0; i * bq < s_q; ++i) {
    // First and last query, as positions among the keys.
    const int64_t q0 = a.q_offset + i * bq, q1 = a.q_offset + std::min(s_q, i * bq + bq) - 1;
    for (int64_t j = 0; j * bk < s_kv; ++j) {
      const int64_t k0 = j * bk, k1 = std::min(s_kv, k0 + bk) - 1;
      // Key k is masked for query q when k > q (causal) or q - k >= window.
      if (a.causal && k0 > q1) continue;
      if (a.window > 0 && q0 - k1 >= a.window) continue;
      const bool masked = (a.causal && k1 > q0) || (a.window > 0 && q1 - k0 >= a.window);
      out.push_back({i, j, q1 - q0 + 1, k1 - k0 + 1, masked});
    }
  }
  return out;
}

uint64_t attention_flops(const Graph& g, const Node& n) {
  if (n.kind != OpKind::kAttention) return 0;
  const int matmuls = n.attention.part == AttentionPart::kOut ? 2 : n.attention.part == AttentionPart::kDq ? 7 : 0;
  if (matmuls == 0) return 0;
  const Dims& q = g.node(n.inputs[0]).shape;
  const Dims& k = g.node(n.inputs[1]).shape;
  uint64_t elements = 0;
  for (const AttentionBlock& b : attention_blocks(q[2], k[2], n.attention)) elements += uint64_t(b.rows * b.cols);
  return uint64_t(matmuls) * 2 * elements * uint64_t(q[3]) * uint64_t(q[0] * q[1]);
}

uint64_t attention_recompute_flops(const Graph& g, const Node& n) {
  if (n.kind != OpKind::kAttention || n.attention.part != AttentionPart::kDq) return 0;
  return attention_flops(g, n) / 7 * 3;
}

}  // namespace tpusim::models
