// Activation recomputation (models/recompute.h): the rewritten graph computes the same gradients,
// and its backward reads no activation inside a checkpointed layer, only the layers' inputs and
// outputs (and parameters).
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "models/bert.h"
#include "models/families.h"
#include "models/recompute.h"
#include "tests/models/graph_eval.h"

namespace tpusim::models {
namespace {

TEST(Recompute, SameGradientsFromLayerInputsOnly) {
  ModelArch cfg = find_preset("bert-tiny");
  cfg.layers = 2;
  cfg.hidden = 8;
  cfg.heads = 2;
  cfg.intermediate = 16;
  cfg.vocab = 11;
  cfg.max_position = 8;
  BertGraphOptions o;
  o.batch = 2;
  o.seq = 4;
  BertGraph fwd = build_bert(cfg, o);
  Graph& g = fwd.graph;
  const int last_forward = int(g.nodes().size()) - 1;
  const Gradients grads = build_backward(g, fwd.loss, fwd.params);
  for (int gr : grads.grads) g.mark_output(gr);
  std::vector<ModuleRange> layers;
  for (const auto& u : fwd.units)
    if (u.name.rfind("bert.encoder.layer.", 0) == 0) layers.push_back(u);
  ASSERT_EQ(layers.size(), 2u);
  const Recomputed r = recompute_in_backward(g, last_forward, layers);
  EXPECT_GT(r.recomputed_nodes, 0u);

  // Values: parameters a smooth pattern, token ids and labels small integers, the mask all ones.
  std::map<int, test::Tensor> in, in_r;
  for (const auto& n : g.nodes()) {
    if (n.kind != OpKind::kParameter) continue;
    test::Tensor t{n.shape, std::vector<double>(size_t(num_elements(n.shape)))};
    for (size_t i = 0; i < t.v.size(); ++i)
      t.v[i] = n.dtype == DType::kS32 ? double((i * 7 + n.id) % (n.name == "attention_mask" ? 1 : 2)) +
                                            (n.name == "attention_mask" ? 1 : 0)
                                      : 0.1 * std::sin(0.7 * double(i) + double(n.id));
    in[n.id] = t;
    in_r[r.new_id[n.id]] = t;
  }
  const auto a = test::evaluate(g, in);
  const auto b = test::evaluate(r.graph, in_r);
  for (int gr : grads.grads) {
    const auto& x = a[gr].v;
    const auto& y = b[r.new_id[gr]].v;
    ASSERT_EQ(x.size(), y.size());
    for (size_t i = 0; i < x.size(); ++i) EXPECT_DOUBLE_EQ(x[i], y[i]) << g.node(gr).name;
  }
  // The backward (outside the clones) reads, from inside a layer's forward range, only parameters,
  // constants and values the forward reads outside the layer (its output).
  for (const auto& l : layers) {
    std::set<int> read_outside;
    for (int v = 0; v <= last_forward; ++v)
      if (v < l.first || v > l.last)
        for (int x : r.graph.node(v).inputs) read_outside.insert(x);
    for (size_t v = size_t(last_forward) + 1; v < r.graph.nodes().size(); ++v) {
      if (r.module_of[v] >= 0) continue;
      for (int x : r.graph.node(int(v)).inputs) {
        if (x < l.first || x > l.last) continue;
        const OpKind k = r.graph.node(x).kind;
        EXPECT_TRUE(k == OpKind::kParameter || k == OpKind::kConstant || read_outside.count(x))
            << r.graph.node(int(v)).name << " reads " << r.graph.node(x).name;
      }
    }
  }
}

}  // namespace
}  // namespace tpusim::models
