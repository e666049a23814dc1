// The shared graph pieces of models/layers.h whose closed forms the family tests do not already
// cover: RMSNorm and SiLU, their values against the formula and their gradients by finite differences.
#include <gtest/gtest.h>

#include <cmath>

#include "models/autodiff.h"
#include "models/layers.h"
#include "models/losses.h"
#include "tests/models/fd_check.h"

namespace tpusim::models {
namespace {

struct Built {
  Graph g;
  std::vector<int> params, inputs;
  DotPrecision precision = DotPrecision::kDefault;
  layers::LayerContext cx{g, params, inputs, DType::kF32, std::nullopt, precision, true};
};

TEST(Layers, RmsNormValueAndGradient) {
  Built b;
  int x = b.g.parameter("x", {3, 5}, DType::kF32, ParamRole::kTrainable);
  int y = layers::rms_norm(b.cx, x, 1e-6, "norm");
  ASSERT_EQ(b.params.size(), 1u);  // the weight only: no bias
  EXPECT_EQ(b.g.node(b.params[0]).shape, (Dims{5}));
  auto in = test::random_inputs(b.g, {}, 7);
  const auto v = test::evaluate(b.g, in);
  for (int r = 0; r < 3; ++r) {
    double ms = 0;
    for (int c = 0; c < 5; ++c) ms += in[x].v[r * 5 + c] * in[x].v[r * 5 + c] / 5;
    for (int c = 0; c < 5; ++c)
      EXPECT_NEAR(v[y].v[r * 5 + c], in[x].v[r * 5 + c] / std::sqrt(ms + 1e-6) * in[b.params[0]].v[c], 1e-12);
  }
  int loss = reduce_all(b.g, b.g.ew(EwOp::kMul, y, y, "sq"));
  Gradients gr = build_backward(b.g, loss, {x, b.params[0]});
  test::expect_gradients_match(b.g, loss, gr, test::random_inputs(b.g, {}, 8));
}

TEST(Layers, SiluValueAndGradient) {
  Built b;
  int x = b.g.parameter("x", {4, 3}, DType::kF32, ParamRole::kTrainable);
  int y = layers::silu(b.cx, x, "act");
  auto in = test::random_inputs(b.g, {}, 9, 2.0);
  const auto v = test::evaluate(b.g, in);
  for (size_t i = 0; i < in[x].v.size(); ++i) {
    const double t = in[x].v[i];
    EXPECT_NEAR(v[y].v[i], t / (1 + std::exp(-t)), 1e-12);
  }
  int loss = reduce_all(b.g, b.g.ew(EwOp::kMul, y, y, "sq"));
  Gradients gr = build_backward(b.g, loss, {x});
  test::expect_gradients_match(b.g, loss, gr, test::random_inputs(b.g, {}, 10, 2.0));
}

}  // namespace
}  // namespace tpusim::models
