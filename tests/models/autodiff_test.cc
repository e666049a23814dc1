// Autodiff: op structure and shapes on small graphs, and every VJP rule against central finite
// differences (reference evaluator in double precision).
#include <gtest/gtest.h>

#include "models/autodiff.h"
#include "models/losses.h"
#include "tests/models/fd_check.h"

namespace tpusim::models {
namespace {

using test::Tensor;

int count_kind(const Graph& g, OpKind k, int from = 0) {
  int n = 0;
  for (const auto& node : g.nodes())
    if (node.id >= from && node.kind == k) ++n;
  return n;
}

// y = sum((x W + b)^2) with x an input [4, 3], W [3, 5] and b [5] trainable.
TEST(Autodiff, LinearSquaredSumStructure) {
  Graph g;
  int x = g.parameter("x", {4, 3}, DType::kF32);
  int w = g.parameter("w", {3, 5}, DType::kF32, ParamRole::kTrainable);
  int b = g.parameter("b", {5}, DType::kF32, ParamRole::kTrainable);
  int y = g.ew_bcast(EwOp::kAdd, g.dot(x, w, {{}, {}, {1}, {0}}, DotPrecision::kDefault, "xw"), b, {1}, "bias");
  int loss = reduce_all(g, g.ew(EwOp::kMul, y, y, "square"));
  const int forward_nodes = int(g.nodes().size());
  Gradients gr = build_backward(g, loss, {w, b});
  ASSERT_EQ(gr.grads.size(), 2u);
  EXPECT_EQ(g.node(gr.of(w)).shape, (Dims{3, 5}));
  EXPECT_EQ(g.node(gr.of(b)).shape, (Dims{5}));
  // x is not differentiated: exactly one backward dot, dW = dot(x, G) contracting the rows; this
  // operand order yields W's [3, 5] layout directly (no transpose).
  ASSERT_EQ(count_kind(g, OpKind::kDot, forward_nodes), 1);
  EXPECT_EQ(count_kind(g, OpKind::kTranspose, forward_nodes), 0);
  const Node& dw = g.node(gr.of(w));
  ASSERT_EQ(dw.kind, OpKind::kDot);
  EXPECT_EQ(dw.name, "xw.grad_rhs");
  EXPECT_EQ(dw.inputs[0], x);
  EXPECT_EQ(dw.dot.lhs_contract, (std::vector<int>{0}));
  EXPECT_EQ(dw.dot.rhs_contract, (std::vector<int>{0}));
  // db: the broadcast's VJP, a row reduction of dy = 2 y (the square's two uses accumulate with an add).
  const Node& db = g.node(gr.of(b));
  EXPECT_EQ(db.kind, OpKind::kReduce);
  EXPECT_EQ(db.reduce_dim, 0);
  const Node& dy = g.node(db.inputs[0]);
  EXPECT_EQ(dy.kind, OpKind::kElementwise);
  EXPECT_EQ(dy.ew, EwOp::kAdd);
  EXPECT_EQ(dw.inputs[1], db.inputs[0]);

  test::expect_gradients_match(g, loss, gr, test::random_inputs(g, {}, 1));
}

TEST(Autodiff, InputGradientAndUnusedParameter) {
  Graph g;
  int x = g.parameter("x", {2, 3}, DType::kF32, ParamRole::kTrainable);
  int unused = g.parameter("unused", {7}, DType::kF32, ParamRole::kTrainable);
  int w = g.parameter("w", {4, 3}, DType::kF32, ParamRole::kTrainable);
  int loss = reduce_all(g, g.ew(EwOp::kTanh, g.dot(x, w, {{}, {}, {1}, {1}}, DotPrecision::kDefault, "xwT"), -1, "tanh"));
  Gradients gr = build_backward(g, loss, {x, unused, w});
  EXPECT_EQ(g.node(gr.of(x)).shape, (Dims{2, 3}));
  EXPECT_EQ(g.node(gr.of(w)).shape, (Dims{4, 3}));
  EXPECT_EQ(g.node(gr.of(unused)).kind, OpKind::kBroadcast);  // zeros
  test::expect_gradients_match(g, loss, gr, test::random_inputs(g, {}, 2));
}

// Attention-shaped batched dots whose VJPs need transposes back to the operand layouts.
TEST(Autodiff, BatchedDotsSoftmaxTranspose) {
  Graph g;
  const Dims shp = {2, 3, 2, 4};  // [B, S, heads, d]
  int q = g.parameter("q", shp, DType::kF32, ParamRole::kTrainable);
  int k = g.parameter("k", shp, DType::kF32, ParamRole::kTrainable);
  int v = g.parameter("v", shp, DType::kF32, ParamRole::kTrainable);
  int s = g.dot(q, k, {{0, 2}, {0, 2}, {3}, {3}}, DotPrecision::kDefault, "scores");  // [B, h, S, S]
  int p = stable_softmax(g, s, 3, "softmax");
  int ctx = g.dot(p, v, {{0, 1}, {0, 2}, {3}, {1}}, DotPrecision::kDefault, "context");  // [B, h, S, d]
  int t = g.reshape(g.transpose(ctx, {0, 2, 1, 3}), {6, 8});
  int w = g.parameter("w", {8}, DType::kF32, ParamRole::kTrainable);
  int loss = reduce_all(g, g.ew(EwOp::kMul, t, g.broadcast(w, {6, 8}, {1}), "weighted"));
  Gradients gr = build_backward(g, loss, {q, k, v, w});
  for (int prm : {q, k, v}) EXPECT_EQ(g.node(gr.of(prm)).shape, shp);
  EXPECT_GT(count_kind(g, OpKind::kTranspose), 1);  // dq, dk, dv come out as [B, h, S, d]
  test::expect_gradients_match(g, loss, gr, test::random_inputs(g, {}, 3));
}

// Unary and binary element-wise rules, reduce-max (without stop_gradient), a transposing broadcast.
TEST(Autodiff, ElementwiseReduceMaxBroadcastRules) {
  Graph g;
  int a = g.parameter("a", {3, 4}, DType::kF32, ParamRole::kTrainable);
  int b = g.parameter("b", {3, 4}, DType::kF32, ParamRole::kTrainable);
  int c = g.parameter("c", {4, 3}, DType::kF32, ParamRole::kTrainable);
  auto ew = [&](EwOp op, int x, int y = -1) { return g.ew(op, x, y, "op"); };
  int pos = ew(EwOp::kAdd, ew(EwOp::kExp, a), g.constant(0.5, DType::kF32));  // > 0
  int t1 = ew(EwOp::kLog, pos);
  int t2 = ew(EwOp::kMul, ew(EwOp::kSqrt, pos), ew(EwOp::kRsqrt, ew(EwOp::kAdd, ew(EwOp::kMul, b, b), pos)));
  int t3 = ew(EwOp::kDiv, ew(EwOp::kErf, b), pos);
  int t4 = ew(EwOp::kMax, a, b);
  int t5 = ew(EwOp::kRelu, ew(EwOp::kSub, a, b));
  int t6 = ew(EwOp::kNeg, ew(EwOp::kTanh, ew(EwOp::kMax, b, g.constant(0.1, DType::kF32))));
  // broadcast c [4, 3] to [3, 2, 4] with dims {2, 0}: its VJP reduces and transposes back.
  int cb = g.broadcast(c, {3, 2, 4}, {2, 0});
  int red = g.reduce(cb, 1, ReduceOp::kSum);  // [3, 4]
  int sum = ew(EwOp::kAdd, ew(EwOp::kAdd, ew(EwOp::kAdd, t1, t2), ew(EwOp::kAdd, t3, t4)), ew(EwOp::kAdd, t5, t6));
  sum = ew(EwOp::kMul, sum, red);
  int mx = g.reduce(sum, 1, ReduceOp::kMax);  // gradient through the arg-max
  int loss = reduce_all(g, ew(EwOp::kMul, mx, mx));
  Gradients gr = build_backward(g, loss, {a, b, c});
  EXPECT_EQ(g.node(gr.of(c)).shape, (Dims{4, 3}));
  bool has_cmp_eq = false;
  for (const auto& n : g.nodes()) has_cmp_eq = has_cmp_eq || (n.kind == OpKind::kElementwise && n.ew == EwOp::kCmpEq);
  EXPECT_TRUE(has_cmp_eq);
  test::expect_gradients_match(g, loss, gr, test::random_inputs(g, {}, 4));
}

// Embedding lookup: gather's VJP is a scatter-add into the table (repeated ids accumulate).
TEST(Autodiff, GatherScatterAdd) {
  Graph g;
  int table = g.parameter("table", {5, 3}, DType::kF32, ParamRole::kTrainable);
  int ids = g.parameter("ids", {2, 3}, DType::kS32);
  int e = g.gather(table, ids);  // [2, 3, 3]
  int w = g.parameter("w", {2, 3, 3}, DType::kF32, ParamRole::kTrainable);
  int loss = reduce_all(g, g.ew(EwOp::kMul, g.ew(EwOp::kMul, e, e, "sq"), w, "weighted"));
  Gradients gr = build_backward(g, loss, {table, w});
  const Node& dt = g.node(gr.of(table));
  EXPECT_EQ(dt.kind, OpKind::kScatterAdd);
  EXPECT_EQ(dt.shape, (Dims{5, 3}));
  std::map<int, Tensor> in = {{ids, Tensor{{2, 3}, {0, 4, 4, 2, 0, 1}}}};
  test::expect_gradients_match(g, loss, gr, test::random_inputs(g, in, 5));
}

// Slice and concatenate: a slice's VJP puts the gradient in its range with zeros around it (a
// concatenate), a concatenate's gives each operand its range (slices); a major and a minor axis,
// rotate_half's pattern among them.
TEST(Autodiff, SliceConcatenate) {
  Graph g;
  int x = g.parameter("x", {3, 6}, DType::kF32, ParamRole::kTrainable);
  int y = g.parameter("y", {2, 6}, DType::kF32, ParamRole::kTrainable);
  int x1 = g.slice(x, 1, 0, 3), x2 = g.slice(x, 1, 3, 6);
  int rot = g.concatenate({g.ew(EwOp::kNeg, x2, -1, "neg"), x1}, 1);  // [3, 6]
  EXPECT_EQ(g.node(rot).shape, (Dims{3, 6}));
  int mid = g.slice(rot, 0, 1, 2);                                     // [1, 6]: zeros above and below
  int stacked = g.concatenate({y, mid, rot}, 0);                       // [6, 6]
  EXPECT_EQ(g.node(stacked).shape, (Dims{6, 6}));
  int w = g.parameter("w", {6, 6}, DType::kF32, ParamRole::kTrainable);
  int loss = reduce_all(g, g.ew(EwOp::kMul, g.ew(EwOp::kMul, stacked, stacked, "sq"), w, "weighted"));
  EXPECT_THROW(g.slice(x, 1, 4, 7), std::invalid_argument);
  EXPECT_THROW(g.concatenate({x, y}, 1), std::invalid_argument);
  Gradients gr = build_backward(g, loss, {x, y, w});
  EXPECT_EQ(g.node(gr.of(y)).kind, OpKind::kSlice);
  test::expect_gradients_match(g, loss, gr, test::random_inputs(g, {}, 9));
}

TEST(Autodiff, CrossEntropyWeighted) {
  Graph g;
  int logits = g.parameter("logits", {4, 6}, DType::kF32, ParamRole::kTrainable);
  int labels = g.parameter("labels", {4}, DType::kS32);
  int weights = g.parameter("weights", {4}, DType::kF32);
  int loss = cross_entropy(g, logits, labels, weights, "loss");
  EXPECT_TRUE(g.node(loss).shape.empty());
  Gradients gr = build_backward(g, loss, {logits});
  std::map<int, Tensor> in = {{labels, Tensor{{4}, {0, 5, 2, 2}}}, {weights, Tensor{{4}, {1, 1, 0, 1}}}};
  in = test::random_inputs(g, in, 6, 2.0);
  // The loss value itself: sum over weighted rows of -log_softmax[label] / (3 + 1e-5).
  const auto vals = test::evaluate(g, in);
  double expect = 0;
  for (int r : {0, 1, 3}) {
    double m = -1e300, s = 0;
    for (int j = 0; j < 6; ++j) m = std::max(m, in[logits].v[r * 6 + j]);
    for (int j = 0; j < 6; ++j) s += std::exp(in[logits].v[r * 6 + j] - m);
    expect -= in[logits].v[r * 6 + int(in[labels].v[r])] - m - std::log(s);
  }
  EXPECT_NEAR(vals[loss].v[0], expect / (3 + 1e-5), 1e-9);
  test::expect_gradients_match(g, loss, gr, in);
}

TEST(Autodiff, RejectsNonParameters) {
  Graph g;
  int x = g.parameter("x", {2}, DType::kF32, ParamRole::kTrainable);
  int y = g.ew(EwOp::kExp, x, -1, "exp");
  EXPECT_THROW(build_backward(g, y, {y}), std::invalid_argument);
}

}  // namespace
}  // namespace tpusim::models

namespace tpusim::models {
namespace {

// An all-gather's gradient is the reduce-scatter of the gathered value's gradient over the same
// groups and dimension (each replica's block is read by every replica of its group); an
// asynchronous one or another collective has none here.
TEST(Autodiff, AllGatherGradientIsAReduceScatter) {
  Graph g;
  const int x = g.parameter("x", {2, 3, 4}, DType::kF32, ParamRole::kTrainable);
  CollectiveAttrs a;
  a.op = CollectiveOp::kAllGather;
  a.replicas = 4;
  a.groups = {{0, 1}, {2, 3}};
  a.dim = 1;
  a.axis = MeshAxis::kSequence;
  const int y = g.collective(x, a, "gather");
  ASSERT_EQ(g.node(y).shape, (Dims{2, 6, 4}));
  int loss = g.ew(EwOp::kMul, y, y);
  for (int d = 2; d >= 0; --d) loss = g.reduce(loss, d, ReduceOp::kSum);
  const Gradients grads = build_backward(g, loss, {x});
  const Node& dx = g.node(grads.of(x));
  ASSERT_EQ(dx.kind, OpKind::kCollective);
  EXPECT_EQ(dx.collective.op, CollectiveOp::kReduceScatter);
  EXPECT_EQ(dx.collective.reduce, ReduceOp::kSum);
  EXPECT_EQ(dx.collective.groups, a.groups);
  EXPECT_EQ(dx.collective.dim, 1);
  EXPECT_EQ(dx.collective.axis, MeshAxis::kSequence);
  EXPECT_EQ(dx.shape, g.node(x).shape);

  Graph h;
  const int p = h.parameter("p", {4}, DType::kF32, ParamRole::kTrainable);
  CollectiveAttrs sum;
  sum.replicas = 2;
  const int r = h.reduce(h.collective(p, sum), 0, ReduceOp::kSum);
  EXPECT_THROW(build_backward(h, r, {p}), std::invalid_argument);
}

}  // namespace
}  // namespace tpusim::models
