#include "models/losses.h"

#include <stdexcept>

namespace tpusim::models {

int reduce_all(Graph& g, int x) {
  while (!g.node(x).shape.empty()) x = g.reduce(x, int(g.node(x).shape.size()) - 1, ReduceOp::kSum);
  return x;
}

int stable_softmax(Graph& g, int x, int dim, const std::string& name) {
  std::vector<int> keep;
  for (int d = 0; d < int(g.node(x).shape.size()); ++d)
    if (d != dim) keep.push_back(d);
  int m = g.reduce(x, dim, ReduceOp::kMax);
  g.set_stop_gradient(m);
  int e = g.ew(EwOp::kExp, g.ew_bcast(EwOp::kSub, x, m, keep, name + ".shift"), -1, name + ".exp");
  int s = g.reduce(e, dim, ReduceOp::kSum);
  return g.ew_bcast(EwOp::kDiv, e, s, keep, name);
}

int log_softmax(Graph& g, int x, const std::string& name) {
  if (g.node(x).shape.size() != 2) throw std::invalid_argument("log_softmax: expects [rows, cols]");
  int m = g.reduce(x, 1, ReduceOp::kMax);
  g.set_stop_gradient(m);
  int sh = g.ew_bcast(EwOp::kSub, x, m, {0}, name + ".shift");
  int e = g.ew(EwOp::kExp, sh, -1, name + ".exp");
  int lse = g.ew(EwOp::kLog, g.reduce(e, 1, ReduceOp::kSum), -1, name + ".log_sum_exp");
  return g.ew_bcast(EwOp::kSub, sh, lse, {0}, name);
}

int cross_entropy(Graph& g, int logits, int labels, int weights, const std::string& name) {
  const Dims shape = g.node(logits).shape;
  const DType t = g.node(logits).dtype;
  if (shape.size() != 2 || g.node(labels).shape != Dims{shape[0]} || g.node(labels).dtype != DType::kS32)
    throw std::invalid_argument("cross_entropy: expects logits [N, C] and s32 labels [N]");
  const int64_t n = shape[0];
  int logp = log_softmax(g, logits, name + ".log_softmax");
  // one_hot(labels) = (broadcast(labels) == iota over classes), as F.one_hot / XLA lower it.
  int hit = g.ew(EwOp::kCmpEq, g.broadcast(labels, shape, {0}), g.iota(shape, 1, DType::kS32), name + ".one_hot");
  int picked = g.reduce(g.ew(EwOp::kMul, logp, g.convert(hit, t), name + ".pick"), 1, ReduceOp::kSum);
  int nll = g.ew(EwOp::kNeg, picked, -1, name + ".nll");
  if (weights < 0) {
    int total = g.reduce(nll, 0, ReduceOp::kSum);
    return g.ew(EwOp::kMul, total, g.constant(1.0 / double(n), t), name);
  }
  if (g.node(weights).dtype != t) weights = g.convert(weights, t);
  int num = g.reduce(g.ew(EwOp::kMul, nll, weights, name + ".weighted"), 0, ReduceOp::kSum);
  // + 1e-5 as in BERT's reference pre-training code: a batch may have no masked positions.
  int den = g.ew(EwOp::kAdd, g.reduce(weights, 0, ReduceOp::kSum), g.constant(1e-5, t), name + ".denominator");
  return g.ew(EwOp::kDiv, num, den, name);
}

int mse_loss(Graph& g, int pred, int target, const std::string& name) {
  const DType t = g.node(pred).dtype;
  if (g.node(target).dtype != t) target = g.convert(target, t);
  int d = g.ew(EwOp::kSub, pred, target, name + ".diff");
  int total = g.reduce(g.ew(EwOp::kMul, d, d, name + ".square"), 0, ReduceOp::kSum);
  return g.ew(EwOp::kMul, total, g.constant(1.0 / double(g.node(pred).shape.at(0)), t), name);
}

}  // namespace tpusim::models
