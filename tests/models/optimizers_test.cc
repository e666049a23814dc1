// Optimizers: state tensors and bytes per parameter, outputs and donations, and the update values
// against torch.optim's formulas (reference evaluator).
#include <gtest/gtest.h>

#include <cmath>

#include "base/config_error.h"
#include "models/bert.h"
#include "models/families.h"
#include "models/losses.h"
#include "tests/models/graph_eval.h"

namespace tpusim::models {
namespace {

int count_role(const Graph& g, ParamRole r) {
  int n = 0;
  for (const auto& node : g.nodes()) n += node.kind == OpKind::kParameter && node.role == r;
  return n;
}

BertTrainingStep tiny_step(const OptimizerConfig& opt, DType t = DType::kF32) {
  return build_training_step(find_preset("bert-tiny"), {.batch = 2, .seq = 16, .dtype = t}, opt);
}

TEST(Optimizers, AdamWKeepsTwoMomentsPerParameter) {
  BertTrainingStep s = tiny_step(OptimizerConfig{});
  const Graph& g = s.model.graph;
  const uint64_t params = count_parameters(g);
  const int tensors = int(s.model.params.size());
  EXPECT_EQ(count_role(g, ParamRole::kOptimizerState), 2 * tensors);
  for (const auto& u : s.optimizer.updates) {
    ASSERT_EQ(u.state.size(), 2u);
    for (int st : u.state) {
      EXPECT_EQ(g.node(st).shape, g.node(u.param).shape);
      EXPECT_EQ(g.node(st).dtype, DType::kF32);
    }
  }
  EXPECT_EQ(s.optimizer.state_bytes, 8 * params);  // two fp32 moments: 8 B/param
  // Every parameter and moment is replaced by an output of the same shape (donated in place).
  EXPECT_EQ(s.optimizer.donated.size(), size_t(3 * tensors));
  for (const auto& [in, out] : s.optimizer.donated) {
    EXPECT_EQ(g.node(in).shape, g.node(out).shape);
    EXPECT_EQ(g.node(in).dtype, g.node(out).dtype);
    EXPECT_NE(std::find(g.outputs().begin(), g.outputs().end(), out), g.outputs().end());
  }
  EXPECT_EQ(g.outputs().size(), size_t(1 + 3 * tensors));  // + the loss
}

// torch.optim creates the state on the first step: zeros in the graph, no state inputs to donate.
TEST(Optimizers, FirstStepCreatesTheState) {
  BertTrainingStep s = tiny_step({.first_step = true});
  const Graph& g = s.model.graph;
  const int tensors = int(s.model.params.size());
  EXPECT_EQ(count_role(g, ParamRole::kOptimizerState), 0);
  EXPECT_EQ(s.optimizer.state_bytes, 8 * count_parameters(g));
  EXPECT_EQ(s.optimizer.donated.size(), size_t(tensors));
  EXPECT_EQ(g.outputs().size(), size_t(1 + 3 * tensors));
  for (const auto& u : s.optimizer.updates)
    for (int st : u.state) EXPECT_EQ(g.node(st).kind, OpKind::kBroadcast);
}

TEST(Optimizers, Bf16StateHalvesTheBytes) {
  OptimizerConfig opt;
  opt.state_dtype = DType::kBF16;  // XLA_USE_BF16=1
  BertTrainingStep s = tiny_step(opt, DType::kBF16);
  EXPECT_EQ(s.optimizer.state_bytes, 4 * count_parameters(s.model.graph));
  for (const auto& u : s.optimizer.updates) EXPECT_EQ(s.model.graph.node(u.updated).dtype, DType::kBF16);
}

TEST(Optimizers, SgdAndLambState) {
  OptimizerConfig sgd{.kind = OptimizerKind::kSgd};
  EXPECT_EQ(count_role(tiny_step(sgd).model.graph, ParamRole::kOptimizerState), 0);
  sgd.momentum = 0.9;
  BertTrainingStep m = tiny_step(sgd);
  EXPECT_EQ(count_role(m.model.graph, ParamRole::kOptimizerState), int(m.model.params.size()));
  BertTrainingStep l = tiny_step({.kind = OptimizerKind::kLamb});
  EXPECT_EQ(count_role(l.model.graph, ParamRole::kOptimizerState), 2 * int(l.model.params.size()));
  EXPECT_EQ(l.optimizer.state_bytes, 8 * count_parameters(l.model.graph));
}

TEST(Optimizers, NamesResolveAndUnknownIsAnError) {
  EXPECT_EQ(optimizer_from_name("lamb"), OptimizerKind::kLamb);
  try {
    optimizer_from_name("adamW");
    FAIL();
  } catch (const ConfigError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("adamw, sgd, lamb, adafactor"), std::string::npos) << msg;
    EXPECT_NE(msg.find("did you mean 'adamw'"), std::string::npos) << msg;
  }
}

// One parameter w [3] (and a bias b [3], which gets no weight decay), loss = sum(w*x + b):
// the updated values follow torch.optim.AdamW / SGD / LAMB step by step.
struct Tiny {
  Graph g;
  int w, b, x, loss;
  Gradients grads;
  Tiny() {
    w = g.parameter("layer.weight", {3}, DType::kF32, ParamRole::kTrainable);
    b = g.parameter("layer.bias", {3}, DType::kF32, ParamRole::kTrainable);
    x = g.parameter("x", {3}, DType::kF32);
    loss = reduce_all(g, g.ew(EwOp::kAdd, g.ew(EwOp::kMul, w, x, "wx"), b, "plus_b"));
    grads = build_backward(g, loss, {w, b});
  }
};

TEST(Optimizers, AdamWValues) {
  Tiny t;
  const OptimizerConfig cfg{.weight_decay = 0.1};
  OptimizerGraph o = append_optimizer(t.g, t.grads, cfg);
  const double lr = 0.01, b1 = 0.9, b2 = 0.999, step = 3;
  const double bc1 = 1 - std::pow(b1, step), bc2 = 1 - std::pow(b2, step);
  std::map<int, test::Tensor> in = {{t.w, {{3}, {0.5, -1, 2}}}, {t.b, {{3}, {0.1, 0.2, 0.3}}}, {t.x, {{3}, {1, 2, -3}}}};
  for (const auto& u : o.updates)
    for (size_t i = 0; i < 2; ++i) in[u.state[i]] = {{3}, i == 0 ? std::vector<double>{0.1, 0, -0.2} : std::vector<double>{0.01, 0.02, 0.03}};
  for (int sc : o.scalars) {
    const std::string& n = t.g.node(sc).name;
    in[sc] = {{}, {n == "optimizer.lr" ? lr : n == "optimizer.step_size" ? lr / bc1 : std::sqrt(bc2)}};
  }
  const auto val = test::evaluate(t.g, in);
  for (const auto& u : o.updates) {
    const bool decay = u.param == t.w;
    for (int i = 0; i < 3; ++i) {
      const double g = decay ? in[t.x].v[i] : 1.0, p = in[u.param].v[i];
      const double m = b1 * in[u.state[0]].v[i] + (1 - b1) * g;
      const double v = b2 * in[u.state[1]].v[i] + (1 - b2) * g * g;
      const double expect = p * (1 - lr * (decay ? 0.1 : 0)) - lr / bc1 * m / (std::sqrt(v) / std::sqrt(bc2) + 1e-8);
      EXPECT_NEAR(val[u.updated].v[i], expect, 1e-12);
      EXPECT_NEAR(val[u.updated_state[0]].v[i], m, 1e-12);
      EXPECT_NEAR(val[u.updated_state[1]].v[i], v, 1e-12);
    }
  }
}

TEST(Optimizers, SgdNesterovAndLambValues) {
  {
    Tiny t;
    OptimizerGraph o = append_optimizer(t.g, t.grads, {.kind = OptimizerKind::kSgd, .weight_decay = 0.1, .momentum = 0.9, .nesterov = true});
    std::map<int, test::Tensor> in = {{t.w, {{3}, {0.5, -1, 2}}}, {t.b, {{3}, {0.1, 0.2, 0.3}}}, {t.x, {{3}, {1, 2, -3}}}};
    for (const auto& u : o.updates) in[u.state[0]] = {{3}, {0.3, -0.1, 0.2}};
    in[o.scalars.at(0)] = {{}, {0.05}};
    const auto val = test::evaluate(t.g, in);
    const auto& u = o.updates[0];  // w: decayed
    for (int i = 0; i < 3; ++i) {
      const double d = in[t.x].v[i] + 0.1 * in[t.w].v[i];
      const double buf = 0.9 * in[u.state[0]].v[i] + d;
      EXPECT_NEAR(val[u.updated].v[i], in[t.w].v[i] - 0.05 * (d + 0.9 * buf), 1e-12);
    }
  }
  {
    Tiny t;
    OptimizerGraph o = append_optimizer(t.g, t.grads, {.kind = OptimizerKind::kLamb, .weight_decay = 0.01});
    std::map<int, test::Tensor> in = {{t.w, {{3}, {0.5, -1, 2}}}, {t.b, {{3}, {0.1, 0.2, 0.3}}}, {t.x, {{3}, {1, 2, -3}}}};
    for (const auto& u : o.updates)
      for (int st : u.state) in[st] = {{3}, {0, 0, 0}};
    const double lr = 0.002, bc1 = 0.1, bc2 = 1 - 0.999;  // step 1
    for (int sc : o.scalars) {
      const std::string& n = t.g.node(sc).name;
      in[sc] = {{}, {n == "optimizer.lr" ? lr : n == "optimizer.bias_correction1" ? bc1 : std::sqrt(bc2)}};
    }
    const auto val = test::evaluate(t.g, in);
    const auto& u = o.updates[0];
    std::vector<double> r(3);
    double pn = 0, rn = 0;
    for (int i = 0; i < 3; ++i) {
      const double g = in[t.x].v[i];
      const double m = 0.1 * g / bc1, v = 0.001 * g * g;
      r[i] = m / (std::sqrt(v) / std::sqrt(bc2) + 1e-8) + 0.01 * in[t.w].v[i];
      pn += in[t.w].v[i] * in[t.w].v[i];
      rn += r[i] * r[i];
    }
    const double trust = std::sqrt(pn) / std::sqrt(rn);
    for (int i = 0; i < 3; ++i) EXPECT_NEAR(val[u.updated].v[i], in[t.w].v[i] - lr * trust * r[i], 1e-12);
  }
}

TEST(Optimizers, GradientClippingScalesEveryGradient) {
  Tiny t;
  OptimizerGraph o = append_optimizer(t.g, t.grads, {.kind = OptimizerKind::kSgd, .weight_decay = 0, .max_grad_norm = 1.0});
  std::map<int, test::Tensor> in = {{t.w, {{3}, {0.5, -1, 2}}}, {t.b, {{3}, {0.1, 0.2, 0.3}}}, {t.x, {{3}, {1, 2, -3}}}};
  in[o.scalars.at(0)] = {{}, {1.0}};
  const auto val = test::evaluate(t.g, in);
  const double norm = std::sqrt(1 + 4 + 9 + 3);  // grads: x for w, ones for b
  const double coef = 1.0 / (norm + 1e-6);
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(val[o.updates[0].updated].v[i], in[t.w].v[i] - coef * in[t.x].v[i], 1e-12);
    EXPECT_NEAR(val[o.updates[1].updated].v[i], in[t.b].v[i] - coef, 1e-12);
  }
}

// Adafactor keeps, per 2-D weight [r, c], a row vector [r] and a column vector [c] instead of
// AdamW's two full moments; per 1-D parameter one full second moment. BERT-base (cased,
// sequence classification, 2 labels), counted from its shapes.
TEST(Optimizers, AdafactorStateOfBertBase) {
  const ModelArch cfg = find_preset("bert-base-cased");
  const OptimizerConfig ada{.kind = OptimizerKind::kAdafactor};
  BertTrainingStep s = build_training_step(cfg, {.batch = 1, .seq = 8}, ada);
  const uint64_t V = cfg.vocab, P = cfg.max_position, T = cfg.type_vocab, H = cfg.hidden, I = cfg.intermediate,
                 L = cfg.layers, C = 2;
  // 2-D weights: rows + cols. Embeddings [V,H], [P,H], [T,H]; per layer q,k,v,o [H,H], FFN in
  // [I,H] and out [H,I]; pooler [H,H]; classifier [C,H].
  const uint64_t factored = (V + H) + (P + H) + (T + H) + L * (4 * (H + H) + (I + H) + (H + I)) + (H + H) + (C + H);
  // 1-D: embedding LayerNorm (2H); per layer 4 biases H, FFN biases I + H, two LayerNorms 4H; pooler
  // bias H; classifier bias C.
  const uint64_t full = 2 * H + L * (4 * H + I + H + 4 * H) + H + C;
  EXPECT_EQ(s.optimizer.state_bytes, 4 * (factored + full));
  EXPECT_EQ(s.optimizer.state_bytes, 322'122u * 4);  // 1.3 MB, vs AdamW's 8 B/param (867 MB) below
  const uint64_t params = count_parameters(s.model.graph);
  EXPECT_EQ(params, 108'311'810u);
  EXPECT_EQ(build_training_step(cfg, {.batch = 1, .seq = 8}, OptimizerConfig{}).optimizer.state_bytes, 8 * params);
  for (const auto& u : s.optimizer.updates) {
    const size_t rank = s.model.graph.node(u.param).shape.size();
    EXPECT_EQ(u.state.size(), rank >= 2 ? 2u : 1u);
    EXPECT_GE(u.rms, 0);
  }
}

// Adafactor's update on a 2-D weight [2, 3] and a 1-D bias [3], against transformers' step with
// scale_parameter=False, relative_step=False, beta1=None, weight decay on the weight only.
TEST(Optimizers, AdafactorValues) {
  Graph g;
  const int w = g.parameter("layer.weight", {2, 3}, DType::kF32, ParamRole::kTrainable);
  const int b = g.parameter("layer.bias", {3}, DType::kF32, ParamRole::kTrainable);
  const int x = g.parameter("x", {2, 3}, DType::kF32);
  // loss = sum(w * x * x) + sum(b * b): grads 2 * ... differ per element (g_w = x^2, g_b = 2b)
  const int wx = g.ew(EwOp::kMul, g.ew(EwOp::kMul, w, x, "wx"), x, "wxx");
  const int loss = g.ew(EwOp::kAdd, reduce_all(g, wx), reduce_all(g, g.ew(EwOp::kMul, b, b, "bb")), "loss");
  Gradients grads = build_backward(g, loss, {w, b});
  const OptimizerConfig cfg{.kind = OptimizerKind::kAdafactor, .clip_threshold = 1.0, .weight_decay = 0.1};
  OptimizerGraph o = append_optimizer(g, grads, cfg);
  const double lr = 0.05, t = 3, beta2t = 1 - std::pow(t, -0.8);
  std::map<int, test::Tensor> in = {{w, {{2, 3}, {0.5, -1, 2, 0.3, 0.7, -0.4}}},
                                    {b, {{3}, {0.1, -0.2, 0.3}}},
                                    {x, {{2, 3}, {1, 2, -3, 0.5, -1, 1.5}}}};
  const auto& uw = o.updates.at(0);
  const auto& ub = o.updates.at(1);
  ASSERT_EQ(uw.state.size(), 2u);
  ASSERT_EQ(ub.state.size(), 1u);
  in[uw.state[0]] = {{2}, {0.2, 0.5}};
  in[uw.state[1]] = {{3}, {0.1, 0.3, 0.6}};
  in[ub.state[0]] = {{3}, {0.01, 0.02, 0.03}};
  for (int sc : o.scalars) {
    const std::string& n = g.node(sc).name;
    in[sc] = {{}, {n == "optimizer.lr" ? lr : n == "optimizer.beta2t" ? beta2t : 1 - beta2t}};
  }
  const auto val = test::evaluate(g, in);
  auto clip_lr = [&](std::vector<double> u) {
    double ss = 0;
    for (double v : u) ss += v * v;
    const double div = std::max(std::sqrt(ss / double(u.size())) / 1.0, 1.0);
    for (double& v : u) v = v / div * lr;
    return u;
  };
  {  // weight: factored
    std::vector<double> gr(6), sq(6);
    for (int i = 0; i < 6; ++i) gr[i] = in[x].v[i] * in[x].v[i], sq[i] = gr[i] * gr[i] + 1e-30;
    std::vector<double> row(2), col(3);
    for (int r = 0; r < 2; ++r)
      row[r] = beta2t * in[uw.state[0]].v[r] + (1 - beta2t) * (sq[r * 3] + sq[r * 3 + 1] + sq[r * 3 + 2]) / 3;
    for (int c = 0; c < 3; ++c) col[c] = beta2t * in[uw.state[1]].v[c] + (1 - beta2t) * (sq[c] + sq[3 + c]) / 2;
    const double rmean = (row[0] + row[1]) / 2;
    std::vector<double> u(6);
    for (int r = 0; r < 2; ++r)
      for (int c = 0; c < 3; ++c) u[r * 3 + c] = gr[r * 3 + c] / std::sqrt(row[r] / rmean) / std::sqrt(col[c]);
    u = clip_lr(u);
    for (int i = 0; i < 6; ++i) EXPECT_NEAR(val[uw.updated].v[i], in[w].v[i] * (1 - 0.1 * lr) - u[i], 1e-12) << i;
    for (int r = 0; r < 2; ++r) EXPECT_NEAR(val[uw.updated_state[0]].v[r], row[r], 1e-12);
    for (int c = 0; c < 3; ++c) EXPECT_NEAR(val[uw.updated_state[1]].v[c], col[c], 1e-12);
    double pss = 0;
    for (double v : in[w].v) pss += v * v;
    EXPECT_NEAR(val[uw.rms].v[0], std::sqrt(pss / 6), 1e-12);
  }
  {  // bias: full second moment, no weight decay
    std::vector<double> u(3), v(3);
    for (int i = 0; i < 3; ++i) {
      const double gr = 2 * in[b].v[i];
      v[i] = beta2t * in[ub.state[0]].v[i] + (1 - beta2t) * (gr * gr + 1e-30);
      u[i] = gr / std::sqrt(v[i]);
    }
    u = clip_lr(u);
    for (int i = 0; i < 3; ++i) {
      EXPECT_NEAR(val[ub.updated].v[i], in[b].v[i] - u[i], 1e-12) << i;
      EXPECT_NEAR(val[ub.updated_state[0]].v[i], v[i], 1e-12);
    }
  }
}

}  // namespace
}  // namespace tpusim::models
