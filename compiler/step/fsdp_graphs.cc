#include "compiler/step/fsdp_graphs.h"

#include <algorithm>
#include <map>

#include "compiler/lower/lowering.h"
#include "compiler/step/partition.h"
#include "compiler/step/sharding_rules.h"
#include "models/autodiff.h"
#include "models/recompute.h"

namespace tpusim::compiler {

namespace {

// The tensor axis's all-reduces written into the FSDP step graph (shardings propagated from the
// model's split weights), the ids that point into it remapped: `new_id` (forward graph -> step
// graph), the last forward node, each node's recomputed layer (an all-reduce takes its operand's).
void write_tensor_collectives(FsdpGraphs& f, const models::Mesh& mesh, std::vector<int>& new_id, int& last_forward) {
  propagate_shardings(f.graph);
  std::vector<int> id;
  f.graph = with_collectives(f.graph, mesh, models::MeshAxis::kTensor, &id);
  for (int& x : new_id) x = id[size_t(x)];
  last_forward = id[size_t(last_forward)];
  std::vector<int> layer(f.graph.nodes().size(), -2);
  for (size_t i = 0; i < id.size(); ++i) layer[size_t(id[i])] = f.recomputed_layer[i];
  for (const models::Node& n : f.graph.nodes())
    if (layer[size_t(n.id)] == -2) layer[size_t(n.id)] = layer[size_t(n.inputs.at(0))];
  f.recomputed_layer = std::move(layer);
}

}  // namespace

std::unique_ptr<FsdpGraphs> build_fsdp_graphs(models::ModelGraph fwd, uint32_t n, bool grad_ckpt,
                                              const models::OptimizerConfig& opt, bool training,
                                              const FsdpWrapPolicy& wrap, const models::Mesh& mesh,
                                              const models::RematSpec& remat) {
  auto out = std::make_unique<FsdpGraphs>();
  models::Graph& g = fwd.graph;
  // The units as lists of parameter nodes of the forward graph.
  std::vector<FsdpWrapUnit> units;
  if (wrap.custom()) {
    units = fsdp_wrap_units(g, fwd.params, wrap, *fwd.modules);
  } else {
    for (const auto& m : fwd.units) {
      FsdpWrapUnit u{m.name, {}, false};
      for (int p : fwd.params)
        if (p >= m.first && p <= m.last) u.params.push_back(p);
      units.push_back(std::move(u));
    }
  }
  int last_forward = int(g.nodes().size()) - 1;
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
      if (u.layer) layers.push_back(u);
    models::Recomputed r = models::recompute_in_backward(g, last_forward, layers, remat);
    out->graph = std::move(r.graph);
    new_id = std::move(r.new_id);
    last_forward = r.last_forward;  // host offloads add forward nodes
    out->recomputed_nodes = r.recomputed_nodes;
    out->recomputed_layer = std::move(r.module_of);
    out->recompute_flops = r.flops;
  } else {
    out->graph = std::move(g);
    out->recomputed_layer.assign(out->graph.nodes().size(), -1);
  }
  if (mesh[models::MeshAxis::kTensor] > 1) write_tensor_collectives(*out, mesh, new_id, last_forward);

  FsdpStep& s = out->step;
  s.graph = &out->graph;
  s.last_forward = last_forward;
  s.cores = n;
  s.mesh = mesh;
  std::vector<std::string> names;
  std::vector<uint64_t> elements;
  models::DType dtype = models::DType::kF32;
  std::map<int, size_t> index_of;  // parameter node -> its index in grads
  for (size_t i = 0; i < grads.params.size(); ++i) index_of[grads.params[i]] = i;
  uint64_t wrap_key = 0xcbf29ce484222325ull;  // FNV-1a over the units' parameter lists
  for (const auto& m : units) {
    FsdpUnit u;
    u.name = m.name;
    u.whole_step = m.whole_step;
    uint64_t elems = 0;
    std::vector<size_t> members;
    for (int p : m.params) members.push_back(index_of.at(p));
    std::sort(members.begin(), members.end());  // in grads order, as the default units
    for (size_t i : members) {
      const int p = grads.params[i];
      wrap_key = (wrap_key ^ uint64_t(p + 1)) * 0x100000001b3ull;
      u.params.push_back(new_id[p]);
      if (training) u.grads.push_back(new_id[grads.grads[i]]);
      elems += uint64_t(models::num_elements(out->graph.node(new_id[p]).shape));
      dtype = out->graph.node(new_id[p]).dtype;
    }
    wrap_key = (wrap_key ^ (u.whole_step ? 0xFFFFull : 0xFFFEull)) * 0x100000001b3ull;
    if (u.params.empty()) continue;
    names.push_back(u.name);
    elements.push_back(elems);
    s.units.push_back(std::move(u));
  }
  if (wrap.custom()) s.wrap_key = wrap_key;
  out->optimizer = models::build_sharded_optimizer(names, elements, n, dtype, opt, training);
  s.optimizer_graph = &out->optimizer.graph;
  for (auto [in, o] : out->optimizer.optimizer.donated) s.donated[o] = in;
  for (size_t u = 0; u < s.units.size(); ++u) {
    FsdpUnit& unit = s.units[u];
    unit.shard = out->optimizer.shards[u];
    // The sharding (models/sharding.h): the unit's flat parameter and its gradient split along the
    // fsdp axis in the update, each core's gradients partial sums (compiler/step/fsdp.cc reshards).
    const auto split = models::TensorSharding::split_along(0, models::MeshAxis::kFsdp);
    out->optimizer.graph.set_sharding(unit.shard, split);
    for (int gr : unit.grads) out->graph.set_sharding(gr, models::TensorSharding::partial_over(models::MeshAxis::kFsdp));
    const uint64_t shard_bytes = stored_bytes(out->optimizer.graph, unit.shard);
    unit.gathered_bytes = uint64_t(n) * shard_bytes;
    if (training) {
      unit.grad_shard = out->optimizer.grad_shards[u];
      out->optimizer.graph.set_sharding(unit.grad_shard, split);
      unit.grad_bytes = uint64_t(n) * stored_bytes(out->optimizer.graph, unit.grad_shard);
    }
    out->parameter_bytes += shard_bytes;
  }
  for (const auto& node : out->optimizer.graph.nodes())
    if (node.kind == models::OpKind::kParameter && node.role == models::ParamRole::kOptimizerState)
      out->optimizer_state_bytes += stored_bytes(out->optimizer.graph, node.id);
  return out;
}

std::vector<std::pair<std::string, uint64_t>> fsdp_unit_sizes(const FsdpGraphs& f) {
  std::vector<std::pair<std::string, uint64_t>> out;
  for (const FsdpUnit& u : f.step.units) {
    uint64_t e = 0;
    for (int p : u.params) e += uint64_t(models::num_elements(f.graph.node(p).shape));
    out.push_back({u.name, e});
  }
  return out;
}

}  // namespace tpusim::compiler
