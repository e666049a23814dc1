// A reference evaluator of the op graph in double precision, for tests only: it gives the graphs
// values so that autodiff can be checked against finite differences. Naive loops; small shapes.
#pragma once
#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <vector>

#include "models/graph.h"

namespace tpusim::test {

using models::Dims;

struct Tensor {
  Dims shape;
  std::vector<double> v;
};

inline std::vector<int64_t> strides_of(const Dims& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int i = int(s.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * s[i + 1];
  return st;
}

// Multi-index of flat index `f` in shape `s`.
inline std::vector<int64_t> unravel(int64_t f, const Dims& s) {
  std::vector<int64_t> idx(s.size());
  for (int i = int(s.size()) - 1; i >= 0; --i) {
    idx[i] = f % s[i];
    f /= s[i];
  }
  return idx;
}

inline int64_t ravel(const std::vector<int64_t>& idx, const Dims& s) {
  int64_t f = 0;
  for (size_t i = 0; i < s.size(); ++i) f = f * s[i] + idx[i];
  return f;
}

// Flash attention's parts (models/graph.h, AttentionAttrs) by the textbook formulas: the scores
// s = scale q k^T with masked keys at -inf, p = softmax(s), out = p v, lse = log sum exp s; and,
// from (o, lse, dO), dS = p (dO v^T - rowsum(dO o)), dq = scale dS k, dk = scale dS^T q and
// dv = p^T dO, summed over the query heads of a key/value head.
inline void evaluate_attention(const models::Node& n, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor* o,
                               const Tensor* lse, const Tensor* dout, Tensor& out) {
  const models::AttentionAttrs& a = n.attention;
  const int64_t B = q.shape[0], H = q.shape[1], S = q.shape[2], D = q.shape[3], Hk = k.shape[1], T = k.shape[2];
  auto at4 = [](const Tensor& t, int64_t b, int64_t h, int64_t i, int64_t d) {
    return t.v[size_t(((b * t.shape[1] + h) * t.shape[2] + i) * t.shape[3] + d)];
  };
  auto masked = [&](int64_t i, int64_t j) {
    i += a.q_offset;  // query i's position among the keys
    return (a.causal && j > i) || (a.window > 0 && i - j >= a.window);
  };
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t hk = h / (H / Hk);
      for (int64_t i = 0; i < S; ++i) {
        std::vector<double> s(size_t(T), -INFINITY);
        double m = -INFINITY;
        for (int64_t j = 0; j < T; ++j) {
          if (masked(i, j)) continue;
          double x = 0;
          for (int64_t d = 0; d < D; ++d) x += at4(q, b, h, i, d) * at4(k, b, hk, j, d);
          s[size_t(j)] = a.scale * x;
          m = std::max(m, s[size_t(j)]);
        }
        double l = 0;
        for (int64_t j = 0; j < T; ++j) l += std::exp(s[size_t(j)] - m);
        const double log_l = m + std::log(l);
        auto p = [&](int64_t j) { return std::exp(s[size_t(j)] - (lse ? lse->v[size_t((b * H + h) * S + i)] : log_l)); };
        switch (a.part) {
          case models::AttentionPart::kOut:
            for (int64_t d = 0; d < D; ++d)
              for (int64_t j = 0; j < T; ++j) out.v[size_t(((b * H + h) * S + i) * D + d)] += p(j) * at4(v, b, hk, j, d);
            break;
          case models::AttentionPart::kLse: out.v[size_t((b * H + h) * S + i)] = log_l; break;
          default: {
            double rowsum = 0;
            for (int64_t d = 0; d < D; ++d) rowsum += at4(*dout, b, h, i, d) * at4(*o, b, h, i, d);
            for (int64_t j = 0; j < T; ++j) {
              if (masked(i, j)) continue;
              double dp = 0;
              for (int64_t d = 0; d < D; ++d) dp += at4(*dout, b, h, i, d) * at4(v, b, hk, j, d);
              const double ds = p(j) * (dp - rowsum);
              for (int64_t d = 0; d < D; ++d) {
                if (a.part == models::AttentionPart::kDq)
                  out.v[size_t(((b * H + h) * S + i) * D + d)] += a.scale * ds * at4(k, b, hk, j, d);
                else if (a.part == models::AttentionPart::kDk)
                  out.v[size_t(((b * Hk + hk) * T + j) * D + d)] += a.scale * ds * at4(q, b, h, i, d);
                else
                  out.v[size_t(((b * Hk + hk) * T + j) * D + d)] += p(j) * at4(*dout, b, h, i, d);
              }
            }
          }
        }
      }
    }
}

// Values of every node up to `upto` (all if -1); `inputs` gives each Parameter's value (by node id).
inline std::vector<Tensor> evaluate(const models::Graph& g, const std::map<int, Tensor>& inputs, int upto = -1) {
  using models::EwOp;
  using models::OpKind;
  std::vector<Tensor> val(g.nodes().size());
  for (const auto& n : g.nodes()) {
    if (upto >= 0 && n.id > upto) break;
    Tensor& out = val[n.id];
    out.shape = n.shape;
    const int64_t size = models::num_elements(n.shape);
    out.v.assign(size, 0.0);
    auto in = [&](int i) -> const Tensor& { return val[n.inputs.at(i)]; };
    switch (n.kind) {
      case OpKind::kParameter: {
        const Tensor& t = inputs.at(n.id);
        if (int64_t(t.v.size()) != size) throw std::runtime_error("evaluate: wrong input size for " + n.name);
        out.v = t.v;
        break;
      }
      case OpKind::kConstant: out.v = {n.constant}; break;
      case OpKind::kIota:
        for (int64_t f = 0; f < size; ++f) out.v[f] = double(unravel(f, n.shape)[n.iota_dim]);
        break;
      case OpKind::kDot: {
        const Tensor &a = in(0), &b = in(1);
        const auto& d = n.dot;
        auto free_dims = [](const Dims& s, const std::vector<int>& x, const std::vector<int>& y) {
          std::vector<int> f;
          for (int i = 0; i < int(s.size()); ++i)
            if (std::find(x.begin(), x.end(), i) == x.end() && std::find(y.begin(), y.end(), i) == y.end()) f.push_back(i);
          return f;
        };
        const auto lf = free_dims(a.shape, d.lhs_batch, d.lhs_contract);
        const auto rf = free_dims(b.shape, d.rhs_batch, d.rhs_contract);
        Dims cshape;
        for (int c : d.lhs_contract) cshape.push_back(a.shape[c]);
        const int64_t csize = models::num_elements(cshape);
        const size_t nb = d.lhs_batch.size();
        for (int64_t f = 0; f < size; ++f) {
          const auto o = unravel(f, n.shape);
          std::vector<int64_t> ai(a.shape.size()), bi(b.shape.size());
          for (size_t i = 0; i < nb; ++i) ai[d.lhs_batch[i]] = bi[d.rhs_batch[i]] = o[i];
          for (size_t j = 0; j < lf.size(); ++j) ai[lf[j]] = o[nb + j];
          for (size_t j = 0; j < rf.size(); ++j) bi[rf[j]] = o[nb + lf.size() + j];
          double acc = 0;
          for (int64_t cf = 0; cf < csize; ++cf) {
            const auto ci = unravel(cf, cshape);
            for (size_t k = 0; k < ci.size(); ++k) ai[d.lhs_contract[k]] = bi[d.rhs_contract[k]] = ci[k];
            acc += a.v[ravel(ai, a.shape)] * b.v[ravel(bi, b.shape)];
          }
          out.v[f] = acc;
        }
        break;
      }
      case OpKind::kElementwise: {
        const Tensor& a = in(0);
        const bool binary = n.inputs.size() > 1;
        for (int64_t f = 0; f < size; ++f) {
          const double x = a.v[f];
          const double y = binary ? (in(1).v.size() == 1 ? in(1).v[0] : in(1).v[f]) : 0.0;
          double r = 0;
          switch (n.ew) {
            case EwOp::kAdd: r = x + y; break;
            case EwOp::kSub: r = x - y; break;
            case EwOp::kMul: r = x * y; break;
            case EwOp::kDiv: r = x / y; break;
            case EwOp::kMax: r = std::max(x, y); break;
            case EwOp::kExp: r = std::exp(x); break;
            case EwOp::kRsqrt: r = 1.0 / std::sqrt(x); break;
            case EwOp::kRelu: r = std::max(x, 0.0); break;
            case EwOp::kNeg: r = -x; break;
            case EwOp::kTanh: r = std::tanh(x); break;
            case EwOp::kErf: r = std::erf(x); break;
            case EwOp::kLog: r = std::log(x); break;
            case EwOp::kSqrt: r = std::sqrt(x); break;
            case EwOp::kCmpEq: r = x == y ? 1.0 : 0.0; break;
            case EwOp::kCmpGt: r = x > y ? 1.0 : 0.0; break;
            case EwOp::kDropoutMask: r = 1.0; break;  // deterministic: keep everything
          }
          out.v[f] = r;
        }
        break;
      }
      case OpKind::kBroadcast: {
        const Tensor& a = in(0);
        for (int64_t f = 0; f < size; ++f) {
          const auto o = unravel(f, n.shape);
          std::vector<int64_t> ii(a.shape.size());
          for (size_t k = 0; k < ii.size(); ++k) ii[k] = o[n.broadcast_dims[k]];
          out.v[f] = a.v[ravel(ii, a.shape)];
        }
        break;
      }
      case OpKind::kReduce: {
        const Tensor& a = in(0);
        const bool mx = n.reduce == models::ReduceOp::kMax;
        std::vector<bool> seen(size, false);
        for (int64_t f = 0; f < int64_t(a.v.size()); ++f) {
          auto ii = unravel(f, a.shape);
          ii.erase(ii.begin() + n.reduce_dim);
          const int64_t o = ravel(ii, n.shape);
          out.v[o] = mx ? (seen[o] ? std::max(out.v[o], a.v[f]) : a.v[f]) : out.v[o] + a.v[f];
          seen[o] = true;
        }
        break;
      }
      case OpKind::kReshape: case OpKind::kConvert: out.v = in(0).v; break;
      case OpKind::kTranspose: {
        const Tensor& a = in(0);
        for (int64_t f = 0; f < size; ++f) {
          const auto o = unravel(f, n.shape);
          std::vector<int64_t> ii(a.shape.size());
          for (size_t i = 0; i < o.size(); ++i) ii[n.permutation[i]] = o[i];
          out.v[f] = a.v[ravel(ii, a.shape)];
        }
        break;
      }
      case OpKind::kGather: {
        const Tensor &t = in(0), &ids = in(1);
        const int64_t row = models::num_elements(t.shape) / t.shape[0];
        for (size_t p = 0; p < ids.v.size(); ++p)
          for (int64_t j = 0; j < row; ++j) out.v[p * row + j] = t.v[int64_t(ids.v[p]) * row + j];
        break;
      }
      case OpKind::kSlice: {
        const Tensor& a = in(0);
        for (int64_t f = 0; f < size; ++f) {
          auto o = unravel(f, n.shape);
          o[n.axis] += n.start;
          out.v[f] = a.v[ravel(o, a.shape)];
        }
        break;
      }
      case OpKind::kHostOffload:  // copies: the value unchanged
      case OpKind::kHostReload: out.v = in(0).v; break;
      case OpKind::kCollectiveDone:
        if (g.node(n.inputs.at(0)).kind == OpKind::kHostOffload) {
          out.v = in(0).v;
          break;
        }
        [[fallthrough]];
      case OpKind::kCollective:  // one replica's values alone cannot give another's
        throw std::runtime_error("evaluate: collectives are not evaluated (" + n.name + ")");
      case OpKind::kConcatenate: {
        int64_t offset = 0;
        for (size_t k = 0; k < n.inputs.size(); ++k) {
          const Tensor& a = in(int(k));
          for (int64_t f = 0; f < int64_t(a.v.size()); ++f) {
            auto o = unravel(f, a.shape);
            o[n.axis] += offset;
            out.v[ravel(o, n.shape)] = a.v[f];
          }
          offset += a.shape[n.axis];
        }
        break;
      }
      case OpKind::kScatterAdd: {
        const Tensor &u = in(0), &ids = in(1);
        const int64_t row = size / n.shape[0];
        for (size_t p = 0; p < ids.v.size(); ++p)
          for (int64_t j = 0; j < row; ++j) out.v[int64_t(ids.v[p]) * row + j] += u.v[p * row + j];
        break;
      }
      case OpKind::kAttention: evaluate_attention(n, in(0), in(1), in(2), n.inputs.size() == 6 ? &in(3) : nullptr,
                                                  n.inputs.size() == 6 ? &in(4) : nullptr,
                                                  n.inputs.size() == 6 ? &in(5) : nullptr, out);
        break;
    }
  }
  return val;
}

}  // namespace tpusim::test
