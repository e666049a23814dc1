// The partitioner: from the shardings a step builder puts on the native graph (models/sharding.h) to
// the collectives that move data between the replicas. One rule, `reshard`, names the collective
// that turns a value of one sharding into another, as XLA's SPMD partitioner does when an
// operand's sharding is not the one its user needs:
//
//   from                       to                          collective (over mesh axis a)
//   partial over a             whole                       all-reduce
//   partial over a             split along a in dim d      reduce-scatter (dim d)
//   split along a in dim d     whole                       all-gather (dim d)
//   whole                      split along a in dim d      none: each replica slices its block
//   equal                                                  none
// Dimensions of the target split where the value is whole are sliced alongside (no communication).
// Anything else (two dimensions gathered at once, a dimension moving between axes, a partial sum
// over two axes or gathered, a value made partial) is an error: the builders reshard in steps. The data-parallel step (data_parallel.h) finds its gradient
// all-reduces with `partition_edges`; the FSDP step (fsdp.h) asks `reshard` for its all-gathers and
// reduce-scatters; both build the collectives' attributes with `collective_attrs` and place them by
// their own schedule (the combiner's buckets, the gathers one unit ahead).
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "models/graph.h"
#include "models/sharding.h"

namespace tpusim::compiler {

// A collective that reshards a value.
struct Reshard {
  models::CollectiveOp op = models::CollectiveOp::kAllReduce;
  models::MeshAxis axis = models::MeshAxis::kData;
  int dim = -1;  // all-gather, reduce-scatter: the dimension gathered or scattered
};

// The collective turning `from` into `to` (the table above); nullopt when no data moves. Throws
// std::invalid_argument for a change the table does not have.
std::optional<Reshard> reshard(const models::TensorSharding& from, const models::TensorSharding& to);

// The replica groups of a collective along `axis` (XLA replica_groups: the replicas that differ
// only in that axis's coordinate, in order); empty when the axis spans every replica (one group).
std::vector<std::vector<int64_t>> axis_groups(const models::Mesh& mesh, models::MeshAxis axis);

// The attributes of `r` on `mesh` (op, replicas, groups, dim); the caller adds the schedule's
// (async, combine, flat).
models::CollectiveAttrs collective_attrs(const Reshard& r, const models::Mesh& mesh);

// A value some readers need resharded: the collective and who reads its result.
struct ReshardEdge {
  int value = -1;
  models::TensorSharding to;
  Reshard how;
  std::vector<int> readers;  // ascending
};

// Every value of `g` whose sharding is not what a reader reads it with and that a collective must
// move, in node order (one edge per value and target sharding). A reader reads an operand as its op's
// rule says (sharding_rules.h), except that a partial sum is carried on only into a reader that is
// itself a partial sum over the same axes (propagated, or annotated); a reader left whole reads it
// reduced. So a builder that annotates by hand (data parallel: the gradients) gets its collectives
// where it annotates.
std::vector<ReshardEdge> partition_edges(const models::Graph& g);

}  // namespace tpusim::compiler
