#include "compiler/hlo/hlo_import_collectives.h"

#include <algorithm>
#include <exception>
#include <optional>
#include <set>

#include "compiler/hlo/hlo_attrs.h"
#include "compiler/hlo/hlo_error.h"

namespace tpusim::hlo {

using models::CollectiveOp;

namespace {

// The collective of an opcode, with or without its -start suffix.
std::optional<CollectiveOp> op_of(std::string_view op) {
  constexpr std::string_view start = "-start";
  if (op.size() > start.size() && op.substr(op.size() - start.size()) == start) op.remove_suffix(start.size());
  if (op == "all-reduce") return CollectiveOp::kAllReduce;
  if (op == "all-gather") return CollectiveOp::kAllGather;
  if (op == "reduce-scatter") return CollectiveOp::kReduceScatter;
  if (op == "all-to-all") return CollectiveOp::kAllToAll;
  if (op == "collective-permute") return CollectiveOp::kCollectivePermute;
  return std::nullopt;
}

bool is_start(std::string_view op) { return op.ends_with("-start"); }

// to_apply of a reducing collective: add or maximum of its two parameters exactly; minimum as
// maximum, anything else (multiply, and, or, ...) as a sum: the same transfers and one VPU op per
// element either way.
models::ReduceOp reduction(const Module& m, const Instruction& in, std::vector<std::string>& notes) {
  if (in.called.empty()) {
    notes.push_back("no to_apply: reduced as a sum");
    return models::ReduceOp::kSum;
  }
  const std::string& op = m.computations.at(in.called[0]).root_instruction().opcode;
  if (op == "add") return models::ReduceOp::kSum;
  if (op == "maximum") return models::ReduceOp::kMax;
  if (op == "minimum") {
    notes.push_back("reduction minimum as maximum (same transfers and VPU work)");
    return models::ReduceOp::kMax;
  }
  notes.push_back("reduction '" + op + "' as a sum (same transfers and VPU work)");
  return models::ReduceOp::kSum;
}

// The attributes of collective `in` (replica groups or pairs, dimension, reduction); nullopt, with
// r.not_modelled set, when they are not a collective's.
std::optional<models::CollectiveAttrs> attrs_of(const Module& m, const Instruction& in, CollectiveOp op, int64_t replicas,
                                                ImportedCollective& r) {
  models::CollectiveAttrs a;
  a.op = op;
  a.replicas = replicas;
  a.async = is_start(in.opcode);
  if (op == CollectiveOp::kCollectivePermute) {
    a.pairs = source_target_pairs_attr(m, in).value_or(std::vector<std::pair<int64_t, int64_t>>{});
  } else {
    a.groups = replica_groups_attr(m, in).value_or(std::vector<std::vector<int64_t>>{});
  }
  if (op == CollectiveOp::kAllReduce || op == CollectiveOp::kReduceScatter) a.reduce = reduction(m, in, r.notes);
  if (op == CollectiveOp::kAllGather || op == CollectiveOp::kReduceScatter || op == CollectiveOp::kAllToAll) {
    const std::vector<int64_t> d = int_list_attr(m, in, "dimensions").value_or(std::vector<int64_t>{});
    if (d.size() != 1) {
      r.not_modelled = "a " + std::string(models::collective_op_name(op)) + " needs dimensions={d} (one dimension)";
      return std::nullopt;
    }
    a.dim = int(std::clamp<int64_t>(d[0], -1, 1 << 20));
  }
  return a;
}

// One group of every replica in order, in the empty form (a flat collective's).
void one_group(models::CollectiveAttrs& a) {
  if (a.groups.size() != 1 || int64_t(a.groups[0].size()) != a.replicas) return;
  for (size_t i = 0; i < a.groups[0].size(); ++i)
    if (a.groups[0][i] != int64_t(i)) return;
  a.groups.clear();
}

}  // namespace

bool is_collective_opcode(std::string_view op) { return op_of(op).has_value() || is_collective_done(op); }

bool is_collective_done(std::string_view op) {
  return op == "all-reduce-done" || op == "all-gather-done" || op == "collective-permute-done";
}

ImportedCollective import_collective(const Module& m, const Instruction& in, const std::vector<int>& operands,
                                     int64_t replicas, models::Graph& g) {
  ImportedCollective r;
  const std::optional<CollectiveOp> op = op_of(in.opcode);
  if (!op) {
    r.not_modelled = "'" + in.opcode + "' is not a collective the importer knows";
    return r;
  }
  if (operands.empty()) {
    r.not_modelled = "a collective without operands";
    return r;
  }
  for (int o : operands)
    if (o < 0) {
      r.not_modelled = "an operand has no graph value";
      return r;
    }
  // The shape of the results: the instruction's, or element 1 of a -start's (operands, results).
  r.start_tuple = is_start(in.opcode) && *op != CollectiveOp::kAllReduce;
  const Shape* result = &in.shape;
  if (r.start_tuple) {
    if (!in.shape.is_tuple() || in.shape.tuple.size() < 2) {
      r.not_modelled = in.opcode + " without the (operands, results) tuple shape";
      return r;
    }
    result = &in.shape.tuple[1];
  }
  r.tuple_result = result->is_tuple();
  std::vector<const Shape*> leaves;
  if (r.tuple_result)
    for (const Shape& s : result->tuple) leaves.push_back(&s);
  else
    leaves.push_back(result);
  if (leaves.size() != operands.size()) {
    r.not_modelled = "the result has " + std::to_string(leaves.size()) + " parts for " +
                     std::to_string(operands.size()) + " operands (the tuple all-to-all is not modelled)";
    return r;
  }

  const std::optional<models::CollectiveAttrs> attrs = attrs_of(m, in, *op, replicas, r);
  if (!attrs) return r;
  models::CollectiveAttrs a = *attrs;
  // Every part checked on a scratch graph first, so that a misfit leaves no collective behind.
  for (size_t i = 0; i < operands.size(); ++i) {
    models::Graph probe;
    const models::Node& x = g.node(operands[i]);
    try {
      const int node = probe.collective(probe.parameter("x", x.shape, x.dtype), a);
      if (probe.node(node).shape != leaves[i]->dims) {
        r.not_modelled = "the collective's shape differs from the declared " + leaves[i]->to_string() + " (group of " +
                         std::to_string(a.group_size()) + " of " + std::to_string(replicas) + " replicas)";
        return r;
      }
    } catch (const std::exception& e) {
      r.not_modelled = std::string("the collective does not fit its operands (") + e.what() + ")";
      return r;
    }
  }
  // A tuple-shaped collective of several operands (XLA's combiner's) is one transfer: its parts
  // share an id (the first part's node id, unique in the graph).
  if (operands.size() > 1) a.combine = int64_t(g.nodes().size());
  for (int o : operands) r.results.push_back(g.collective(o, a, in.name));
  return r;
}

ImportedCollective import_flat_gather(const Module& m, const Instruction& in, int shard, const std::vector<models::Dims>& dims,
                                      int64_t replicas, models::Graph& g) {
  ImportedCollective r;
  r.start_tuple = is_start(in.opcode);
  r.tuple_result = true;
  std::optional<models::CollectiveAttrs> a = attrs_of(m, in, CollectiveOp::kAllGather, replicas, r);
  if (!a) return r;
  one_group(*a);
  a->combine = int64_t(g.nodes().size());  // unique: the first part's id
  for (const models::Dims& d : dims) r.results.push_back(g.flat_all_gather(shard, d, *a, in.name));
  return r;
}

ImportedCollective import_flat_scatter(const Module& m, const Instruction& rs, bool async, const std::vector<int>& tensors,
                                       int64_t replicas, models::Graph& g) {
  ImportedCollective r;
  r.start_tuple = async;
  std::optional<models::CollectiveAttrs> a = attrs_of(m, rs, CollectiveOp::kReduceScatter, replicas, r);
  if (!a) return r;
  a->async = async;
  one_group(*a);
  r.results.push_back(g.flat_reduce_scatter(tensors, rs.shape.dims.at(0), *a, rs.name));
  return r;
}

}  // namespace tpusim::hlo
