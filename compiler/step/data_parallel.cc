#include "compiler/step/data_parallel.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <string>

#include "compiler/collectives/collectives.h"
#include "compiler/lower/lowering.h"
#include "compiler/plan/fusion.h"
#include "compiler/step/device_assignment.h"
#include "compiler/step/partition.h"

namespace tpusim::compiler {

namespace {

// Replicas sharing one chip (and its CMEM): the most ring members on any chip.
uint32_t replicas_per_chip(const std::vector<CoreId>& ring) {
  std::map<uint32_t, uint32_t> on;
  uint32_t most = 0;
  for (const CoreId& c : ring) most = std::max(most, ++on[c.chip]);
  return most;
}

// Copies nodes of `from` into `to` in the order asked, each once, its inputs renamed: a gradient
// read after the all-reduces by its reduced value, anything else by its copy. With `movable` (which
// is `from`, to be discarded) it moves each node instead of copying it.
class Rewriter {
 public:
  Rewriter(const models::Graph& from, models::Graph& to, models::Graph* movable)
      : from_(from), to_(to), movable_(movable), id_(from.nodes().size(), -1), reduced_(from.nodes().size(), -1) {}

  // Copies `x` after whatever of its inputs is not copied yet.
  int ensure(int x) {
    if (id_[size_t(x)] >= 0) return id_[size_t(x)];
    for (int in : from_.node(x).inputs) ensure(in);
    models::Node c = movable_ ? movable_->take_node(x) : from_.node(x);
    for (int& in : c.inputs) in = reduced_[size_t(in)] >= 0 ? reduced_[size_t(in)] : id_[size_t(in)];
    return id_[size_t(x)] = to_.append_copy(std::move(c));
  }
  void reduce(int grad, int value) { reduced_[size_t(grad)] = value; }
  int id(int x) const { return id_[size_t(x)]; }

 private:
  const models::Graph& from_;
  models::Graph& to_;
  models::Graph* movable_;
  std::vector<int> id_;
  std::vector<int> reduced_;  // gradient -> its all-reduced value (-1: none)
};

}  // namespace

void shard_data_parallel(models::Graph& g, const std::vector<int>& grads) {
  for (int gr : grads) {
    models::TensorSharding s = g.node(gr).sharding;
    s.partial |= models::TensorSharding::partial_over(models::MeshAxis::kData).partial;
    g.set_sharding(gr, s);
  }
}

CacheKey step_cache_key(const DataParallelStep& step) {
  std::vector<int> donated_inputs;
  for (const auto& [out, in] : step.donated) donated_inputs.push_back(in);
  return graph_cache_key(*step.graph, donated_inputs);
}

std::vector<std::vector<int>> gradient_buckets(const models::Graph& g, std::vector<int> grads,
                                              const std::vector<size_t>& producer, uint64_t bucket_bytes) {
  // In the order the kernels produce them (the fusion plan's kernel order, which is a topological
  // order but not that of the node ids: a bias gradient may come kernels later than its weight's).
  std::sort(grads.begin(), grads.end(), [&](int a, int b) {
    return std::pair(producer[size_t(a)], a) < std::pair(producer[size_t(b)], b);
  });
  std::vector<std::vector<int>> buckets;
  uint64_t filled = 0;
  for (int gr : grads) {
    const uint64_t bytes = stored_bytes(g, gr);
    if (buckets.empty() || filled + bytes > bucket_bytes) {
      buckets.push_back({});
      filled = 0;
    }
    buckets.back().push_back(gr);
    filled += bytes;
  }
  return buckets;
}

namespace {

SpmdStep write_step(const DataParallelStep& step, models::Graph* movable, const HwConfig& hw, uint32_t replicas) {
  const models::Graph& g = *step.graph;
  SpmdStep s;
  s.cores = ring_order(hw);
  s.cmem_sharers = replicas_per_chip(s.cores);  // of the whole slice: a 1-replica compile places what each does
  if (replicas > 0 && replicas < s.cores.size()) s.cores.resize(replicas);
  const uint32_t n = uint32_t(s.cores.size());
  if (step.mesh.devices() == n) s.cores = replica_cores(hw, step.mesh, models::MeshAxis::kData);
  s.key = step_cache_key(step);
  s.prefetch_next_batch = step.prefetch_next_batch;
  s.piece_bytes = step.allreduce_piece_bytes;
  s.algorithm = step.allreduce_algorithm;
  s.device_update = cores_per_device(hw.chip) > 1;

  // The gradients: the values the partitioner all-reduces over the data axis for their readers.
  std::vector<int> grad_list;
  Reshard reduce;  // each one's collective (the same for all)
  for (const ReshardEdge& e : partition_edges(g)) {
    if (e.how.op != models::CollectiveOp::kAllReduce || e.how.axis != models::MeshAxis::kData)
      throw std::invalid_argument("data_parallel_step: node '" + g.node(e.value).name + "' (" +
                                  describe(g.node(e.value).sharding) + ") needs a " + models::collective_op_name(e.how.op) +
                                  " along " + enum_name(e.how.axis) + " for '" + g.node(e.readers.front()).name +
                                  "' (" + describe(e.to) + "), not an all-reduce over the data axis");
    grad_list.push_back(e.value);
    reduce = e.how;
  }
  models::Mesh mesh = step.mesh.devices() > 1 ? step.mesh : models::Mesh::along(models::MeshAxis::kData, n);
  mesh.slices = step.mesh.slices;
  if (mesh.devices() != n)
    throw std::invalid_argument("data_parallel_step: a mesh of " + std::to_string(mesh.devices()) + " devices on " +
                                std::to_string(n) + " replicas");

  // The update: what reads (transitively) a gradient runs after the all-reduces.
  FusionPlan planned_here;
  const FusionPlan& plan = step.fusions ? *step.fusions : (planned_here = plan_fusions(g));
  const std::set<int> grads(grad_list.begin(), grad_list.end());
  std::vector<bool> after(g.nodes().size(), false);
  for (const auto& node : g.nodes())  // node ids are topological
    for (int in : node.inputs)
      if (grads.count(in) || after[size_t(in)]) after[size_t(node.id)] = true;
  std::vector<const Fusion*> pre, post;
  for (const auto& f : plan.fusions) (after[size_t(f.root)] && !grads.count(f.root) ? post : pre).push_back(&f);

  // The combined all-reduces and the backward kernel after which each can start (they start one
  // after another).
  std::vector<size_t> producer(g.nodes().size(), pre.empty() ? 0 : pre.size() - 1);
  for (size_t k = 0; k < pre.size(); ++k)
    for (int r : kernel_outputs(*pre[k])) producer[size_t(r)] = k;
  std::vector<std::vector<int>> buckets;
  std::vector<size_t> ready;
  if (!grad_list.empty() && (mesh[models::MeshAxis::kData] > 1 || mesh.slices > 1)) buckets = gradient_buckets(g, grad_list, producer, step.allreduce_bucket_bytes);
  for (const auto& b : buckets) {
    size_t r = ready.empty() ? 0 : ready.back();
    for (int gr : b) r = std::max(r, producer[size_t(gr)]);
    ready.push_back(r);
  }

  models::Graph& out = s.graph;
  Rewriter rw(g, out, movable);
  for (const auto& node : g.nodes())  // parameters and literals first, in their order
    if (node.kind == models::OpKind::kParameter || node.kind == models::OpKind::kConstant) rw.ensure(node.id);
  auto emit_kernel = [&](const Fusion& f) {
    for (int x : f.nodes) rw.ensure(x);
    for (int x : kernel_outputs(f)) rw.ensure(x);
  };
  const bool overlap = step.overlap_allreduce;
  std::map<int, int> allreduce_of;  // gradient -> its all-reduce node
  auto emit_allreduce = [&](size_t b) {
    models::CollectiveAttrs a = collective_attrs(reduce, mesh);
    a.async = overlap;
    a.combine = buckets[b].size() > 1 ? int64_t(b) : -1;
    // The gradients first (one the backward pass fused into the update has its own kernel now, a
    // collective's operand), then the parts, consecutive (a combined collective's rule).
    for (int gr : buckets[b]) rw.ensure(gr);
    for (int gr : buckets[b]) {
      allreduce_of[gr] = out.collective(rw.id(gr), a, "all-reduce");
      if (!overlap) rw.reduce(gr, allreduce_of[gr]);
    }
  };
  size_t next = 0;
  for (size_t k = 0; k < pre.size(); ++k) {
    emit_kernel(*pre[k]);
    for (; overlap && next < buckets.size() && ready[next] == k; ++next) emit_allreduce(next);
  }
  for (; next < buckets.size(); ++next) emit_allreduce(next);
  if (overlap)  // the update awaits every all-reduce
    for (const auto& b : buckets)
      for (int gr : b) rw.reduce(gr, out.collective_done(allreduce_of[gr], "all-reduce-done"));
  for (const Fusion* f : post) emit_kernel(*f);
  for (const auto& node : g.nodes()) rw.ensure(node.id);  // what no kernel computes
  for (int o : g.outputs()) out.mark_output(rw.id(o));
  out.set_scheduled(true);

  for (const auto& [o, in] : step.donated) s.donated[rw.id(o)] = rw.id(in);
  for (int gr : grad_list) s.gradients.push_back(rw.id(gr));
  for (const auto& node : g.nodes())
    if (after[size_t(node.id)] && !grads.count(node.id)) s.device_split.push_back(rw.id(node.id));
  return s;
}

}  // namespace

SpmdStep data_parallel_step(const DataParallelStep& step, const HwConfig& hw, uint32_t replicas) {
  return write_step(step, nullptr, hw, replicas);
}

SpmdStep data_parallel_step(const DataParallelStep& step, models::Graph&& graph, const HwConfig& hw, uint32_t replicas) {
  if (step.graph != &graph) throw std::logic_error("data_parallel_step: `graph` must be the step's graph");
  return write_step(step, &graph, hw, replicas);
}

}  // namespace tpusim::compiler
