#include "compiler/fsdp_memory.h"

#include <algorithm>
#include <set>

#include "compiler/lowering.h"

namespace tpusim::compiler {

namespace {

// Buffers of one graph's values over the schedule's slots. `slot_of[k]`: slot of kernel k.
// `end_of`: the slot a value's buffer is freed after, when the graph does not decide it (a
// gradient: its unit's reduce-scatter); -1 otherwise.
void add_graph_buffers(MemoryPlan& mp, const models::Graph& g, const FusionPlan& plan, const std::vector<int>& slot_of,
                       int last_slot, const std::map<int, int>& donated, const std::map<int, std::pair<int, BufferKind>>& fixed) {
  std::map<int, int> producer, last_use;
  for (size_t k = 0; k < plan.fusions.size(); ++k) {
    const Fusion& f = plan.fusions[k];
    for (int r : kernel_outputs(f)) producer[r] = slot_of[k];
    for (int in : f.inputs) last_use[in] = std::max(last_use.count(in) ? last_use[in] : 0, slot_of[k]);
  }
  const std::set<int> outputs(g.outputs().begin(), g.outputs().end());
  for (const auto& n : g.nodes()) {
    HbmBuffer b;
    b.name = n.name;
    b.node = n.id;
    b.bytes = stored_bytes(g, n.id);
    auto fx = fixed.find(n.id);
    if (n.kind == models::OpKind::kParameter) {
      if (n.role == models::ParamRole::kTrainable && fx == fixed.end()) {
        b.kind = BufferKind::kParameter;  // a slice, resident
      } else if (n.role == models::ParamRole::kOptimizerState) {
        b.kind = BufferKind::kOptimizerState;
      } else if (fx != fixed.end()) {
        if (fx->second.second == BufferKind::kGatheredParameter) continue;  // added per unit by the caller
        b.kind = fx->second.second;
        b.first_kernel = fx->second.first;
        b.last_kernel = std::max(b.first_kernel, last_use.count(n.id) ? last_use[n.id] : b.first_kernel);
      } else {
        b.kind = BufferKind::kInput;
        b.last_kernel = last_use.count(n.id) ? last_use[n.id] : 0;
      }
      if (b.kind == BufferKind::kParameter || b.kind == BufferKind::kOptimizerState) {
        b.last_kernel = last_slot;
        mp.persistent_bytes += b.bytes;
      }
    } else if (producer.count(n.id)) {
      if (donated.count(n.id)) continue;  // written in place over its parameter
      b.first_kernel = producer[n.id];
      if (fx != fixed.end()) {
        b.kind = fx->second.second;
        b.last_kernel = std::max(b.first_kernel, fx->second.first);
      } else if (outputs.count(n.id)) {
        b.kind = BufferKind::kOutput;
        b.last_kernel = last_slot;
      } else {
        b.kind = BufferKind::kTemporary;
        b.last_kernel = last_use.count(n.id) ? last_use[n.id] : b.first_kernel;
      }
    } else {
      continue;  // lives only in VMEM inside a kernel
    }
    mp.buffers.push_back(std::move(b));
  }
}

}  // namespace

MemoryPlan plan_fsdp_memory(const FsdpStep& step, const FusionPlan& plan, const FusionPlan& optimizer_plan,
                            const FsdpSchedule& sched) {
  const int slots = int(sched.slots.size());
  const int last = std::max(0, slots - 1);
  std::vector<int> slot_of(plan.fusions.size()), opt_slot_of(optimizer_plan.fusions.size());
  for (int s = 0; s < slots; ++s) {
    const FsdpSlot& x = sched.slots[s];
    if (x.kind == FsdpSlot::kKernel) slot_of[x.index] = s;
    if (x.kind == FsdpSlot::kOptimizerKernel) opt_slot_of[x.index] = s;
  }
  MemoryPlan mp;
  // Forward/backward graph: its trainable parameters are the gathered copies (added per unit
  // below); a full gradient lives until its unit's reduce-scatter.
  std::map<int, std::pair<int, BufferKind>> fixed, opt_fixed;
  for (size_t u = 0; u < step.units.size(); ++u) {
    const FsdpUnit& unit = step.units[u];
    for (int p : unit.params) fixed[p] = {0, BufferKind::kGatheredParameter};
    for (int gr : unit.grads) fixed[gr] = {sched.grad_free[u], BufferKind::kGradient};
    // The reduce-scattered slice: from the reduce-scatter to its update.
    if (unit.grad_shard >= 0) opt_fixed[unit.grad_shard] = {sched.reduce_scatter[u], BufferKind::kGradient};
  }
  add_graph_buffers(mp, *step.graph, plan, slot_of, last, {}, fixed);
  add_graph_buffers(mp, *step.optimizer_graph, optimizer_plan, opt_slot_of, last, step.donated, opt_fixed);
  for (size_t u = 0; u < step.units.size(); ++u) {
    const FsdpUnit& unit = step.units[u];
    const std::pair<int, int> phases[] = {{sched.gather_fwd[u], sched.last_fwd[u]}, {sched.gather_bwd[u], sched.last_bwd[u]}};
    for (auto [from, to] : phases) {
      if (from < 0) continue;
      HbmBuffer b;
      b.name = unit.name + ".flat_param (gathered)";
      b.bytes = unit.gathered_bytes;
      b.kind = BufferKind::kGatheredParameter;
      b.first_kernel = from;
      b.last_kernel = std::max(from, to);
      mp.buffers.push_back(std::move(b));
    }
  }
  // Sweep the slots for the peak of the non-persistent buffers (as plan_memory does over kernels).
  std::vector<uint64_t> live(std::max(1, slots), 0);
  auto persistent = [](const HbmBuffer& b) {
    return b.kind == BufferKind::kParameter || b.kind == BufferKind::kOptimizerState;
  };
  for (const auto& b : mp.buffers)
    if (!persistent(b))
      for (int k = b.first_kernel; k <= b.last_kernel && k < int(live.size()); ++k) live[k] += b.bytes;
  mp.peak_kernel = int(std::max_element(live.begin(), live.end()) - live.begin());
  mp.peak_bytes = mp.persistent_bytes + live[mp.peak_kernel];
  for (size_t i = 0; i < mp.buffers.size(); ++i) {
    const auto& b = mp.buffers[i];
    if (persistent(b) || (b.first_kernel <= mp.peak_kernel && mp.peak_kernel <= b.last_kernel)) mp.live_at_peak.push_back(i);
  }
  std::sort(mp.live_at_peak.begin(), mp.live_at_peak.end(),
            [&](size_t a, size_t b) { return mp.buffers[a].bytes > mp.buffers[b].bytes; });
  return mp;
}

}  // namespace tpusim::compiler
