#include "models/recompute.h"

#include <functional>

namespace tpusim::models {

Recomputed recompute_in_backward(const Graph& g, int last_forward, const std::vector<ModuleRange>& modules,
                                 const std::function<bool(const Node&)>& keep) {
  const int n = int(g.nodes().size());
  // module_of[v]: index of the checkpointed module whose activation v is, or -1.
  std::vector<int> module_of(n, -1);
  for (size_t m = 0; m < modules.size(); ++m)
    for (int v = modules[m].first; v <= modules[m].last && v < n; ++v) {
      const OpKind k = g.node(v).kind;
      if (k != OpKind::kParameter && k != OpKind::kConstant && !(keep && keep(g.node(v)))) module_of[v] = int(m);
    }
  // Values a forward node of another module reads are the module's outputs: kept, not recomputed.
  for (int v = 0; v <= last_forward && v < n; ++v)
    for (int in : g.node(v).inputs)
      if (module_of[in] >= 0 && (v < modules[module_of[in]].first || v > modules[module_of[in]].last))
        module_of[in] = -1;
  for (int o : g.outputs())
    if (o <= last_forward) module_of[o] = -1;

  Recomputed r;
  r.new_id.assign(n, -1);
  std::vector<int> clone(n, -1);
  std::function<int(int)> recomputed = [&](int v) -> int {
    if (module_of[v] < 0) return r.new_id[v];
    if (clone[v] >= 0) return clone[v];
    Node c = g.node(v);
    for (int& in : c.inputs) in = recomputed(in);
    c.name += ".recompute";
    // A recomputed attention is a kernel of its own: its parts take a call number no original has.
    if (c.kind == OpKind::kAttention) c.attention.call += g.attention_calls();
    clone[v] = r.graph.append_copy(std::move(c));
    const Node& made = r.graph.node(clone[v]);
    r.flops += made.kind == OpKind::kDot ? dot_flops(r.graph, made) : attention_flops(r.graph, made);
    r.module_of.resize(clone[v] + 1, -1);
    r.module_of[clone[v]] = module_of[v];
    ++r.recomputed_nodes;
    return clone[v];
  };
  for (int v = 0; v < n; ++v) {
    Node c = g.node(v);
    for (int& in : c.inputs) in = v > last_forward ? recomputed(in) : r.new_id[in];
    r.new_id[v] = r.graph.append_copy(std::move(c));
  }
  for (int o : g.outputs()) r.graph.mark_output(r.new_id[o]);
  r.module_of.resize(r.graph.nodes().size(), -1);
  return r;
}

}  // namespace tpusim::models
