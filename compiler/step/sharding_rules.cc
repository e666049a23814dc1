#include "compiler/step/sharding_rules.h"

#include <algorithm>
#include <cstdint>

namespace tpusim::compiler {

namespace {

using models::Node;
using models::OpKind;
using models::TensorSharding;

// Per dimension the mesh axis it is split along, -1 for none.
using Axes = std::vector<int>;

Axes axes_of(const TensorSharding& s, size_t rank) {
  Axes a(rank, -1);
  for (size_t d = 0; d < rank && d < size_t(TensorSharding::kMaxRank); ++d)
    if (auto x = s.axis_of(int(d))) a[d] = int(*x);
  return a;
}

TensorSharding make(const Axes& a, uint8_t partial) {
  TensorSharding s;
  for (size_t d = 0; d < a.size() && d < size_t(TensorSharding::kMaxRank); ++d)
    if (a[d] >= 0) s.split |= uint32_t(a[d] + 1) << (4 * d);
  s.partial = partial;
  return s;
}

uint8_t bit(int axis) { return uint8_t(1u << unsigned(axis)); }
uint8_t max_bit(int axis) { return uint8_t(1u << unsigned(axis + 4)); }
constexpr uint8_t kSumBits = 0x0F;  // TensorSharding::partial: the partial sums (the high bits: maxima)

// The partial sums `n` carries on from its operands (0: it reads them reduced): a linear op of one
// operand, or an add/subtract whose operands are all partial sums over the same axes. A partial
// maximum goes on through the ops that only move values (convert, reshape, transpose).
uint8_t carried_partial(const Node& n, const std::vector<TensorSharding>& in) {
  switch (n.kind) {
    case OpKind::kConvert:
    case OpKind::kReshape:
    case OpKind::kTranspose:
    case OpKind::kHostOffload:
    case OpKind::kHostReload: return in.at(0).partial;
    case OpKind::kReduce: return n.reduce == models::ReduceOp::kSum && !(in.at(0).partial & ~kSumBits) ? in.at(0).partial : 0;
    case OpKind::kElementwise:
      if (in.at(0).partial & ~kSumBits) return 0;
      if (n.ew == models::EwOp::kNeg) return in.at(0).partial;
      if ((n.ew == models::EwOp::kAdd || n.ew == models::EwOp::kSub) && in.size() == 2 && in[0].partial == in[1].partial)
        return in[0].partial;
      return 0;
    default: return 0;
  }
}

// The first split axis the operands give each dimension (same-rank operands; a whole operand is
// read sliced to it).
Axes union_axes(const models::Graph& g, const Node& n, const std::vector<TensorSharding>& in) {
  Axes out(n.shape.size(), -1);
  for (size_t i = 0; i < in.size(); ++i) {
    const Axes a = axes_of(in[i], g.node(n.inputs[i]).shape.size());
    for (size_t d = 0; d < out.size() && d < a.size(); ++d)
      if (out[d] < 0) out[d] = a[d];
  }
  return out;
}

// A model's own all-gather or reduce-scatter along one axis (a sequence-parallel replica's keys
// and values, and their gradients): the operand's splits along the other dimensions carry.
bool carries_splits(const Node& n) {
  const models::CollectiveAttrs& c = n.collective;
  return n.kind == OpKind::kCollective && c.axis && !c.flat && c.combine < 0 &&
         (c.op == models::CollectiveOp::kAllGather || c.op == models::CollectiveOp::kReduceScatter);
}

void dot_rule(const models::Graph& g, const Node& n, OpSharding& r) {
  Axes la = axes_of(r.operands[0], g.node(n.inputs[0]).shape.size());
  Axes ra = axes_of(r.operands[1], g.node(n.inputs[1]).shape.size());
  const models::DotDims& dd = n.dot;
  Axes out;
  uint8_t partial = 0;
  auto pair = [&](int l, int rr) {
    const int ax = la[size_t(l)] >= 0 ? la[size_t(l)] : ra[size_t(rr)];
    la[size_t(l)] = ra[size_t(rr)] = ax;
    return ax;
  };
  for (size_t i = 0; i < dd.lhs_batch.size(); ++i) out.push_back(pair(dd.lhs_batch[i], dd.rhs_batch[i]));
  for (size_t i = 0; i < dd.lhs_contract.size(); ++i)
    if (const int ax = pair(dd.lhs_contract[i], dd.rhs_contract[i]); ax >= 0) partial |= bit(ax);
  auto free_dims = [&](const Axes& a, const std::vector<int>& batch, const std::vector<int>& contract) {
    for (int d = 0; d < int(a.size()); ++d)
      if (std::find(batch.begin(), batch.end(), d) == batch.end() && std::find(contract.begin(), contract.end(), d) == contract.end())
        out.push_back(a[size_t(d)]);
  };
  free_dims(la, dd.lhs_batch, dd.lhs_contract);
  free_dims(ra, dd.rhs_batch, dd.rhs_contract);
  r.operands[0] = make(la, 0);
  r.operands[1] = make(ra, 0);
  r.out = make(out, partial);
}

// A reshape keeps a split on the result dimension that starts the same block of elements (equal
// products of the dimensions from there on), the outermost such one: in the local view a dimension
// of one element may be a split one (one attention head per replica), and the outermost is the one
// XLA's propagation picks in the global view, where it is the larger dimension. A split without one
// is read whole.
void reshape_rule(const models::Graph& g, const Node& n, OpSharding& r, uint8_t partial) {
  const models::Dims& in = g.node(n.inputs[0]).shape;
  Axes a = axes_of(r.operands[0], in.size());
  Axes out(n.shape.size(), -1);
  for (size_t d = 0; d < in.size(); ++d) {
    if (a[d] < 0) continue;
    const int64_t suffix = models::num_elements(models::Dims(in.begin() + long(d), in.end()));
    bool kept = false;
    for (size_t e = 0; e < n.shape.size() && !kept; ++e)
      if (models::num_elements(models::Dims(n.shape.begin() + long(e), n.shape.end())) == suffix) {
        out[e] = a[d];
        kept = true;
      }
    if (!kept) a[d] = -1;
  }
  r.operands[0] = make(a, partial);
  r.out = make(out, partial);
}

}  // namespace

OpSharding op_sharding(const models::Graph& g, const Node& n) {
  OpSharding r;
  for (int x : n.inputs) r.operands.push_back(g.node(x).sharding);
  const uint8_t partial = carried_partial(n, r.operands);
  if (partial == 0)
    for (TensorSharding& s : r.operands) s.partial = 0;  // read reduced
  switch (n.kind) {
    case OpKind::kParameter:
    case OpKind::kConstant:
    case OpKind::kIota:
    case OpKind::kCollective:
    case OpKind::kCollectiveDone:
      for (size_t i = 0; i < n.inputs.size(); ++i) r.operands[i] = g.node(n.inputs[i]).sharding;  // as they are
      r.out = n.sharding;
      if (r.out.is_whole() && carries_splits(n)) {
        Axes a = axes_of(r.operands[0], n.shape.size());
        a[size_t(n.collective.dim)] = -1;
        r.out = make(a, 0);
      }
      return r;
    case OpKind::kHostOffload:  // a copy: the value as it is, in host memory or back
    case OpKind::kHostReload:
      r.operands[0] = g.node(n.inputs[0]).sharding;
      r.out = r.operands[0];
      return r;
    case OpKind::kDot: dot_rule(g, n, r); return r;
    case OpKind::kAttention: {  // per (batch, head): batch and head splits carry; sequence and head size read whole
      Axes a = axes_of(r.operands[0], 4);
      a[2] = a[3] = -1;
      for (TensorSharding& s : r.operands) s = make(a, 0);
      if (r.operands.size() > 4) r.operands[4] = make({a[0], a[1], -1}, 0);  // lse [B, heads, S]
      if (n.attention.part == models::AttentionPart::kLse) a.pop_back();
      r.out = make(a, 0);
      return r;
    }
    case OpKind::kReshape: reshape_rule(g, n, r, partial); return r;
    case OpKind::kConvert: r.out = r.operands[0]; return r;
    case OpKind::kTranspose: {
      const Axes a = axes_of(r.operands[0], n.permutation.size());
      Axes out(n.shape.size(), -1);
      for (size_t i = 0; i < out.size(); ++i) out[i] = a[size_t(n.permutation[i])];
      r.out = make(out, partial);
      return r;
    }
    case OpKind::kBroadcast: {
      const Axes a = axes_of(r.operands[0], n.broadcast_dims.size());
      Axes out(n.shape.size(), -1);
      for (size_t k = 0; k < a.size(); ++k) out[size_t(n.broadcast_dims[k])] = a[k];
      r.out = make(out, partial);
      return r;
    }
    case OpKind::kReduce: {
      Axes a = axes_of(r.operands[0], g.node(n.inputs[0]).shape.size());
      const size_t d = size_t(n.reduce_dim);
      uint8_t out_partial = partial;
      // A split reduced dimension: each replica reduces its block, the result a partial sum or
      // maximum over the axis (a maximum reads its operand reduced: carried_partial gives it none).
      if (a[d] >= 0) out_partial |= n.reduce == models::ReduceOp::kSum ? bit(a[d]) : max_bit(a[d]);
      a.erase(a.begin() + long(d));
      r.out = make(a, out_partial);
      return r;
    }
    case OpKind::kGather: {  // (table, ids)
      Axes t = axes_of(r.operands[0], g.node(n.inputs[0]).shape.size());
      Axes out = axes_of(r.operands[1], g.node(n.inputs[1]).shape.size());
      // Rows split along an axis: each replica looks up the rows it holds, zeros for the others,
      // and the result is a partial sum over the axis (XLA's partitioner on a gather whose operand
      // is sharded along the indexed dimension: a masked local gather, then an all-reduce).
      const uint8_t out_partial = t[0] >= 0 ? bit(t[0]) : 0;
      out.insert(out.end(), t.begin() + 1, t.end());
      r.operands[0] = make(t, 0);
      r.out = make(out, out_partial);
      return r;
    }
    case OpKind::kScatterAdd: {  // (updates, ids): rows summed into a table
      const size_t ids_rank = g.node(n.inputs[1]).shape.size();
      const Axes u = axes_of(r.operands[0], g.node(n.inputs[0]).shape.size());
      uint8_t out_partial = 0;
      for (size_t d = 0; d < ids_rank; ++d)
        if (u[d] >= 0) out_partial |= bit(u[d]);
      Axes out{-1};
      out.insert(out.end(), u.begin() + long(ids_rank), u.end());
      r.out = make(out, out_partial);
      return r;
    }
    case OpKind::kSlice:
    case OpKind::kConcatenate:
    case OpKind::kElementwise: {
      Axes out = union_axes(g, n, r.operands);
      if (n.kind != OpKind::kElementwise) out[size_t(n.axis)] = -1;  // the sliced or joined dimension whole
      for (size_t i = 0; i < r.operands.size(); ++i)  // a scalar operand (a literal) as it is
        if (g.node(n.inputs[i]).shape.size() == out.size()) r.operands[i] = make(out, r.operands[i].partial);
      r.out = make(out, partial);
      return r;
    }
  }
  return r;
}

void propagate_shardings(models::Graph& g) {
  // An add of partial sums stays one (its operands' all-reduces become the sum's: XLA's
  // AllReduceReassociate) only where each partial operand is read by it alone; one that other
  // readers need reduced is all-reduced once, and the add reads that (a vocabulary-parallel
  // embedding's lookup, read by the first norm and the first residual add).
  std::vector<uint32_t> readers(g.nodes().size(), 0);
  for (const Node& n : g.nodes())
    for (int x : n.inputs) ++readers[size_t(x)];
  for (const Node& n : g.nodes()) {
    if (!n.sharding.is_whole()) continue;
    switch (n.kind) {
      case OpKind::kParameter:
      case OpKind::kConstant:
      case OpKind::kIota:
      case OpKind::kCollective:
        if (!carries_splits(n)) continue;
        break;
      case OpKind::kCollectiveDone: continue;
      default: break;
    }
    bool any = false;
    for (int x : n.inputs) any = any || !g.node(x).sharding.is_whole();
    if (!any) continue;
    TensorSharding out = op_sharding(g, n).out;
    if (n.kind == OpKind::kElementwise && n.inputs.size() == 2 && (out.partial & kSumBits))
      for (int x : n.inputs)
        if (g.node(x).sharding.partial && readers[size_t(x)] > 1) out.partial = 0;
    g.set_sharding(n.id, out);
  }
}

}  // namespace tpusim::compiler
