#include "compiler/step/fsdp_schedule.h"

#include <algorithm>
#include <stdexcept>

#include "compiler/lower/lowering.h"

namespace tpusim::compiler {

namespace {

CacheKey mix(CacheKey a, const CacheKey& b, uint64_t salt) {
  a.hi = (a.hi ^ (b.hi + 0x9e3779b97f4a7c15ull + (a.hi << 6) + (a.hi >> 2))) * 0x100000001b3ull ^ salt;
  a.lo = (a.lo ^ (b.lo + 0x9e3779b97f4a7c15ull + (a.lo << 6) + (a.lo >> 2))) * 0x100000001b3ull ^ (salt << 1);
  return a;
}

}  // namespace

CacheKey fsdp_step_cache_key(const FsdpStep& step) {
  std::vector<int> donated_inputs;
  for (const auto& [o, in] : step.donated) donated_inputs.push_back(in);
  // The collectives are part of the program: the core count is in the key.
  CacheKey k = mix(graph_cache_key(*step.graph), graph_cache_key(*step.optimizer_graph, donated_inputs), 0xF5D9ull * step.cores);
  // Other units, other collectives: another program (the default units add nothing).
  if (step.wrap_key) k = mix(k, CacheKey{step.wrap_key, ~step.wrap_key}, 0x3A9ull);
  return k;
}

FusionPlan plan_fsdp_fusions(const models::Graph& g) {
  FusionPlan p = plan_fusions(g);
  std::stable_sort(p.fusions.begin(), p.fusions.end(), [](const Fusion& a, const Fusion& b) { return a.root < b.root; });
  return p;
}

FsdpSchedule schedule_fsdp_step(const FsdpStep& step, const FusionPlan& plan, const FusionPlan& optimizer_plan) {
  const int U = int(step.units.size());
  const int K = int(plan.fusions.size());
  std::vector<int> unit_of(step.graph->nodes().size(), -1), unit_of_grad(step.graph->nodes().size(), -1);
  for (int u = 0; u < U; ++u) {
    for (int p : step.units[u].params) unit_of[p] = u;
    for (int g : step.units[u].grads) unit_of_grad[g] = u;
  }
  std::vector<int> fwd_first(U, -1), fwd_last(U, -1), bwd_first(U, -1), bwd_last(U, -1), rs_after(U, -1);
  for (int k = 0; k < K; ++k) {
    const Fusion& f = plan.fusions[k];
    const bool backward = f.root > step.last_forward;
    for (int in : f.inputs) {
      const int u = unit_of[in];
      if (u < 0) continue;
      std::vector<int>& first = backward ? bwd_first : fwd_first;
      if (first[u] < 0) first[u] = k;
      (backward ? bwd_last : fwd_last)[u] = k;
    }
    auto produced = [&](int v) {
      if (unit_of_grad[v] >= 0) rs_after[unit_of_grad[v]] = std::max(rs_after[unit_of_grad[v]], k);
    };
    for (int r : kernel_outputs(f)) produced(r);
  }
  // A whole-step unit keeps its forward gather until its last backward reader.
  for (int u = 0; u < U; ++u)
    if (step.units[u].whole_step) {
      fwd_last[u] = std::max(fwd_last[u], bwd_last[u]);
      if (fwd_first[u] < 0) fwd_first[u] = bwd_first[u];
      bwd_first[u] = bwd_last[u] = -1;
    }
  FsdpSchedule s;
  s.gather_fwd.assign(U, -1);
  s.last_fwd.assign(U, -1);
  s.gather_bwd.assign(U, -1);
  s.last_bwd.assign(U, -1);
  s.reduce_scatter.assign(U, -1);
  auto push = [&](FsdpSlot::Kind kind, int index) {
    s.slots.push_back({kind, index});
    s.waits.emplace_back();
    return int(s.slots.size()) - 1;
  };
  // The all-gathers in the order their first readers run; with overlap each is issued when the
  // previous one's reader is reached (one gather ahead), and its reader waits for it.
  struct Gather {
    int kernel, unit;
    bool backward;
  };
  std::vector<Gather> gathers;
  for (int k = 0; k < K; ++k)
    for (int u = 0; u < U; ++u) {
      if (fwd_first[u] == k) gathers.push_back({k, u, false});
      if (bwd_first[u] == k) gathers.push_back({k, u, true});
    }
  std::vector<int> gather_slot(gathers.size(), -1);
  auto push_gather = [&](size_t j) {
    gather_slot[j] = push(FsdpSlot::kAllGather, gathers[j].unit);
    (gathers[j].backward ? s.gather_bwd : s.gather_fwd)[gathers[j].unit] = gather_slot[j];
  };
  size_t next = 0;
  for (int k = 0; k < K; ++k) {
    std::vector<int> wait;
    for (; next < gathers.size() && gathers[next].kernel == k; ++next) {
      if (gather_slot[next] < 0) push_gather(next);
      wait.push_back(gather_slot[next]);
      if (step.overlap && next + 1 < gathers.size() && gather_slot[next + 1] < 0) push_gather(next + 1);
    }
    const int slot = push(FsdpSlot::kKernel, k);
    if (step.overlap) s.waits[size_t(slot)] = std::move(wait);
    for (int u = 0; u < U; ++u) {
      if (fwd_last[u] == k) s.last_fwd[u] = slot;
      if (bwd_last[u] == k) s.last_bwd[u] = slot;
    }
    for (int u = 0; u < U; ++u)
      if (!step.units[u].grads.empty() && (rs_after[u] == k || (rs_after[u] < 0 && k == K - 1)))
        s.reduce_scatter[u] = push(FsdpSlot::kReduceScatter, u);
  }
  for (int k = 0; k < int(optimizer_plan.fusions.size()); ++k) push(FsdpSlot::kOptimizerKernel, k);
  // A full gradient is read by its reduce-scatter; in the background that ends before the next
  // collective starts (they run one after another) or the optimizer does (it waits for them).
  s.grad_free = s.reduce_scatter;
  for (int u = 0; u < U && step.overlap; ++u) {
    if (s.reduce_scatter[u] < 0) continue;
    int x = s.reduce_scatter[u] + 1;
    while (x < int(s.slots.size()) && s.slots[x].kind == FsdpSlot::kKernel) ++x;
    s.grad_free[u] = std::min(x, int(s.slots.size()) - 1);
  }
  return s;
}

}  // namespace tpusim::compiler
