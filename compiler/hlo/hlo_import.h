// Import of a parsed HLO module (hlo_ast.h) into the compiler's op graph (models/graph.h), for one
// core, and the module's op statistics (docs/hlo.md, "Import", has the table of how each op is
// costed). The ENTRY computation is followed from its root through the operands; `call` and
// `fusion` bodies are inlined, a `while` body once per iteration, a `conditional`'s costliest branch.
// Ops the graph has no op for are compositions that cost like them (hlo_import_ops.h); what is not
// exact is listed in HloStats::unmodelled with the reason, and ops with no counterpart
// (fft, ...) stand in as an input of their result shape, so that consumers still cost. Collectives
// become graph collectives (hlo_import_collectives.h) over ImportOptions::replicas.
// Inconsistent modules (an unknown opcode, operand shapes that do not fit the op) raise HloError at
// the instruction; nothing else escapes (the importer is fed fuzzed text).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/hlo/hlo_ast.h"
#include "models/graph.h"

namespace tpusim::hlo {

struct Unmodelled {
  std::string instruction;  // the instruction's name
  std::string opcode;
  int line = 0;
  std::string reason;  // what stands in for it and why
};

struct HloStats {
  std::map<std::string, int64_t> instructions;  // count by opcode over every computation
  // 2 x output elements x contracted size over every `dot` of the module (models::dot_flops' rule),
  // from the text's shapes, imported or not.
  uint64_t dot_flops = 0;
  // 2 x output elements x kernel spatial size x input features / feature_group_count per convolution.
  uint64_t convolution_flops = 0;
  uint64_t parameter_bytes = 0;  // the ENTRY parameters (tuple leaves summed)
  uint64_t output_bytes = 0;     // the ENTRY root's shape
  std::vector<Unmodelled> unmodelled;  // in import order (operands before users)
  // For the report: what the user should know about the simulation of this module (a custom-call of
  // an unknown target, costed by its bytes only), "file:line: ...".
  std::vector<std::string> warnings;
};

struct HloImport {
  models::Graph graph;
  HloStats stats;
  // The module's input_output_alias: an output node -> the parameter node whose buffer it writes
  // (a training step's updated weights and optimizer state), for the memory plan.
  std::map<int, int> donated;
};

struct ImportOptions {
  // Inlined call/fusion bodies multiply (a computation calling another twice, nested): past this
  // many instructions imported (inlined copies counted; ~1 GB of graph at the default) a call
  // stands in as an input, so any module imports in bounded time and memory. The largest
  // pre-optimization training steps have a few 10^5 instructions.
  size_t max_instructions = size_t(1) << 21;
  // The iterations of a `while` whose trip count cannot be read from the loop itself (the workload's
  // `while_trip_count`); unset: such a loop is imported once and listed as unmodelled.
  std::optional<int64_t> while_trip_count;
  // The replicas the program runs on (the cores of compile_spmd_step): the ids of collectives'
  // replica_groups and source_target_pairs are 0..replicas-1, and an empty replica_groups is one
  // group of all. Unset: the module's replica_count x num_partitions.
  std::optional<int64_t> replicas;
};

// The module's statistics without the graph's unmodelled list (cheap; no graph built).
HloStats hlo_statistics(const Module& m);
// The ENTRY computation as a graph, with the full statistics.
HloImport import_hlo(const Module& m, const ImportOptions& options = {});

}  // namespace tpusim::hlo
