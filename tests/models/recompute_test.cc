// Activation recomputation (models/recompute.h): the rewritten graph computes the same gradients,
// and its backward reads no activation inside a checkpointed layer, only the layers' inputs and
// outputs (and parameters).
#include <gtest/gtest.h>

#include <climits>
#include <cmath>
#include <map>
#include <set>

#include "models/bert.h"
#include "models/families.h"
#include "models/recompute.h"
#include "tests/models/graph_eval.h"

namespace tpusim::models {
namespace {

// A miniature BERT of `layers` encoder layers with its backward, every gradient an output.
struct TinyBert {
  BertGraph fwd;
  int last_forward = -1;
  Gradients grads;
  std::vector<ModuleRange> layers;
};
TinyBert tiny_bert(int layers) {
  ModelArch cfg = find_preset("bert-tiny");
  cfg.layers = layers;
  cfg.hidden = 8;
  cfg.heads = 2;
  cfg.intermediate = 16;
  cfg.vocab = 11;
  cfg.max_position = 8;
  BertGraphOptions o;
  o.batch = 2;
  o.seq = 4;
  TinyBert t;
  t.fwd = build_bert(cfg, o);
  Graph& g = t.fwd.graph;
  t.last_forward = int(g.nodes().size()) - 1;
  t.grads = build_backward(g, t.fwd.loss, t.fwd.params);
  for (int gr : t.grads.grads) g.mark_output(gr);
  for (const auto& u : t.fwd.units)
    if (u.name.rfind("bert.encoder.layer.", 0) == 0) t.layers.push_back(u);
  return t;
}

// The gradients of `t` and of its rewrite `r` are equal. Values: parameters a smooth pattern,
// token ids and labels small integers, the mask all ones.
void expect_same_gradients(const TinyBert& t, const Recomputed& r) {
  const Graph& g = t.fwd.graph;
  std::map<int, test::Tensor> in, in_r;
  for (const auto& n : g.nodes()) {
    if (n.kind != OpKind::kParameter) continue;
    test::Tensor x{n.shape, std::vector<double>(size_t(num_elements(n.shape)))};
    for (size_t i = 0; i < x.v.size(); ++i)
      x.v[i] = n.dtype == DType::kS32 ? double((i * 7 + n.id) % (n.name == "attention_mask" ? 1 : 2)) +
                                            (n.name == "attention_mask" ? 1 : 0)
                                      : 0.1 * std::sin(0.7 * double(i) + double(n.id));
    in[n.id] = x;
    in_r[r.new_id[n.id]] = x;
  }
  const auto a = test::evaluate(g, in);
  const auto b = test::evaluate(r.graph, in_r);
  for (int gr : t.grads.grads) {
    const auto& x = a[gr].v;
    const auto& y = b[r.new_id[gr]].v;
    ASSERT_EQ(x.size(), y.size());
    for (size_t i = 0; i < x.size(); ++i) EXPECT_DOUBLE_EQ(x[i], y[i]) << g.node(gr).name;
  }
}

TEST(Recompute, SameGradientsFromLayerInputsOnly) {
  const TinyBert t = tiny_bert(2);
  const Graph& g = t.fwd.graph;
  const int last_forward = t.last_forward;
  const std::vector<ModuleRange>& layers = t.layers;
  ASSERT_EQ(layers.size(), 2u);
  const Recomputed r = recompute_in_backward(g, last_forward, layers);
  EXPECT_GT(r.recomputed_nodes, 0u);
  expect_same_gradients(t, r);
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

// Host offload (RematSpec kOffload): every matmul output of the layers and each layer's input kept
// in host memory. The gradients are the same; each offloaded value is copied out once, its HBM
// buffer released (the copy's done) after its last forward reader, and copied back one layer ahead:
// a layer's values are back before the first recomputation of the layer after it (in backward
// order) begins; no backward node reads an offloaded value but through its copy back.
TEST(Recompute, OffloadedValuesComeBackOneLayerAhead) {
  const TinyBert t = tiny_bert(3);
  const int last_forward = t.last_forward;
  const std::vector<ModuleRange>& layers = t.layers;
  ASSERT_EQ(layers.size(), 3u);
  RematSpec spec;
  spec.saved = [](const Node& n) { return n.kind == OpKind::kDot ? RematChoice::kOffload : RematChoice::kRemat; };
  spec.input = RematChoice::kOffload;
  const Recomputed r = recompute_in_backward(t.fwd.graph, last_forward, layers, spec);
  const Graph& h = r.graph;
  expect_same_gradients(t, r);

  // Old forward id of each new forward node; the layer an original forward value belongs to (its
  // input: the layer that reads it first).
  std::map<int, int> old_of;
  for (int v = 0; v <= last_forward; ++v) old_of[r.new_id[v]] = v;
  auto layer_of = [&](int old) {
    for (size_t l = 0; l < layers.size(); ++l)
      if (old <= layers[l].last) return int(l);
    return -1;
  };
  std::vector<int> first_clone(layers.size(), INT32_MAX);
  for (size_t v = 0; v < h.nodes().size(); ++v)
    if (r.module_of[v] >= 0) first_clone[size_t(r.module_of[v])] = std::min(first_clone[size_t(r.module_of[v])], int(v));
  int offloads = 0, reloads = 0;
  uint64_t bytes = 0;
  std::set<int> offloaded;  // new ids of the values copied out
  for (const Node& n : h.nodes()) {
    if (n.kind == OpKind::kHostOffload) {
      ++offloads;
      EXPECT_LE(n.id, r.last_forward);
      offloaded.insert(n.inputs[0]);
      bytes += uint64_t(num_elements(n.shape)) * dtype_bytes(n.dtype);
      int done = -1;
      for (const Node& d : h.nodes())
        if (d.kind == OpKind::kCollectiveDone && d.inputs[0] == n.id) done = d.id;
      ASSERT_GE(done, 0) << n.name;
      for (int v = 0; v <= r.last_forward; ++v)
        for (int x : h.node(v).inputs)
          if (x == n.inputs[0] && h.node(v).kind != OpKind::kHostOffload) {
            EXPECT_LT(v, done) << h.node(v).name;
          }
    }
    if (n.kind == OpKind::kHostReload) {
      ++reloads;
      EXPECT_GT(n.id, r.last_forward);
      const int value = h.node(h.node(n.inputs[0]).inputs[0]).inputs[0];  // reload <- done <- offload <- value
      const int l = layer_of(old_of.at(value));
      ASSERT_GE(l, 0);
      if (l + 1 < int(layers.size())) {
        EXPECT_LT(n.id, first_clone[size_t(l + 1)]) << n.name;
      }
    }
  }
  EXPECT_GT(offloads, 3 * 2);  // at least two matmuls and the input per layer
  EXPECT_EQ(offloads, reloads);
  EXPECT_EQ(bytes, r.offloaded_bytes);
  for (size_t v = size_t(r.last_forward) + 1; v < h.nodes().size(); ++v)
    if (h.node(int(v)).kind != OpKind::kHostOffload) {
      for (int x : h.node(int(v)).inputs) EXPECT_FALSE(offloaded.count(x)) << h.node(int(v)).name << " reads an offloaded value";
    }
}

}  // namespace
}  // namespace tpusim::models
