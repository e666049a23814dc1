// The import of XLA's collectives (all-reduce, all-gather, reduce-scatter, all-to-all,
// collective-permute and their -start/-done pairs) into graph collectives
// (models::OpKind::kCollective). Internal to the importer (hlo_import.cc dispatches here);
// docs/hlo.md ("Collectives") lists the forms and what is read or ignored.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/hlo/hlo_ast.h"
#include "models/graph.h"

namespace tpusim::hlo {

// Every opcode handled here; the -done ones pass their -start's value on (collective_done).
bool is_collective_opcode(std::string_view op);
bool is_collective_done(std::string_view op);

struct ImportedCollective {
  // One graph collective per operand (a combined, tuple-shaped collective has several), in order.
  std::vector<int> results;
  bool tuple_result = false;  // the instruction's result (or its -start's result part) is a tuple
  // all-gather-start and collective-permute-start: the result is (operands, results[, contexts]);
  // the -done takes element 1. all-reduce-start's result is the collective's own.
  bool start_tuple = false;
  std::vector<std::string> notes;  // approximations, for the unmodelled list
  std::string not_modelled;        // not empty: why it is not imported (an input stands in)
};

// `operands`: the graph node of each operand (-1: none). `replicas`: the replica ids of
// replica_groups and source_target_pairs are 0..replicas-1. Throws nothing but HloError (a
// malformed attribute).
ImportedCollective import_collective(const Module& m, const Instruction& in, const std::vector<int>& operands,
                                     int64_t replicas, models::Graph& g);

// The flat collectives of torch_xla FSDP (hlo_import_flat.h). A gather: `in` the all-gather or
// all-gather-start, one part of each of `dims` from the 1-D `shard` (tuple_result). A scatter: `rs`
// the reduce-scatter (an async-start's, `async`), `tensors` laid end to end.
ImportedCollective import_flat_gather(const Module& m, const Instruction& in, int shard, const std::vector<models::Dims>& dims,
                                      int64_t replicas, models::Graph& g);
ImportedCollective import_flat_scatter(const Module& m, const Instruction& rs, bool async, const std::vector<int>& tensors,
                                       int64_t replicas, models::Graph& g);

}  // namespace tpusim::hlo
