#include "compiler/fsdp_graphs.h"

#include "compiler/lowering.h"
#include "models/autodiff.h"
#include "models/recompute.h"

namespace tpusim::compiler {

std::unique_ptr<FsdpGraphs> build_fsdp_graphs(models::BertGraph fwd, uint32_t n, bool grad_ckpt,
                                              const models::OptimizerConfig& opt, bool training) {
  auto out = std::make_unique<FsdpGraphs>();
  models::Graph& g = fwd.graph;
  const int last_forward = int(g.nodes().size()) - 1;
  models::Gradients grads;
  if (training) {
    grads = models::build_backward(g, fwd.loss, fwd.params);
  } else {
    grads.params = fwd.params;
  }
  for (int gr : grads.grads) g.mark_output(gr);  // each is reduce-scattered, not updated here
  std::vector<int> new_id(g.nodes().size());
  for (size_t i = 0; i < new_id.size(); ++i) new_id[i] = int(i);
  if (grad_ckpt && training) {
    std::vector<models::ModuleRange> layers;
    for (const auto& u : fwd.units)
      if (u.name.rfind("bert.encoder.layer.", 0) == 0) layers.push_back(u);
    models::Recomputed r = models::recompute_in_backward(g, last_forward, layers);
    out->graph = std::move(r.graph);
    new_id = std::move(r.new_id);
    out->recomputed_nodes = r.recomputed_nodes;
    out->recomputed_layer = std::move(r.module_of);
  } else {
    out->graph = std::move(g);
    out->recomputed_layer.assign(out->graph.nodes().size(), -1);
  }

  FsdpStep& s = out->step;
  s.graph = &out->graph;
  s.last_forward = last_forward;  // forward ids are unchanged by the rewrite
  s.cores = n;
  std::vector<std::string> names;
  std::vector<uint64_t> elements;
  models::DType dtype = models::DType::kF32;
  for (const auto& m : fwd.units) {
    FsdpUnit u;
    u.name = m.name;
    uint64_t elems = 0;
    for (size_t i = 0; i < grads.params.size(); ++i) {
      const int p = grads.params[i];
      if (p < m.first || p > m.last) continue;
      u.params.push_back(new_id[p]);
      if (training) u.grads.push_back(new_id[grads.grads[i]]);
      elems += uint64_t(models::num_elements(out->graph.node(new_id[p]).shape));
      dtype = out->graph.node(new_id[p]).dtype;
    }
    if (u.params.empty()) continue;
    names.push_back(u.name);
    elements.push_back(elems);
    s.units.push_back(std::move(u));
  }
  out->optimizer = models::build_sharded_optimizer(names, elements, n, dtype, opt, training);
  s.optimizer_graph = &out->optimizer.graph;
  for (auto [in, o] : out->optimizer.optimizer.donated) s.donated[o] = in;
  for (size_t u = 0; u < s.units.size(); ++u) {
    FsdpUnit& unit = s.units[u];
    unit.shard = out->optimizer.shards[u];
    const uint64_t shard_bytes = stored_bytes(out->optimizer.graph, unit.shard);
    unit.gathered_bytes = uint64_t(n) * shard_bytes;
    if (training) {
      unit.grad_shard = out->optimizer.grad_shards[u];
      unit.grad_bytes = uint64_t(n) * stored_bytes(out->optimizer.graph, unit.grad_shard);
    }
    out->parameter_bytes += shard_bytes;
  }
  for (const auto& node : out->optimizer.graph.nodes())
    if (node.kind == models::OpKind::kParameter && node.role == models::ParamRole::kOptimizerState)
      out->optimizer_state_bytes += stored_bytes(out->optimizer.graph, node.id);
  return out;
}

}  // namespace tpusim::compiler
