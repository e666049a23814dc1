#include "models/recompute.h"

#include <algorithm>
#include <functional>
#include <map>

namespace tpusim::models {

Recomputed recompute_in_backward(const Graph& g, int last_forward, const std::vector<ModuleRange>& modules,
                                 const RematSpec& spec) {
  const int n = int(g.nodes().size());
  auto choice = [&](const Node& x) { return spec.saved ? spec.saved(x) : RematChoice::kRemat; };
  // module_of[v]: index of the checkpointed module whose activation v is (recomputed), or -1;
  // offload_of[v]: the module whose backward reads v from host memory, or -1.
  std::vector<int> module_of(n, -1), offload_of(n, -1);
  for (size_t m = 0; m < modules.size(); ++m)
    for (int v = modules[m].first; v <= modules[m].last && v < n; ++v) {
      const Node& x = g.node(v);
      if (x.kind == OpKind::kParameter || x.kind == OpKind::kConstant) continue;
      const RematChoice c = choice(x);
      if (c == RematChoice::kRemat) module_of[v] = int(m);
      if (c == RematChoice::kOffload) offload_of[v] = int(m);
    }
  // Values a forward node of another module reads are the module's outputs: kept, not recomputed.
  for (int v = 0; v <= last_forward && v < n; ++v)
    for (int in : g.node(v).inputs) {
      const int m = module_of[in] >= 0 ? module_of[in] : offload_of[in];
      if (m >= 0 && (v < modules[m].first || v > modules[m].last)) module_of[in] = offload_of[in] = -1;
    }
  for (int o : g.outputs())
    if (o <= last_forward) module_of[o] = offload_of[o] = -1;
  if (spec.input == RematChoice::kOffload)
    for (size_t m = 0; m < modules.size(); ++m) {
      const Node& out = g.node(modules[m].last);
      for (int v = modules[m].first; v <= modules[m].last && v < n; ++v)
        for (int in : g.node(v).inputs) {
          const Node& x = g.node(in);
          if (in < modules[m].first && x.kind != OpKind::kParameter && x.kind != OpKind::kConstant &&
              x.shape == out.shape && offload_of[in] < 0 && module_of[in] < 0)
            offload_of[in] = int(m);
        }
    }
  // Each offloaded value's last forward reader, seen through the ops a kernel computes from its
  // operand without a buffer of their own (views, element-wise and layout ops, fused into their
  // readers: a reshape of q is no reader of q's buffer, the kernel reading the reshape is): its
  // done follows it.
  auto passes_through = [](const Node& x) {
    switch (x.kind) {
      case OpKind::kReshape: case OpKind::kTranspose: case OpKind::kConvert: case OpKind::kElementwise:
      case OpKind::kBroadcast: case OpKind::kSlice: case OpKind::kConcatenate: return true;
      default: return false;
    }
  };
  std::vector<int> last_read(n, -1);
  for (int v = std::min(last_forward, n - 1); v >= 0; --v)
    for (int in : g.node(v).inputs)
      last_read[in] = std::max(last_read[in], passes_through(g.node(v)) ? std::max(v, last_read[v]) : v);
  std::map<int, std::vector<int>> done_after;  // forward node -> offloaded values whose done follows it
  std::vector<std::vector<int>> offloaded(modules.size());
  for (int v = 0; v <= last_forward && v < n; ++v)
    if (offload_of[v] >= 0) {
      done_after[std::max(v, last_read[v])].push_back(v);
      offloaded[size_t(offload_of[v])].push_back(v);
    }

  Recomputed r;
  r.new_id.assign(n, -1);
  std::vector<int> clone(n, -1), off(n, -1), reload(n, -1);
  std::vector<bool> reloaded(modules.size(), false);
  auto reload_module = [&](int m) {
    if (m < 0 || reloaded[size_t(m)]) return;
    reloaded[size_t(m)] = true;
    for (int v : offloaded[size_t(m)]) reload[v] = r.graph.host_reload(off[v], g.node(v).name + ".reload");
  };
  // Module m's backward begins: its offloaded values come back now unless prefetched, and the next
  // module's (m - 1 in backward order) start coming back.
  auto backward_of = [&](int m) {
    reload_module(m);
    reload_module(m - 1);
  };
  std::function<int(int)> recomputed = [&](int v) -> int {
    if (offload_of[v] >= 0) {
      backward_of(offload_of[v]);
      return reload[v];
    }
    if (module_of[v] < 0) return r.new_id[v];
    if (clone[v] >= 0) return clone[v];
    backward_of(module_of[v]);
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
    if (v > last_forward) continue;
    if (offload_of[v] >= 0) {
      const Node& x = g.node(v);
      off[v] = r.graph.host_offload(r.new_id[v], x.name + ".offload");
      r.offloaded_bytes += uint64_t(num_elements(x.shape)) * dtype_bytes(x.dtype);
    }
    if (auto d = done_after.find(v); d != done_after.end())
      for (int x : d->second) off[x] = r.graph.collective_done(off[x], g.node(x).name + ".offload-done");
    if (v == last_forward) r.last_forward = int(r.graph.nodes().size()) - 1;
  }
  for (int o : g.outputs()) r.graph.mark_output(r.new_id[o]);
  r.module_of.resize(r.graph.nodes().size(), -1);
  return r;
}

}  // namespace tpusim::models
