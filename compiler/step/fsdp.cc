#include "compiler/step/fsdp.h"

#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <utility>

#include "compiler/collectives/collectives.h"
#include "compiler/plan/fusion.h"
#include "compiler/step/device_assignment.h"
#include "compiler/step/partition.h"

namespace tpusim::compiler {

namespace {

using models::CollectiveAttrs;
using models::CollectiveOp;
using models::Graph;
using models::OpKind;

enum Phase { kForward = 0, kBackward = 1 };

models::Mesh fsdp_mesh(const FsdpStep& st) {
  models::Mesh m = st.mesh.devices() > 1 ? st.mesh : models::Mesh::along(models::MeshAxis::kFsdp, st.cores);
  m.slices = st.mesh.slices;
  return m;
}

// Writes the step graph and the optimizer graph of an FSDP step into one graph, slot by slot of the
// schedule, with the units' parameters read from their all-gathers and the update's gradient slices
// from the reduce-scatters.
class StepWriter {
 public:
  StepWriter(const FsdpStep& st, const FusionPlan& plan, Graph& out)
      : st_(st), g_(*st.graph), og_(*st.optimizer_graph), plan_(plan), out_(out),
        mesh_(fsdp_mesh(st)), gid_(g_.nodes().size(), -1),
        oid_(og_.nodes().size(), -1), unit_of_(g_.nodes().size(), -1), part_{std::vector<int>(g_.nodes().size(), -1),
                                                                           std::vector<int>(g_.nodes().size(), -1)} {
    for (size_t u = 0; u < st.units.size(); ++u) {
      for (int p : st.units[u].params) unit_of_[size_t(p)] = int(u);
      if (st.units[u].grad_shard >= 0) grad_shard_unit_[st.units[u].grad_shard] = int(u);
    }
    rs_value_.assign(st.units.size(), -1);
    // The program's inputs first, in their order: the step graph's (not the units' parameters,
    // which the all-gathers bring) and the update's (not the gradient slices, the reduce-scatters').
    for (const models::Node& n : g_.nodes())
      if ((n.kind == OpKind::kParameter && unit_of_[size_t(n.id)] < 0) || n.kind == OpKind::kConstant) copy(n.id, kForward);
    for (const models::Node& n : og_.nodes())
      if ((n.kind == OpKind::kParameter && !grad_shard_unit_.count(n.id)) || n.kind == OpKind::kConstant) ocopy(n.id);
  }

  // Kernel `f` of the step graph: its nodes, reading its phase's gathered parameters.
  void kernel(const Fusion& f) {
    const Phase ph = f.root > st_.last_forward ? kBackward : kForward;
    for (int x : f.nodes) copy(x, ph);
    for (int x : kernel_outputs(f)) copy(x, ph);
  }
  void optimizer_kernel(const Fusion& f) {
    for (int x : f.nodes) ocopy(x);
    for (int x : kernel_outputs(f)) ocopy(x);
  }

  // Unit u's flat all-gather for phase `ph` (parts: its parameters, whole along fsdp where the
  // kernels read them — a tensor replica's share under fsdp x tensor —, from the shard split along
  // the fsdp axis).
  void all_gather(int u, Phase ph, bool async) {
    const FsdpUnit& unit = st_.units[size_t(u)];
    const models::Node& first = g_.node(unit.params.front());
    CollectiveAttrs a = attrs(og_.node(unit.shard), first, models::TensorSharding::whole(), CollectiveOp::kAllGather);
    a.async = async_ = async;
    a.combine = next_combine_++;
    for (int p : unit.params) {
      // Named by the collective, as the op profile lists it (one row for all the units' gathers).
      const int x = out_.flat_all_gather(oid_.at(size_t(unit.shard)), g_.node(p).shape, a, "all-gather");
      part_[ph][size_t(p)] = x;
      gathered_.push_back(x);
    }
  }
  // Where the kernels after it read unit u's phase-`ph` parameters: its all-gather-done.
  void await_gather(int u, Phase ph) {
    if (!async_ || !awaited_.insert({u, ph}).second) return;  // a synchronous gather is its own value
    for (int p : st_.units[size_t(u)].params)
      part_[ph][size_t(p)] = out_.collective_done(part_[ph][size_t(p)], "all-gather-done");
  }
  // Unit u's flat reduce-scatter of its gradients (partial sums) into its slice (split along the
  // fsdp axis). With a data axis beside fsdp (hybrid sharding: PyTorch's HYBRID_SHARD, MaxText's
  // ici_data x ici_fsdp) the slice is a partial sum over the data axis still: an all-reduce of it
  // over the data group follows (right after, on the background queue when async), and it is the
  // one that spans the slices (multislice) instead of the reduce-scatter.
  void reduce_scatter(int u, bool async) {
    const FsdpUnit& unit = st_.units[size_t(u)];
    std::vector<int> grads;
    for (int gr : unit.grads) grads.push_back(copy(gr, kBackward));
    const models::Node& slice = og_.node(unit.grad_shard);
    CollectiveAttrs a = attrs(g_.node(unit.grads.front()), slice, slice.sharding, CollectiveOp::kReduceScatter);
    a.async = async;
    if (hybrid_) a.slices = 1;
    rs_value_[size_t(u)] = out_.flat_reduce_scatter(grads, og_.node(unit.grad_shard).shape.at(0), a, "reduce-scatter");
    gradients_.insert(gradients_.end(), grads.begin(), grads.end());
    gradients_.push_back(rs_value_[size_t(u)]);
    if (hybrid_) {
      CollectiveAttrs d = collective_attrs(Reshard{CollectiveOp::kAllReduce, models::MeshAxis::kData}, mesh_);
      d.async = async;
      rs_value_[size_t(u)] = out_.collective(rs_value_[size_t(u)], d, "all-reduce");
      gradients_.push_back(rs_value_[size_t(u)]);
    }
  }
  void await_reduce_scatter(int u) {
    rs_value_[size_t(u)] = out_.collective_done(rs_value_[size_t(u)], hybrid_ ? "all-reduce-done" : "reduce-scatter-done");
  }

  // The outputs (the step graph's but its gradients, which the reduce-scatters take; the update's)
  // and the donated buffers, into `s`.
  void finish(SpmdStep& s) {
    std::set<int> grads;
    for (const FsdpUnit& u : st_.units) grads.insert(u.grads.begin(), u.grads.end());
    for (int o : g_.outputs())
      if (!grads.count(o)) out_.mark_output(copy(o, kForward));
    for (int o : og_.outputs()) out_.mark_output(ocopy(o));
    for (const auto& [o, in] : st_.donated) s.donated[ocopy(o)] = ocopy(in);
    s.gradients = gradients_;
    s.gathered_parameters = gathered_;
  }

 private:
  // Node x of the step graph as phase `ph` reads it. A value a kernel writes is one node; a value
  // computed inside each consumer's kernel (not materialized) is copied per phase, so that the
  // backward's copy reads the backward's gathered parameters.
  int copy(int x, Phase ph) {
    if (unit_of_[size_t(x)] >= 0) {
      const int p = part_[ph][size_t(x)];
      return p >= 0 ? p : part_[kForward].at(size_t(x));  // a whole-step unit: its forward gather
    }
    const models::Node& n = g_.node(x);
    const bool shared = plan_.materialized[size_t(x)] || n.kind == OpKind::kParameter || n.kind == OpKind::kConstant;
    if (shared && gid_[size_t(x)] >= 0) return gid_[size_t(x)];
    if (!shared)
      if (auto it = dup_.find({x, ph}); it != dup_.end()) return it->second;
    // A kernel's value is in the phase of its node; a recomputed one in its reader's.
    const Phase own = shared ? (x > st_.last_forward ? kBackward : kForward) : ph;
    models::Node c = n;
    for (int& in : c.inputs) in = copy(in, own);
    const int id = out_.append_copy(std::move(c));
    (shared ? gid_[size_t(x)] : dup_[{x, ph}]) = id;
    return id;
  }
  int ocopy(int x) {
    if (auto u = grad_shard_unit_.find(x); u != grad_shard_unit_.end()) return rs_value_.at(size_t(u->second));
    if (oid_[size_t(x)] >= 0) return oid_[size_t(x)];
    models::Node c = og_.node(x);
    for (int& in : c.inputs) in = ocopy(in);
    return oid_[size_t(x)] = out_.append_copy(std::move(c));
  }

  // The collective the partitioner's rule gives for `from`'s value read as `to` with sharding
  // `as` (its attributes on the mesh): an FSDP step's must be `op`.
  CollectiveAttrs attrs(const models::Node& from, const models::Node& to, const models::TensorSharding& as,
                        CollectiveOp op) const {
    const std::optional<Reshard> r = reshard(from.sharding, as);
    if (!r || r->op != op)
      throw std::logic_error("fsdp_step: " + from.name + " -> " + to.name + " is not resharded by a " + models::collective_op_name(op));
    return collective_attrs(*r, mesh_);
  }

  const FsdpStep& st_;
  const Graph& g_;
  const Graph& og_;
  const FusionPlan& plan_;
  Graph& out_;
  const models::Mesh mesh_;  // {fsdp: cores}, or fsdp x tensor, data x fsdp
  const bool hybrid_ = mesh_[models::MeshAxis::kData] > 1;  // a data axis beside fsdp
  std::vector<int> gid_, oid_, unit_of_;
  std::map<std::pair<int, int>, int> dup_;  // (node, phase) -> its copy, for values recomputed per kernel
  std::vector<int> part_[2];                // per phase, per unit parameter: the value the kernels read
  std::map<int, int> grad_shard_unit_;      // the update's gradient-slice parameter -> its unit
  std::vector<int> rs_value_;               // per unit: its gradient slice (reduce-scatter or its done)
  std::set<std::pair<int, int>> awaited_;
  std::vector<int> gradients_, gathered_;
  int64_t next_combine_ = 0;
  bool async_ = false;  // the gathers run beside the kernels (each awaited by its first reader)
};

}  // namespace

SpmdStep fsdp_step(const FsdpGraphs& f, const HwConfig& hw) {
  const FsdpStep& st = f.step;
  std::vector<CoreId> ring = ring_order(hw);
  const models::Mesh mesh = fsdp_mesh(st);
  if (st.cores < 1 || mesh[models::MeshAxis::kFsdp] != st.cores || mesh.devices() > ring.size())
    throw std::invalid_argument("fsdp_step: the slices were cut for " + std::to_string(st.cores) + " cores of a mesh of " +
                                std::to_string(mesh.devices()) + "; the slice has " + std::to_string(ring.size()));
  const uint32_t n = st.cores;
  SpmdStep s;
  s.cores = replica_cores(hw, mesh, models::MeshAxis::kFsdp);
  s.key = fsdp_step_cache_key(st);
  s.prefetch_next_batch = st.prefetch_next_batch;
  s.piece_bytes = st.piece_bytes;

  const FusionPlan plan = plan_fsdp_fusions(*st.graph), oplan = plan_fsdp_fusions(*st.optimizer_graph);
  const FsdpSchedule sched = schedule_fsdp_step(st, plan, oplan);
  const bool async = st.overlap && n > 1;
  StepWriter w(st, plan, s.graph);
  // With overlap: the gathers a kernel waits for, awaited just before it; the reduce-scatters,
  // awaited before the update (a reduce-scatter's gradients are free once it ends, which the next
  // collective's start implies: compiler/plan/fusion.h).
  std::vector<std::pair<int, Phase>> gather_at(sched.slots.size(), {-1, kForward});
  for (size_t u = 0; u < st.units.size(); ++u) {
    if (sched.gather_fwd[u] >= 0) gather_at[size_t(sched.gather_fwd[u])] = {int(u), kForward};
    if (sched.gather_bwd[u] >= 0) gather_at[size_t(sched.gather_bwd[u])] = {int(u), kBackward};
  }
  std::vector<int> rs_pending;  // reduce-scatters not awaited yet
  auto await_reduce_scatters = [&] {
    for (int u : rs_pending) w.await_reduce_scatter(u);
    rs_pending.clear();
  };
  for (size_t si = 0; si < sched.slots.size(); ++si) {
    const FsdpSlot& slot = sched.slots[si];
    switch (slot.kind) {
      case FsdpSlot::kKernel:
        for (int g : sched.waits[si]) w.await_gather(gather_at[size_t(g)].first, gather_at[size_t(g)].second);
        w.kernel(plan.fusions[size_t(slot.index)]);
        break;
      case FsdpSlot::kOptimizerKernel:
        await_reduce_scatters();
        w.optimizer_kernel(oplan.fusions[size_t(slot.index)]);
        break;
      case FsdpSlot::kAllGather:
        w.all_gather(slot.index, gather_at[si].second, async);
        break;
      case FsdpSlot::kReduceScatter:
        w.reduce_scatter(slot.index, async);
        if (async) rs_pending.push_back(slot.index);
        break;
    }
  }
  await_reduce_scatters();
  w.finish(s);
  s.graph.set_scheduled(true);
  return s;
}

}  // namespace tpusim::compiler
