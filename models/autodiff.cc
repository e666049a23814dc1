#include "models/autodiff.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <numeric>
#include <stdexcept>

namespace tpusim::models {

int Gradients::of(int param) const {
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i] == param) return grads[i];
  throw std::invalid_argument("autodiff: node " + std::to_string(param) + " was not differentiated");
}

namespace {

bool contains(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

bool is_identity(const std::vector<int>& perm) {
  for (int i = 0; i < int(perm.size()); ++i)
    if (perm[i] != i) return false;
  return true;
}

// Element-wise ops whose output is piecewise constant in their operands: no gradient passes.
bool blocks_gradient(const Node& n) {
  if (n.stop_gradient || !is_float(n.dtype)) return true;
  switch (n.kind) {
    case OpKind::kParameter: case OpKind::kConstant: case OpKind::kIota: return true;
    case OpKind::kElementwise:
      return n.ew == EwOp::kCmpEq || n.ew == EwOp::kCmpGt || n.ew == EwOp::kDropoutMask;
    default: return false;
  }
}

class Backward {
 public:
  Backward(Graph& g, int loss, const std::vector<int>& params) : g_(g), loss_(loss) {
    const int n = int(g.nodes().size());
    // active = depends on a parameter (forward sweep) and the loss depends on it (backward sweep).
    std::vector<bool> needs(n, false), reaches(n, false);
    for (int p : params) needs.at(p) = is_float(g.node(p).dtype);
    for (int v = 0; v < n; ++v) {
      const Node& x = g.node(v);
      if (needs[v] || blocks_gradient(x)) continue;
      const int differentiable_inputs = x.kind == OpKind::kGather || x.kind == OpKind::kScatterAdd ? 1 : int(x.inputs.size());
      for (int i = 0; i < differentiable_inputs; ++i) needs[v] = needs[v] || needs[x.inputs[i]];
    }
    reaches.at(loss) = true;
    for (int v = loss; v >= 0; --v)
      if (reaches[v] && needs[v])
        for (int in : g.node(v).inputs) reaches[in] = true;
    active_.resize(n);
    for (int v = 0; v < n; ++v) active_[v] = needs[v] && reaches[v];
    acc_.assign(n, -1);
  }

  Gradients run(const std::vector<int>& params) {
    const Node& l = g_.node(loss_);
    if (!is_float(l.dtype)) throw std::invalid_argument("autodiff: the loss must be a float value");
    acc_[loss_] = g_.full(1.0, l.shape, l.dtype);
    for (int v = loss_; v >= 0; --v) {
      if (!active_[v] || acc_[v] < 0 || g_.node(v).kind == OpKind::kParameter) continue;
      // A value the forward materializes (e.g. GPT-2's residual stream) has its gradient, complete
      // by now, materialized too: the backward stream has the same fan-out as the forward one.
      if (g_.node(v).materialize) g_.set_materialize(acc_[v]);
      vjp(v);
    }
    Gradients out;
    out.params = params;
    for (int p : params) {
      const Node& pn = g_.node(p);
      out.grads.push_back(acc_[p] >= 0 ? acc_[p] : g_.full(0.0, pn.shape, pn.dtype));
    }
    return out;
  }

 private:
  // Adds a gradient contribution for `in` (fan-out accumulates with adds).
  void contribute(int in, int grad) {
    if (!active_[in]) return;
    if (acc_[in] < 0)
      acc_[in] = grad;
    else
      acc_[in] = g_.ew(EwOp::kAdd, acc_[in], grad, g_.node(in).name + ".grad_acc");
  }
  int c(double v, DType t) { return g_.constant(v, t); }

  void vjp(int v) {
    const Node n = g_.node(v);  // a copy: appending nodes may reallocate the node vector
    const int G = acc_[v];
    const std::string nm = n.name + ".grad";
    switch (n.kind) {
      case OpKind::kDot: dot_vjp(n, G); break;
      case OpKind::kElementwise: ew_vjp(n, G); break;
      case OpKind::kBroadcast: {
        int x = G;
        for (int d = int(n.shape.size()) - 1; d >= 0; --d)
          if (!contains(n.broadcast_dims, d)) x = g_.reduce(x, d, ReduceOp::kSum);
        // The kept dims come out in ascending output order; reorder to the operand's.
        std::vector<int> sorted = n.broadcast_dims;
        std::sort(sorted.begin(), sorted.end());
        std::vector<int> perm;
        for (int d : n.broadcast_dims) perm.push_back(int(std::find(sorted.begin(), sorted.end(), d) - sorted.begin()));
        if (!is_identity(perm)) x = g_.transpose(x, perm);
        contribute(n.inputs[0], x);
        break;
      }
      case OpKind::kReduce: {
        const Node& in = g_.node(n.inputs[0]);
        std::vector<int> keep;
        for (int d = 0; d < int(in.shape.size()); ++d)
          if (d != n.reduce_dim) keep.push_back(d);
        const Dims in_shape = in.shape;
        int gb = g_.broadcast(G, in_shape, keep);
        if (n.reduce == ReduceOp::kMax) {
          // The gradient goes to the maximal element(s): mask = (x == broadcast(max)).
          int mask = g_.ew(EwOp::kCmpEq, n.inputs[0], g_.broadcast(v, in_shape, keep), nm + ".argmax");
          gb = g_.ew(EwOp::kMul, gb, mask, nm);
        }
        contribute(n.inputs[0], gb);
        break;
      }
      case OpKind::kReshape: contribute(n.inputs[0], g_.reshape(G, g_.node(n.inputs[0]).shape)); break;
      case OpKind::kTranspose: {
        std::vector<int> inv(n.permutation.size());
        for (int i = 0; i < int(inv.size()); ++i) inv[n.permutation[i]] = i;
        contribute(n.inputs[0], g_.transpose(G, inv));
        break;
      }
      case OpKind::kConvert: contribute(n.inputs[0], g_.convert(G, g_.node(n.inputs[0]).dtype)); break;
      case OpKind::kGather: {
        // A table split over a mesh axis (vocabulary-parallel embedding) gets its gradient with the
        // same split: each replica adds the rows it holds (compiler/step/sharding_rules.h).
        const int s = g_.scatter_add(G, n.inputs[1], g_.node(n.inputs[0]).shape.at(0), nm);
        if (const TensorSharding t = g_.node(n.inputs[0]).sharding; !t.is_whole()) g_.set_sharding(s, t);
        contribute(n.inputs[0], s);
        break;
      }
      case OpKind::kScatterAdd: contribute(n.inputs[0], g_.gather(G, n.inputs[1], nm)); break;
      case OpKind::kSlice: {  // the gradient in the sliced range, zeros around it (XLA pads it)
        const Node& in = g_.node(n.inputs[0]);
        const int64_t after = in.shape[n.axis] - n.start - n.shape[n.axis];
        std::vector<int> parts;
        auto zeros = [&](int64_t extent) {
          Dims s = in.shape;
          s[n.axis] = extent;
          return g_.full(0.0, s, n.dtype);
        };
        if (n.start > 0) parts.push_back(zeros(n.start));
        parts.push_back(G);
        if (after > 0) parts.push_back(zeros(after));
        contribute(n.inputs[0], parts.size() == 1 ? G : g_.concatenate(parts, n.axis, nm));
        break;
      }
      case OpKind::kConcatenate: {  // each operand's range of the gradient
        int64_t offset = 0;
        for (int in : n.inputs) {
          const int64_t extent = g_.node(in).shape[n.axis];
          if (active_[in]) contribute(in, g_.slice(G, n.axis, offset, offset + extent, nm));
          offset += extent;
        }
        break;
      }
      case OpKind::kAttention: attention_vjp(n, G); break;
      case OpKind::kParameter: case OpKind::kConstant: case OpKind::kIota: break;
      case OpKind::kCollective:
        if (n.collective.op == CollectiveOp::kAllGather && !n.collective.async) {
          // Each replica's block of the gathered value is read by every replica of the group: its
          // gradient is the sum of their gradients' blocks, a reduce-scatter (a sequence-parallel
          // replica's keys and values, gathered for its attention; a tensor-sharded stream's
          // columns), split as the block was.
          CollectiveAttrs rs = n.collective;
          rs.op = CollectiveOp::kReduceScatter;
          rs.reduce = ReduceOp::kSum;
          const int d = g_.collective(G, rs, nm);
          const TensorSharding& block = g_.node(n.inputs[0]).sharding;
          if (n.collective.axis && block.axis_of(n.collective.dim) == n.collective.axis)
            g_.set_sharding(d, TensorSharding::split_along(n.collective.dim, *n.collective.axis));
          contribute(n.inputs[0], d);
          break;
        }
        if (n.collective.op == CollectiveOp::kReduceScatter && !n.collective.async && n.collective.combine < 0) {
          // Each replica's block is the sum of every replica's: the gradient of each replica's
          // operand is every block's gradient, an all-gather (a tensor-sharded stream's
          // row-parallel sums).
          CollectiveAttrs ag = n.collective;
          ag.op = CollectiveOp::kAllGather;
          contribute(n.inputs[0], g_.collective(G, ag, nm));
          break;
        }
        [[fallthrough]];  // imported modules carry their own backward pass
      case OpKind::kCollectiveDone:
        throw std::invalid_argument("autodiff: no gradient of a collective (" + n.name + ")");
      case OpKind::kHostOffload:  // written after the backward is built (models/recompute.h)
      case OpKind::kHostReload:
        throw std::invalid_argument("autodiff: no gradient of a host copy (" + n.name + ")");
    }
  }

  // Flash attention's backward is its own kernel (models/graph.h): from q, k, v, the forward's output
  // and log-sum-exp (the same call's kLse part) and the output's gradient.
  void attention_vjp(const Node& n, int G) {
    if (n.attention.part != AttentionPart::kOut)
      throw std::invalid_argument("autodiff: no gradient of an attention gradient (" + n.name + ")");
    int lse = -1;
    for (int x = n.id + 1; x < int(g_.nodes().size()) && lse < 0; ++x) {
      const Node& c = g_.node(x);
      if (c.kind == OpKind::kAttention && c.attention.call == n.attention.call && c.attention.part == AttentionPart::kLse) lse = x;
    }
    if (lse < 0) throw std::logic_error("autodiff: attention " + n.name + " has no log-sum-exp part");
    const Graph::AttentionGrads d =
        g_.attention_grad(n.inputs[0], n.inputs[1], n.inputs[2], n.id, lse, G, n.attention, n.name + ".grad");
    contribute(n.inputs[0], d.dq);
    contribute(n.inputs[1], d.dk);
    contribute(n.inputs[2], d.dv);
  }

  // out = dot(A, B): out dims are [batch..., lhs free..., rhs free...].
  //   dA = dot(G, B) contracting G's rhs-free dims with B's free dims;
  //   dB = dot(G, A) contracting G's lhs-free dims with A's free dims;
  // each result is [batch, G's remaining free dims, the other operand's contracting dims] and is
  // transposed to the operand's layout when that order differs.
  void dot_vjp(const Node& n, int G) {
    const int a = n.inputs[0], b = n.inputs[1];
    const Dims as = g_.node(a).shape, bs = g_.node(b).shape;
    const DotDims& d = n.dot;
    auto free_dims = [](const Dims& s, const std::vector<int>& batch, const std::vector<int>& con) {
      std::vector<int> f;
      for (int i = 0; i < int(s.size()); ++i)
        if (!contains(batch, i) && !contains(con, i)) f.push_back(i);
      return f;
    };
    const std::vector<int> lf = free_dims(as, d.lhs_batch, d.lhs_contract);
    const std::vector<int> rf = free_dims(bs, d.rhs_batch, d.rhs_contract);
    const int nb = int(d.lhs_batch.size()), nlf = int(lf.size()), nrf = int(rf.size());
    std::vector<int> g_batch(nb), g_lfree(nlf), g_rfree(nrf);
    std::iota(g_batch.begin(), g_batch.end(), 0);
    std::iota(g_lfree.begin(), g_lfree.end(), nb);
    std::iota(g_rfree.begin(), g_rfree.end(), nb + nlf);

    // Gradient of one operand X (batch xb, contracting xc, free xf) against the other operand Y
    // (batch yb, contracting yc, free yf); g_yfree are G's dims holding Y's free dims.
    // Either operand order works; take the one whose output is closest to X's layout (e.g. dW of
    // x·W with W [in, out] is dot(x, G), of nn.Linear's x·Wᵀ it is dot(G, x): no transpose).
    auto grad_of = [&](int y, const std::vector<int>& xb, const std::vector<int>& xc, const std::vector<int>& xf,
                       const std::vector<int>& yb, const std::vector<int>& yc, const std::vector<int>& yf,
                       const std::vector<int>& g_yfree, const std::string& name) {
      std::vector<int> yc_as_x;  // X dims of Y's contracting dims, in Y's dim order
      std::vector<int> yc_sorted = yc;
      std::sort(yc_sorted.begin(), yc_sorted.end());
      for (int ydim : yc_sorted) yc_as_x.push_back(xc[std::find(yc.begin(), yc.end(), ydim) - yc.begin()]);
      auto perm_for = [&](bool g_first) {
        // Result position -> X dim: [batch, G's remaining dims (X's free), Y's remaining] or swapped.
        std::vector<int> res_to_x = xb;
        const auto& first = g_first ? xf : yc_as_x;
        const auto& second = g_first ? yc_as_x : xf;
        res_to_x.insert(res_to_x.end(), first.begin(), first.end());
        res_to_x.insert(res_to_x.end(), second.begin(), second.end());
        std::vector<int> perm(res_to_x.size());
        for (int p = 0; p < int(res_to_x.size()); ++p) perm[res_to_x[p]] = p;
        return perm;
      };
      // 0: no transpose; 1: one that keeps the minor (lane) dim, a cheap copy; 2: a tile transpose.
      auto cost = [](const std::vector<int>& perm) {
        return is_identity(perm) ? 0 : perm.back() == int(perm.size()) - 1 ? 1 : 2;
      };
      std::vector<int> perm = perm_for(true);
      const std::vector<int> swapped = perm_for(false);
      int r;
      if (cost(perm) <= cost(swapped)) {
        r = g_.dot(G, y, {g_batch, yb, g_yfree, yf}, n.precision, name);
      } else {
        perm = swapped;
        r = g_.dot(y, G, {yb, g_batch, yf, g_yfree}, n.precision, name);
      }
      return is_identity(perm) ? r : g_.transpose(r, perm);
    };
    if (active_[a])
      contribute(a, grad_of(b, d.lhs_batch, d.lhs_contract, lf, d.rhs_batch, d.rhs_contract, rf, g_rfree,
                            n.name + ".grad_lhs"));
    if (active_[b])
      contribute(b, grad_of(a, d.rhs_batch, d.rhs_contract, rf, d.lhs_batch, d.lhs_contract, lf, g_lfree,
                            n.name + ".grad_rhs"));
  }

  void ew_vjp(const Node& n, int G) {
    const int v = n.id, a = n.inputs[0];
    const int b = n.inputs.size() > 1 ? n.inputs[1] : -1;
    const bool b_tensor = b >= 0 && g_.node(b).kind != OpKind::kConstant;
    const DType t = n.dtype;
    const std::string nm = n.name + ".grad";
    auto mul = [&](int x, int y) { return g_.ew(EwOp::kMul, x, y, nm); };
    switch (n.ew) {
      case EwOp::kAdd:
        contribute(a, G);
        if (b_tensor) contribute(b, G);
        break;
      case EwOp::kSub:
        contribute(a, G);
        if (b_tensor) contribute(b, g_.ew(EwOp::kNeg, G, -1, nm));
        break;
      case EwOp::kMul:
        if (active_[a]) contribute(a, mul(G, b));
        if (b_tensor && active_[b]) contribute(b, mul(G, a));
        break;
      case EwOp::kDiv:  // y = a/b: da = G/b, db = -G*y/b
        if (active_[a]) contribute(a, g_.ew(EwOp::kDiv, G, b, nm));
        if (b_tensor && active_[b])
          contribute(b, g_.ew(EwOp::kNeg, g_.ew(EwOp::kDiv, mul(G, v), b, nm), -1, nm));
        break;
      case EwOp::kMax: {  // ties go to b
        int mask = g_.ew(EwOp::kCmpGt, a, b, nm + ".mask");
        int ga = mul(G, mask);
        if (active_[a]) contribute(a, ga);
        if (b_tensor && active_[b]) contribute(b, g_.ew(EwOp::kSub, G, ga, nm));
        break;
      }
      case EwOp::kRelu: contribute(a, mul(G, g_.ew(EwOp::kCmpGt, a, c(0, t), nm + ".mask"))); break;
      case EwOp::kNeg: contribute(a, g_.ew(EwOp::kNeg, G, -1, nm)); break;
      case EwOp::kExp: contribute(a, mul(G, v)); break;                       // d exp = exp
      case EwOp::kLog: contribute(a, g_.ew(EwOp::kDiv, G, a, nm)); break;     // d log x = 1/x
      case EwOp::kSqrt:                                                       // d sqrt x = 0.5/y
        contribute(a, g_.ew(EwOp::kDiv, mul(G, c(0.5, t)), v, nm));
        break;
      case EwOp::kRsqrt:  // d x^-1/2 = -0.5 y^3
        contribute(a, mul(mul(G, mul(mul(v, v), v)), c(-0.5, t)));
        break;
      case EwOp::kTanh:  // d tanh = 1 - y^2
        contribute(a, g_.ew(EwOp::kSub, G, mul(G, mul(v, v)), nm));
        break;
      case EwOp::kErf: {  // d erf x = 2/sqrt(pi) exp(-x^2)
        int e = g_.ew(EwOp::kExp, g_.ew(EwOp::kNeg, mul(a, a), -1, nm), -1, nm);
        contribute(a, mul(G, mul(e, c(2.0 / std::sqrt(std::numbers::pi), t))));
        break;
      }
      case EwOp::kCmpEq: case EwOp::kCmpGt: case EwOp::kDropoutMask: break;
    }
  }

  Graph& g_;
  int loss_;
  std::vector<bool> active_;
  std::vector<int> acc_;  // accumulated gradient node per forward node, -1 if none yet
};

}  // namespace

Gradients build_backward(Graph& g, int loss, const std::vector<int>& params) {
  if (loss < 0 || loss >= int(g.nodes().size())) throw std::invalid_argument("autodiff: loss node out of range");
  for (int p : params)
    if (g.node(p).kind != OpKind::kParameter)
      throw std::invalid_argument("autodiff: node '" + g.node(p).name + "' is not a parameter");
  return Backward(g, loss, params).run(params);
}

}  // namespace tpusim::models
