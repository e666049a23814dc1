#include "compiler/fsdp.h"

#include <algorithm>
#include <stdexcept>

#include "compiler/collectives.h"
#include "compiler/fsdp_memory.h"
#include "compiler/lowering.h"
#include "compiler/program_builder.h"
#include "compiler/replicas.h"
#include "sim/hw/resolved_hw.h"

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

CompiledStep compile_fsdp_step(const FsdpStep& step, const HwConfig& hw, const std::string& name) {
  const models::Graph& g = *step.graph;
  const models::Graph& og = *step.optimizer_graph;
  std::vector<CoreId> ring = ring_order(hw);
  if (step.cores < 1 || step.cores > ring.size())
    throw std::invalid_argument("compile_fsdp_step: the slices were cut for " + std::to_string(step.cores) +
                                " cores; the slice has " + std::to_string(ring.size()));
  ring.resize(step.cores);
  const uint32_t n = step.cores;

  CompiledStep out;
  out.key = fsdp_step_cache_key(step);
  out.hlo_ops = g.nodes().size() + og.nodes().size();
  const FusionPlan plan = plan_fsdp_fusions(g), oplan = plan_fsdp_fusions(og);
  out.kernels = uint32_t(plan.fusions.size() + oplan.fusions.size());
  const FsdpSchedule sched = schedule_fsdp_step(step, plan, oplan);
  out.memory = plan_fsdp_memory(step, plan, oplan, sched);
  // Megacore: the device is the chip; the shards are cut per core, so each core's slices, gathered
  // parameters and activations are its own (a simplification: XLA's megacore would gather a unit
  // once per chip).
  plan_device_memory(out.memory, cores_per_device(hw.chip), {});
  // As compile_data_parallel_step: a program that cannot be allocated is not lowered (a model far
  // too large for its slice lowers to billions of instructions before failing out of HBM). What the
  // collectives would move is still reported.
  if (out.memory.peak_bytes > resolve_hw(hw).device_hbm_bytes) {
    out.lowered = false;
    if (n > 1)
      for (const FsdpSlot& s : sched.slots) {
        if (s.kind == FsdpSlot::kAllGather) out.allgather_bytes += step.units[s.index].gathered_bytes;
        if (s.kind == FsdpSlot::kReduceScatter) out.reducescatter_bytes += step.units[s.index].grad_bytes;
      }
    return out;
  }

  isa::Program& prog = out.program;
  prog.name = name;
  ReplicaStreams streams(prog, ring, hw.chip.core.vmem.size_bytes());
  ProgramBuilder& b0 = streams.main();
  // Infeed: the next batch's inputs cross PCIe while this step computes, contending for the
  // chip's PCIe link and HBM.
  out.infeed_bytes = emit_next_batch_infeed(b0, g, step.prefetch_next_batch);
  LowerContext cx{g, plan, hw, b0}, ocx{og, oplan, hw, b0};
  auto lower = [](LowerContext& c, const Fusion& f) { lower_fusion(c, f); };
  uint32_t tags = 0;
  // With overlap: every background collective's completion by slot, and the latest one. The
  // kernels run beside them with their staging VMEM reserved.
  const bool overlap = step.overlap && n > 1;
  std::vector<uint32_t> done_at(sched.slots.size(), kNoInstr);
  uint32_t last_background = kNoInstr;
  if (overlap) b0.reserve_vmem_top(staging_bytes(step.piece_bytes));
  auto wait_also = [&](uint32_t x) {
    if (x == kNoInstr) return;
    isa::Deps d = b0.entry_deps();
    if (std::find(d.begin(), d.end(), x) == d.end()) d.push_back(x);
    b0.set_entry_deps(d);
  };
  bool optimizer_started = false;
  for (size_t si = 0; si < sched.slots.size(); ++si) {
    const FsdpSlot& s = sched.slots[si];
    switch (s.kind) {
      case FsdpSlot::kKernel:
        for (int w : sched.waits[si]) wait_also(done_at[size_t(w)]);
        lower(cx, plan.fusions[s.index]);
        break;
      case FsdpSlot::kOptimizerKernel:
        if (!optimizer_started) wait_also(last_background);  // and so every collective before it
        optimizer_started = true;
        lower(ocx, oplan.fusions[s.index]);
        break;
      case FsdpSlot::kAllGather:
      case FsdpSlot::kReduceScatter: {
        const FsdpUnit& u = step.units[s.index];
        const bool gather = s.kind == FsdpSlot::kAllGather;
        const uint64_t bytes = gather ? u.gathered_bytes : u.grad_bytes;
        (gather ? out.allgather_bytes : out.reducescatter_bytes) += bytes;
        if (n > 1 && bytes > 0) {
          // A unit's all-gather (each core contributes its slice, `bytes` = the gathered size) or
          // reduce-scatter (`bytes` = the full gradient, each core keeps 1/n).
          CollectiveOptions opt;
          opt.piece_bytes = step.piece_bytes;
          opt.tag_base = tags;
          opt.background = overlap;
          const CollectiveResult r = emit_collective_after_kernel(
              streams, ring, hw, gather ? CollectiveKind::kAllGather : CollectiveKind::kReduceScatter, bytes, opt,
              last_background);
          tags += r.tags_used;
          done_at[si] = r.done[0];  // the same stream index on every replica
          if (overlap) last_background = done_at[si];
        }
        break;
      }
    }
  }
  streams.finish();
  if (n == 1) out.allgather_bytes = out.reducescatter_bytes = 0;  // one core: nothing to exchange

  prog.info.flops = cx.flops + ocx.flops;
  prog.info.hbm_bytes = cx.hbm_bytes + ocx.hbm_bytes;
  prog.info.fusions = out.kernels;
  uint64_t min_bytes = 0;
  for (const models::Graph* gr : {&g, &og}) {
    for (const auto& node : gr->nodes())  // the gathered parameters are not compulsory reads
      if (node.kind == models::OpKind::kParameter && (gr == &og || node.role != models::ParamRole::kTrainable))
        min_bytes += stored_bytes(*gr, node.id);
    for (int o : gr->outputs()) min_bytes += stored_bytes(*gr, o);
  }
  prog.info.hbm_bytes_min = min_bytes;
  return out;
}

}  // namespace tpusim::compiler
