#include "compiler/step/spmd_step.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

#include "compiler/collectives/replicas.h"
#include "compiler/lower/lowering.h"
#include "compiler/lower/program_builder.h"
#include "compiler/plan/fusion.h"
#include "sim/hw/resolved_hw.h"

namespace tpusim::compiler {

namespace {

using models::CollectiveOp;
using models::OpKind;

// The most of `cores` on one chip (they share its CMEM and, on a megacore chip, its HBM); throws
// std::invalid_argument for an empty list or a core named twice.
uint32_t most_on_one_chip(const std::vector<CoreId>& cores) {
  if (cores.empty()) throw std::invalid_argument("compile_spmd_step: no cores");
  std::set<std::pair<uint32_t, uint32_t>> seen;
  std::map<uint32_t, uint32_t> on_chip;
  uint32_t most = 0;
  for (const CoreId& c : cores) {
    if (!seen.insert({c.chip, c.core}).second)
      throw std::invalid_argument("compile_spmd_step: core " + std::to_string(c.chip) + "." + std::to_string(c.core) +
                                  " listed twice");
    most = std::max(most, ++on_chip[c.chip]);
  }
  return most;
}

// Values that share another's buffer: a done is its collective's result; an all-reduce writes over
// its operand when nothing else reads the operand and it is not a persistent or output buffer (XLA
// lets an element-wise op share its operand's buffer; an all-reduce is element-wise across the
// replicas).
// The parts of a flat all-gather are views of its one gathered buffer (`flat_bytes`: the first part's
// buffer, of the flat size).
std::map<int, int> buffer_aliases(const models::Graph& g, const FusionPlan& plan, std::map<int, uint64_t>& flat_bytes) {
  std::map<int, int> alias;
  const std::set<int> outputs(g.outputs().begin(), g.outputs().end());
  std::map<int64_t, int> first_part;  // flat all-gather id -> its first part
  for (const models::Node& n : g.nodes()) {
    if (n.kind == OpKind::kCollectiveDone) alias[n.id] = n.inputs[0];
    if (n.kind == OpKind::kCollective && n.collective.flat && n.collective.op == CollectiveOp::kAllGather) {
      const auto [it, first] = first_part.emplace(n.collective.combine, n.id);
      if (first)
        flat_bytes[n.id] = graph_collective_bytes(g, n);
      else
        alias[n.id] = it->second;
    }
    if (n.kind != OpKind::kCollective || n.collective.op != CollectiveOp::kAllReduce) continue;
    const int x = n.inputs[0];
    const models::Node& in = g.node(x);
    if (in.kind == OpKind::kParameter || outputs.count(x) || !plan.materialized[size_t(x)]) continue;
    if (plan.users[size_t(x)].size() == 1) alias[n.id] = x;
  }
  return alias;
}

// Megacore device_update: a view of the graph in which every value the update's kernels compute or
// read has its first dimension longer than 1 cut to 1/c (rounded up), for lowering those kernels on
// one core's share. Same node ids, so the fusion plan and the CMEM placement apply unchanged.
models::Graph share_view(const models::Graph& g, const std::vector<const Fusion*>& kernels, uint32_t c) {
  std::vector<bool> cut(g.nodes().size(), false);
  for (const Fusion* f : kernels) {
    for (int x : f->nodes) cut[size_t(x)] = true;
    for (int x : f->inputs) cut[size_t(x)] = true;
    for (int x : kernel_outputs(*f)) cut[size_t(x)] = true;
  }
  models::Graph v;
  for (const models::Node& n : g.nodes()) {
    models::Node m = n;
    if (cut[size_t(n.id)])
      for (int64_t& d : m.shape)
        if (d > 1) {
          d = (d + c - 1) / c;
          break;
        }
    v.append_copy(std::move(m));
  }
  for (int o : g.outputs()) v.mark_output(o);
  return v;
}

// The step's memory plan per device (see spmd_step.h) with its CMEM placement.
MemoryPlan plan_step_memory(const SpmdStep& step, const FusionPlan& plan, const HwConfig& hw, uint32_t sharers,
                            const std::vector<const Fusion*>& split) {
  const models::Graph& g = step.graph;
  std::map<int, uint64_t> flat_bytes;
  const std::map<int, int> aliases = buffer_aliases(g, plan, flat_bytes);
  MemoryPlan mp = plan_memory(g, plan, [&](int id) { return buffer_kind_of_role(g.node(id).role); }, step.donated,
                              aliases, flat_bytes);
  // What the builder says the temporaries are (the report's memory breakdown, out-of-HBM messages).
  const std::set<int> grads(step.gradients.begin(), step.gradients.end());
  const std::set<int> gathered(step.gathered_parameters.begin(), step.gathered_parameters.end());
  for (HbmBuffer& b : mp.buffers) {
    if (b.kind != BufferKind::kTemporary) continue;
    if (grads.count(b.node)) b.kind = BufferKind::kGradient;
    if (gathered.count(b.node)) b.kind = BufferKind::kGatheredParameter;
  }
  // A collective's or host copy's operand and result stay in HBM, where its transfers read and
  // write them.
  std::vector<int> transferred;
  for (const Fusion& f : plan.fusions)
    if (f.kind == FusionKind::kCollective || f.kind == FusionKind::kHostCopy) {
      for (int x : kernel_outputs(f)) transferred.push_back(x);
      transferred.insert(transferred.end(), f.inputs.begin(), f.inputs.end());
    }
  place_in_cmem(mp, g.nodes().size(), hw.chip, sharers, /*inputs_in_hbm=*/true, transferred);
  const uint32_t device_cores = cores_per_device(hw.chip);
  if (device_cores > 1 && step.device_update) {
    // Parameters, optimizer state, the reduced gradients and what the update writes once per chip;
    // each core's activations, inputs and temporaries once per core.
    std::set<int> once(step.gradients.begin(), step.gradients.end());
    for (const Fusion* f : split)
      for (int x : kernel_outputs(*f)) once.insert(x);
    plan_device_memory(mp, device_cores, [&](const HbmBuffer& b) {
      return b.kind == BufferKind::kParameter || b.kind == BufferKind::kOptimizerState || once.count(b.node) > 0;
    });
  } else if (device_cores > 1) {
    plan_device_memory(mp, std::min(device_cores, sharers), {});  // every replica's buffers its own
  }
  return mp;
}

// Lowers the kernels in order: compute kernels on core 0's builder, collectives across the replicas,
// dones as the waits of the next kernel.
class StepLowering {
 public:
  StepLowering(const SpmdStep& step, const HwConfig& hw, const FusionPlan& plan, ReplicaStreams& streams,
               const std::vector<bool>& in_cmem, const models::Graph& split_view, const std::vector<bool>& split)
      : step_(step),
        plan_(plan),
        streams_(streams),
        b0_(streams.main()),
        split_(split),
        cx_{step.graph, plan, hw, b0_},
        scx_{split_view, plan, hw, b0_},
        async_done_(step.graph.nodes().size(), kNoInstr) {
    cx_.cmem_node = scx_.cmem_node = &in_cmem;
    copt_.piece_bytes = step.piece_bytes;
    copt_.algorithm = step.algorithm;
    copt_.per_device = step.device_update && hw.chip.megacore;
  }

  std::vector<GraphCollective> run() {
    for (size_t k = 0; k < plan_.fusions.size(); ++k) {
      const Fusion& f = plan_.fusions[k];
      if (f.kind == FusionKind::kCollectiveDone) {
        await(f);
        continue;
      }
      isa::Deps entry = b0_.entry_deps();
      auto wait = [&](uint32_t x) {
        if (x != kNoInstr && std::find(entry.begin(), entry.end(), x) == entry.end()) entry.push_back(x);
      };
      for (uint32_t x : pending_) wait(x);
      pending_.clear();
      // An async collective without a done is awaited by its first reader; the next asynchronous
      // collective reads it without a wait of the main stream (the background queues run them one
      // after another: FSDP's hybrid all-reduce of a reduce-scatter's result).
      const bool chained = f.kind == FusionKind::kCollective && step_.graph.node(f.root).collective.async;
      for (int in : f.inputs)
        if (async_done_[size_t(in)] != kNoInstr) {
          if (!(chained && async_done_[size_t(in)] == previous_)) wait(async_done_[size_t(in)]);
          settle(async_done_[size_t(in)]);
        }
      b0_.set_entry_deps(entry);
      if (f.kind == FusionKind::kCollective) {
        collective(f);
        continue;
      }
      if (f.kind == FusionKind::kHostCopy) {
        host_copy(f, entry);
        continue;
      }
      lower_fusion(split_[k] ? scx_ : cx_, f);
      last_kernel_ = f.name;
    }
    return std::move(collectives_);
  }

  uint64_t flops() const { return cx_.flops + scx_.flops; }
  uint64_t hbm_bytes() const { return cx_.hbm_bytes + scx_.hbm_bytes; }
  uint64_t cmem_bytes() const { return cx_.cmem_bytes + scx_.cmem_bytes; }
  uint64_t offloaded_bytes() const { return offloaded_bytes_; }
  uint64_t reloaded_bytes() const { return reloaded_bytes_; }

 private:
  void collective(const Fusion& f) {
    collectives_.push_back(emit_graph_collective(streams_, cx_, f, step_.cores, copt_, previous_));
    GraphCollective& c = collectives_.back();
    c.after_kernel = last_kernel_;
    // The emitters name the kernel after its kind; the op profile and trace show the node's name
    // (unique in the plan), as for every other kernel.
    isa::Program& prog = streams_.program();
    if (!prog.cores[0].kernels.empty()) prog.cores[0].kernels.back().name = isa::Label(f.name);
    if (c.background && c.done != kNoInstr) {
      previous_ = c.done;
      for (int x : kernel_outputs(f)) async_done_[size_t(x)] = c.done;
      in_flight_.insert(c.done);
      b0_.reserve_vmem_top(staging_bytes(copt_.piece_bytes));
    }
  }

  // A host copy runs in the background on the transfer queue: the next kernel does not wait for
  // it; its done (an offload) or its first reader (a reload) does.
  void host_copy(const Fusion& f, const isa::Deps& entry) {
    lower_fusion(cx_, f);
    const uint32_t x = b0_.size() - 1;  // the kernel's one transfer
    async_done_[size_t(f.root)] = x;
    b0_.set_entry_deps(entry);
    const bool offload = step_.graph.node(f.root).kind == OpKind::kHostOffload;
    (offload ? offloaded_bytes_ : reloaded_bytes_) += stored_bytes(step_.graph, f.root);
  }

  // A done: the next kernel waits for its collective, which is no longer under way after it.
  void await(const Fusion& f) {
    for (int x : kernel_outputs(f)) {
      const int c = step_.graph.node(x).inputs[0];
      const uint32_t done = async_done_[size_t(c)];
      if (done == kNoInstr) continue;  // a synchronous or lone-core collective: nothing to wait for
      if (std::find(pending_.begin(), pending_.end(), done) == pending_.end()) pending_.push_back(done);
      settle(done);
    }
  }

  // The collective ending at `done` is awaited: its results need no more waiting, and with no
  // collective under way the kernels get the staging VMEM back.
  void settle(uint32_t done) {
    for (uint32_t& d : async_done_)
      if (d == done) d = kNoInstr;
    in_flight_.erase(done);
    if (in_flight_.empty()) b0_.reserve_vmem_top(0);
  }

  const SpmdStep& step_;
  const FusionPlan& plan_;
  ReplicaStreams& streams_;
  ProgramBuilder& b0_;
  const std::vector<bool>& split_;
  LowerContext cx_, scx_;
  CollectiveOptions copt_;
  std::vector<uint32_t> async_done_;  // per node: the instruction ending the async collective writing it
  std::set<uint32_t> in_flight_;      // async collectives not yet awaited
  uint32_t previous_ = kNoInstr;      // the last async collective: they run one at a time
  isa::Deps pending_;                 // what the next kernel waits for (dones)
  std::string last_kernel_;
  std::vector<GraphCollective> collectives_;
  uint64_t offloaded_bytes_ = 0, reloaded_bytes_ = 0;
};

// step_memory_plan() of a step whose fusions are planned already.
MemoryPlan planned_step_memory(const SpmdStep& step, const FusionPlan& plan, const HwConfig& hw) {
  const uint32_t on_one_chip = most_on_one_chip(step.cores);
  const std::set<int> split_nodes(step.device_split.begin(), step.device_split.end());
  std::vector<const Fusion*> split;
  if (step.device_update && cores_per_device(hw.chip) > 1)
    for (const Fusion& f : plan.fusions)
      if (f.kind != FusionKind::kCollective && f.kind != FusionKind::kCollectiveDone && split_nodes.count(f.root))
        split.push_back(&f);
  return plan_step_memory(step, plan, hw, step.cmem_sharers ? step.cmem_sharers : on_one_chip, split);
}

// rematerialized() copies every field of a step but its graph: a field added to SpmdStep must be
// copied there too (x86-64 size).
static_assert(sizeof(SpmdStep) == 288, "SpmdStep changed: copy the new field in rematerialized(), then this size");

// The step with values recomputed (compiler/plan/rematerialize.h) until its plan fits the device's
// HBM or nothing more helps, in rounds (each round's estimate re-planned); nullopt when the first
// round finds nothing. `stats`: what was recomputed, over all rounds.
std::optional<SpmdStep> rematerialized(const SpmdStep& step, const FusionPlan& plan, const MemoryPlan& mp,
                                       const HwConfig& hw, Rematerialization* stats) {
  constexpr int kRounds = 4;
  const ResolvedHw r = resolve_hw(hw);
  std::optional<SpmdStep> cur;
  FusionPlan p = plan;
  MemoryPlan m = mp;
  *stats = {};
  stats->peak_bytes_before = mp.peak_bytes;
  for (int round = 0; round < kRounds && m.peak_bytes > r.device_hbm_bytes; ++round) {
    const SpmdStep& from = cur ? *cur : step;
    const std::set<int> fixed(from.device_split.begin(), from.device_split.end());
    std::optional<RematRewrite> rw = rematerialize(from.graph, p, m, r.device_hbm_bytes, r, fixed);
    if (!rw) break;
    SpmdStep next;
    next.cores = from.cores;
    next.prefetch_next_batch = from.prefetch_next_batch;
    next.piece_bytes = from.piece_bytes;
    next.algorithm = from.algorithm;
    next.device_update = from.device_update;
    next.cmem_sharers = from.cmem_sharers;
    next.key = from.key;
    next.rematerialize = false;
    const std::vector<int>& id = rw->new_id;
    for (const auto& [o, in] : from.donated) next.donated[id[size_t(o)]] = id[size_t(in)];
    for (int x : from.device_split) next.device_split.push_back(id[size_t(x)]);
    for (int x : from.gradients) next.gradients.push_back(id[size_t(x)]);
    for (int x : from.gathered_parameters) next.gathered_parameters.push_back(id[size_t(x)]);
    next.graph = std::move(rw->graph);
    FusionPlan fusions = plan_fusions(next.graph);
    MemoryPlan planned = planned_step_memory(next, fusions, hw);
    if (planned.peak_bytes >= m.peak_bytes) break;  // the estimate did not hold: keep the last
    stats->values += rw->stats.values;
    stats->bytes += rw->stats.bytes;
    stats->flops += rw->stats.flops;
    m = std::move(planned);
    p = std::move(fusions);
    cur = std::move(next);
  }
  return cur;
}

}  // namespace

CompiledStep compile_spmd_step(const SpmdStep& step, const HwConfig& hw, const std::string& name) {
  const models::Graph& g = step.graph;
  const uint32_t on_one_chip = most_on_one_chip(step.cores);
  const uint32_t sharers = step.cmem_sharers ? step.cmem_sharers : on_one_chip;
  CompiledStep out;
  out.key = step.key;
  out.hlo_ops = g.nodes().size();
  const FusionPlan plan = plan_fusions(g);
  for (const Fusion& f : plan.fusions) out.kernels += f.kind != FusionKind::kCollectiveDone;

  // The update's kernels of a megacore device (SpmdStep::device_split).
  const std::set<int> split_nodes(step.device_split.begin(), step.device_split.end());
  std::vector<bool> split(plan.fusions.size(), false);
  std::vector<const Fusion*> split_kernels;
  if (step.device_update && cores_per_device(hw.chip) > 1)
    for (size_t k = 0; k < plan.fusions.size(); ++k)
      if (plan.fusions[k].kind != FusionKind::kCollective && plan.fusions[k].kind != FusionKind::kCollectiveDone &&
          split_nodes.count(plan.fusions[k].root)) {
        split[k] = true;
        split_kernels.push_back(&plan.fusions[k]);
      }

  isa::Program& prog = out.program;
  prog.name = name;
  ReplicaStreams streams(prog, step.cores, hw.chip.core.vmem.size_bytes());
  const uint64_t infeed = emit_next_batch_infeed(streams.main(), g, step.prefetch_next_batch);
  out.infeed_bytes = step.prefetch_next_batch ? infeed : 0;
  out.memory = plan_step_memory(step, plan, hw, sharers, split_kernels);
  if (step.rematerialize && out.memory.peak_bytes > resolve_hw(hw).device_hbm_bytes) {
    Rematerialization stats;
    if (std::optional<SpmdStep> fitted = rematerialized(step, plan, out.memory, hw, &stats)) {
      CompiledStep c = compile_spmd_step(*fitted, hw, name);
      c.remat = stats;
      return c;
    }
  }
  for (const Fusion& f : plan.fusions)
    if (f.kind == FusionKind::kCollective) {
      const models::Node& n = g.node(f.root);
      const uint64_t bytes = kernel_collective_bytes(g, f);
      if (step.cores.size() <= 1 || n.collective.local()) continue;
      if (n.collective.op == CollectiveOp::kAllReduce) out.allreduce_bytes += bytes;
      if (n.collective.op == CollectiveOp::kAllGather) out.allgather_bytes += bytes;
      if (n.collective.op == CollectiveOp::kReduceScatter) out.reducescatter_bytes += bytes;
    }
  // Lowering a program that cannot be allocated would only spend time and memory (a 10^12-parameter
  // custom model lowers to billions of instructions).
  if (out.memory.peak_bytes > resolve_hw(hw).device_hbm_bytes) {
    out.lowered = false;
    prog.cores.clear();
    return out;
  }
  const models::Graph view = split_kernels.empty() ? models::Graph{} : share_view(g, split_kernels, cores_per_device(hw.chip));
  StepLowering lowering(step, hw, plan, streams, out.memory.cmem_node, split_kernels.empty() ? g : view, split);
  out.collectives = lowering.run();
  streams.finish();

  prog.info.flops = lowering.flops();
  prog.info.hbm_bytes = lowering.hbm_bytes();
  prog.info.cmem_bytes = lowering.cmem_bytes();
  prog.info.cmem_resident_bytes = out.memory.cmem_peak_bytes;
  out.host_offload_bytes = lowering.offloaded_bytes();
  out.host_reload_bytes = lowering.reloaded_bytes();
  prog.info.fusions = out.kernels;
  uint64_t min_bytes = 0;
  for (const auto& node : g.nodes())
    if (node.kind == OpKind::kParameter) min_bytes += stored_bytes(g, node.id);
  for (int o : g.outputs()) min_bytes += stored_bytes(g, o);
  prog.info.hbm_bytes_min = min_bytes;
  return out;
}

MemoryPlan step_memory_plan(const SpmdStep& step, const HwConfig& hw) {
  return planned_step_memory(step, plan_fusions(step.graph), hw);
}

CompiledStep compile_spmd_graph(models::Graph g, const HwConfig& hw, const std::string& name, std::vector<CoreId> cores,
                                std::map<int, int> donated) {
  SpmdStep s;
  s.graph = std::move(g);
  s.cores = std::move(cores);
  s.donated = std::move(donated);
  return compile_spmd_step(s, hw, name);
}

}  // namespace tpusim::compiler
