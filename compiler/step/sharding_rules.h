// Sharding propagation over the native op set (models/graph.h), as XLA's sharding propagation does
// it for HLO (docs/hlo.md, "SPMD partitioning", has the HLO pass's rules; these are the same on
// the native graph, which is written in the local view: shapes are one replica's share). For each
// op, from its operands' shardings: the sharding of its result and the sharding it reads each
// operand with. The partitioner (partition.h) inserts a collective where an operand's sharding is
// not the one it is read with.
//
//   element-wise, convert, concatenate (but its axis), slice (but its axis): a dimension split
//       along an axis in some operand is split in the result and read so in all (a whole operand
//       is sliced: no communication);
//   dot: paired batch and contracting dimensions read along the same axis (the one either operand
//       has); a split batch or free dimension is split in the result; a split contracting pair
//       makes the result a partial sum over its axis (Megatron's row-parallel matmul);
//   reduce (sum): a split reduced dimension makes the result a partial sum; reduce (max) a partial
//       maximum (Megatron's vocabulary-parallel cross-entropy: the row maximum all-reduced with max);
//   broadcast, transpose, reshape: splits follow the dimensions (a reshape keeps a split on the
//       dimension that starts the same block of elements, else reads it whole);
//   gather: the ids' splits are the result's leading dimensions; rows split along an axis make the
//       result a partial sum over it (each replica looks up the rows it holds: Megatron's
//       vocabulary-parallel embedding);
//   scatter-add: the updates' split batch dimensions make the result a partial sum (a table's
//       gradient is annotated with the table's sharding by the backward pass: each replica adds
//       into the rows it holds);
//   parameters, constants, iotas, collectives: as annotated (whole unless set); a model's own
//       all-gather or reduce-scatter (a sequence-parallel replica's keys and values) carries its
//       operand's splits along the other dimensions.
// Partial sums: carried by a convert, reshape, transpose, negation, and by an add or subtract of
// partial sums over the same axes that it alone reads (propagate_shardings; XLA's all-reduce
// reassociation); any other op reads them reduced (an all-reduce, as XLA's
// partitioner inserts after a partial dot unless its user keeps the sum; a broadcast reads its
// operand reduced, before the expansion). A partial maximum: carried by convert, reshape, transpose.
#pragma once
#include <vector>

#include "models/graph.h"
#include "models/sharding.h"

namespace tpusim::compiler {

struct OpSharding {
  models::TensorSharding out;                    // the result's
  std::vector<models::TensorSharding> operands;  // how each operand is read (inputs order)
};

// The rule for node `n` of `g`, its operands' shardings read from the graph.
OpSharding op_sharding(const models::Graph& g, const models::Node& n);

// Gives every node without an annotation (whole) the sharding its op's rule makes of its operands',
// in node order (a topological order); annotated nodes keep theirs.
void propagate_shardings(models::Graph& g);

}  // namespace tpusim::compiler
