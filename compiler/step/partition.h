// The partitioner: from the shardings a step builder puts on the native graph (models/sharding.h) to
// the collectives that move data between the replicas. One rule, `reshard`, names the collective
// that turns a value of one sharding into another, as XLA's SPMD partitioner does when an
// operand's sharding is not the one its user needs:
//
//   from                       to                          collective (over mesh axis a)
//   partial over a             whole                       all-reduce (a partial maximum: of max)
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
#include <string>
#include <vector>

#include "compiler/collectives/collectives.h"
#include "models/graph.h"
#include "models/sharding.h"
#include "sim/hw/hw_config.h"

namespace tpusim::compiler {

// A collective that reshards a value.
struct Reshard {
  models::CollectiveOp op = models::CollectiveOp::kAllReduce;
  models::MeshAxis axis = models::MeshAxis::kData;
  int dim = -1;  // all-gather, reduce-scatter: the dimension gathered or scattered
  models::ReduceOp reduce = models::ReduceOp::kSum;  // all-reduce, reduce-scatter
};

// "whole", "partial over data", "dim 0 split along tensor", ... for messages.
std::string describe(const models::TensorSharding& s);

// The collective turning `from` into `to` (the table above); nullopt when no data moves. Throws
// std::invalid_argument for a change the table does not have.
std::optional<Reshard> reshard(const models::TensorSharding& from, const models::TensorSharding& to);

// The replica groups of a collective along an axis (models/sharding.h).
using models::axis_groups;

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

// `g` with the collectives partition_edges finds along `axis` written in as synchronous collective
// nodes on `mesh` (each just before the first reader that needs it; those readers read its result,
// which has the sharding they read), every other node copied in order (groups, outputs, flags). In
// the local view only all-reduces keep a value's shape: another collective along `axis` means the
// builder's local shapes disagree with its annotations (std::logic_error). `id` (optional) gets each
// node of g's id in the result. Tensor parallelism's all-reduces, on the critical path as XLA
// schedules them without collective matmul.
models::Graph with_collectives(const models::Graph& g, const models::Mesh& mesh, models::MeshAxis axis,
                               std::vector<int>* id = nullptr);

// A mesh over devices as the mesh over the cores that run its replicas. On a megacore chip
// (cores_per_device > 1: XLA's device is the chip, whose cores each compute half of its batch) the
// batch axis `batch` (data, or fsdp) grows cores_per_device-fold, the chip's cores its innermost
// coordinate; elsewhere the mesh is its own.
models::Mesh core_mesh(models::Mesh mesh, uint32_t cores_per_device, models::MeshAxis batch);

}  // namespace tpusim::compiler
