#include "compiler/step/partition.h"

#include <algorithm>
#include <bit>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>

#include "compiler/step/sharding_rules.h"

namespace tpusim::compiler {

using models::MeshAxis;
using models::TensorSharding;

std::string describe(const TensorSharding& s) {
  if (s.is_whole()) return "whole";
  std::string out;
  for (int a = 0; a < models::kMeshAxes; ++a) {
    if (s.is_partial_over(MeshAxis(a))) out += std::string(out.empty() ? "" : ", ") + "partial over " + enum_name(MeshAxis(a));
    if (s.is_partial_max_over(MeshAxis(a)))
      out += std::string(out.empty() ? "" : ", ") + "partial maximum over " + enum_name(MeshAxis(a));
  }
  for (int d = 0; d < TensorSharding::kMaxRank; ++d)
    if (auto a = s.axis_of(d))
      out += std::string(out.empty() ? "" : ", ") + "dim " + std::to_string(d) + " split along " + enum_name(*a);
  return out;
}

namespace {

[[noreturn]] void refuse(const TensorSharding& from, const TensorSharding& to, const char* why) {
  throw std::invalid_argument("reshard: from " + describe(from) + " to " + describe(to) + ": " + why);
}

// The one axis of a partial sum or maximum; refuses several.
MeshAxis partial_axis(const TensorSharding& from, const TensorSharding& to) {
  if (std::popcount(unsigned(from.partial)) != 1) refuse(from, to, "a partial sum over several axes at once");
  return MeshAxis(std::countr_zero(unsigned(from.partial)) % 4);
}

}  // namespace

std::optional<Reshard> reshard(const TensorSharding& from, const TensorSharding& to) {
  if (from == to) return std::nullopt;
  if (to.partial != 0) refuse(from, to, "a value cannot be made a partial sum by a collective");
  // Per dimension: unchanged, sliced (whole -> split: each replica keeps its block, no
  // communication) or gathered (split -> whole).
  std::vector<int> gathered, sliced;
  for (int d = 0; d < TensorSharding::kMaxRank; ++d) {
    const std::optional<MeshAxis> was = from.axis_of(d), now = to.axis_of(d);
    if (was == now) continue;
    if (was && now) refuse(from, to, "a dimension moves from one axis to another (an all-to-all; not modelled)");
    (was ? gathered : sliced).push_back(d);
  }
  if (from.partial != 0) {
    const MeshAxis a = partial_axis(from, to);
    const models::ReduceOp op = from.is_partial_max_over(a) ? models::ReduceOp::kMax : models::ReduceOp::kSum;
    if (!gathered.empty()) refuse(from, to, "a partial sum is gathered (reduce it first)");
    for (int d : sliced)
      if (to.axis_of(d) == a) return Reshard{models::CollectiveOp::kReduceScatter, a, d, op};
    return Reshard{models::CollectiveOp::kAllReduce, a, -1, op};
  }
  if (gathered.empty()) return std::nullopt;
  if (gathered.size() > 1) refuse(from, to, "two dimensions are gathered at once (reshard in steps)");
  return Reshard{models::CollectiveOp::kAllGather, *from.axis_of(gathered[0]), gathered[0]};
}

models::CollectiveAttrs collective_attrs(const Reshard& r, const models::Mesh& mesh) {
  models::CollectiveAttrs a;
  a.op = r.op;
  a.replicas = mesh.devices();
  a.groups = axis_groups(mesh, r.axis);
  a.dim = r.dim;
  a.reduce = r.reduce;
  a.axis = r.axis;
  // The slices split the batch further (Mesh::slices): a sum over a batch axis spans them too.
  const bool reduces = r.op == models::CollectiveOp::kAllReduce || r.op == models::CollectiveOp::kReduceScatter;
  if (reduces && r.reduce == models::ReduceOp::kSum && (r.axis == MeshAxis::kData || r.axis == MeshAxis::kFsdp))
    a.slices = mesh.slices;
  return a;
}

namespace {

// A partial sum goes on only into a reader that is one itself (propagated or annotated so); a
// reader left whole reads it reduced. A collective reads its operand as it is: it is the reshard.
TensorSharding carried_only_into_partial(TensorSharding to, const models::Node& reader) {
  if (reader.kind == models::OpKind::kCollective || reader.kind == models::OpKind::kCollectiveDone) return to;
  if (to.partial != 0 && reader.sharding.partial != to.partial) to.partial = 0;
  return to;
}

}  // namespace

std::vector<ReshardEdge> partition_edges(const models::Graph& g) {
  std::vector<ReshardEdge> edges;
  std::map<std::pair<int, uint64_t>, size_t> at;  // (value, target sharding) -> its edge
  for (const models::Node& r : g.nodes()) {
    bool sharded = false;  // the common case, every operand whole: nothing to reshard
    for (int x : r.inputs) sharded = sharded || !g.node(x).sharding.is_whole();
    if (!sharded) continue;
    const OpSharding rule = op_sharding(g, r);
    for (size_t i = 0; i < r.inputs.size(); ++i) {
      const int x = r.inputs[i];
      const TensorSharding to = carried_only_into_partial(rule.operands[i], r);
      const std::optional<Reshard> how = reshard(g.node(x).sharding, to);
      if (!how) continue;
      const std::pair<int, uint64_t> key{x, uint64_t(to.split) << 8 | to.partial};
      auto [it, fresh] = at.try_emplace(key, edges.size());
      if (fresh) edges.push_back({x, to, *how, {}});
      std::vector<int>& readers = edges[it->second].readers;
      if (readers.empty() || readers.back() != r.id) readers.push_back(r.id);  // readers come in id order
    }
  }
  std::sort(edges.begin(), edges.end(), [](const ReshardEdge& a, const ReshardEdge& b) {
    return std::pair(a.value, uint64_t(a.to.split) << 8 | a.to.partial) < std::pair(b.value, uint64_t(b.to.split) << 8 | b.to.partial);
  });
  return edges;
}

models::Graph with_collectives(const models::Graph& g, const models::Mesh& mesh, MeshAxis axis, std::vector<int>* id) {
  std::map<std::pair<int, int>, size_t> edge_of;  // (value, reader) -> its edge
  const std::vector<ReshardEdge> edges = partition_edges(g);
  for (size_t e = 0; e < edges.size(); ++e) {
    if (edges[e].how.axis != axis) continue;
    if (edges[e].how.op != models::CollectiveOp::kAllReduce)
      throw std::logic_error("with_collectives: node '" + g.node(edges[e].value).name + "' (" +
                             describe(g.node(edges[e].value).sharding) + ") needs a " +
                             models::collective_op_name(edges[e].how.op) + " along " + enum_name(axis) + " for '" +
                             g.node(edges[e].readers.front()).name + "' (" + describe(edges[e].to) +
                             "): the graph's local shapes disagree with its shardings");
    for (int r : edges[e].readers) edge_of[{edges[e].value, r}] = e;
  }
  models::Graph out;
  for (const std::string& name : g.groups()) out.add_group(name);
  std::vector<int> ids(g.nodes().size(), -1);
  std::vector<int> made(edges.size(), -1);  // edge -> its collective node
  for (const models::Node& n : g.nodes()) {
    models::Node c = n;
    for (int& in : c.inputs) {
      const auto it = edge_of.find({in, n.id});
      const int x = ids[size_t(in)];
      if (it == edge_of.end()) {
        in = x;
        continue;
      }
      int& coll = made[it->second];
      if (coll < 0) {
        const ReshardEdge& e = edges[it->second];
        coll = out.collective(x, collective_attrs(e.how, mesh), g.node(e.value).name + ".all-reduce");
        out.set_sharding(coll, e.to);
      }
      in = coll;
    }
    ids[size_t(n.id)] = out.append_copy(std::move(c));
  }
  for (int o : g.outputs()) out.mark_output(ids[size_t(o)]);
  out.set_scheduled(g.scheduled());
  if (id) *id = std::move(ids);
  return out;
}

models::Mesh core_mesh(models::Mesh mesh, uint32_t cores_per_device, models::MeshAxis batch) {
  mesh.size[size_t(batch)] *= cores_per_device;
  return mesh;
}

}  // namespace tpusim::compiler
