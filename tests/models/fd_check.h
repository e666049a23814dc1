// Finite-difference check of build_backward's gradients with the reference evaluator.
#pragma once
#include <gtest/gtest.h>

#include <random>

#include "models/autodiff.h"
#include "tests/models/graph_eval.h"

namespace tpusim::test {

// Random values for every Parameter without one in `fixed`: normal(0, scale) for floats.
inline std::map<int, Tensor> random_inputs(const models::Graph& g, std::map<int, Tensor> fixed, uint32_t seed,
                                           double scale = 0.5) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, scale);
  for (const auto& n : g.nodes()) {
    if (n.kind != models::OpKind::kParameter || fixed.count(n.id)) continue;
    if (!models::is_float(n.dtype)) throw std::runtime_error("random_inputs: give integer input " + n.name);
    Tensor t{n.shape, std::vector<double>(size_t(models::num_elements(n.shape)))};
    for (double& x : t.v) x = normal(rng);
    fixed[n.id] = std::move(t);
  }
  return fixed;
}

// Compares each gradient element (up to `per_param` of each parameter) with a central difference.
inline void expect_gradients_match(const models::Graph& g, int loss, const models::Gradients& grads,
                                   const std::map<int, Tensor>& inputs, int per_param = 1 << 30) {
  const auto base = evaluate(g, inputs);
  const double h = 1e-5;
  for (size_t i = 0; i < grads.params.size(); ++i) {
    const int p = grads.params[i];
    const auto& analytic = base[grads.grads[i]];
    ASSERT_EQ(analytic.shape, g.node(p).shape) << g.node(p).name;
    const int64_t n = int64_t(analytic.v.size());
    const int64_t stride = std::max<int64_t>(1, n / per_param);
    for (int64_t e = 0; e < n; e += stride) {
      auto in = inputs;
      in[p].v[e] += h;
      const double up = evaluate(g, in, loss)[loss].v[0];
      in[p].v[e] -= 2 * h;
      const double down = evaluate(g, in, loss)[loss].v[0];
      const double fd = (up - down) / (2 * h);
      const double an = analytic.v[e];
      EXPECT_NEAR(an, fd, 1e-6 + 1e-5 * std::max(std::abs(an), std::abs(fd)))
          << g.node(p).name << "[" << e << "]";
    }
  }
}

}  // namespace tpusim::test
