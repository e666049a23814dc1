// A tpusim op graph (models/graph.h) written out as XLA HLO text (docs/hlo.md, "Export"): what tpusim
// simulates, in the form `tpusim hlo-stats`, the importer and XLA's own tools read.
//
// Every graph node becomes one instruction named `%<node name>.<node id>` (characters outside
// [A-Za-z0-9_.-] become '_') with metadata={op_name="<node name>"}. Where HLO needs more than one
// instruction for a node, the node's own name is on the last (the value its users read) and the
// helpers carry a suffix after it (`%x.7.zero`, `%x.7.cmp`): the scalar constants and broadcasts of
// an implicit scalar operand, the pred compare before the 0/1 convert, the rng, compare and zero
// branch of a dropout mask, a reduce's or scatter's init value, the opt-barrier (`.mat`) after a
// value the compiler materializes (which its users then read). Parameters are numbered in graph order; the
// ROOT is a tuple of the graph's outputs in order. The output is a pure function of the graph.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "models/graph.h"

namespace tpusim::hlo {

// A graph exported as a computation of its own that the entry does not call (the optimizer update of
// an FSDP step, a separate program in tpusim): it documents the program, it is not part of the entry.
struct ExtraComputation {
  std::string name;
  const models::Graph* graph = nullptr;
};

struct HloExportOptions {
  std::string module_name = "tpusim";
  // `// ` comment lines written before `HloModule` (what the module is, what is left out).
  std::vector<std::string> comment;
  std::vector<ExtraComputation> extra;
  // Output node -> the parameter node whose buffer it overwrites (the optimizer update's): written as
  // input_output_alias, which the import reads back as persistent parameters.
  std::map<int, int> donated;
};

// The graph as one HLO module: `HloModule <name>` (with `is_scheduled=true` for a scheduled graph,
// models::Graph::scheduled, whose node order the instructions keep), the reduce/scatter helper computations used
// (`%add.f32`, `%max.bf16`, ...), the extra computations, then `ENTRY %main (...) -> (...)`.
std::string export_hlo(const models::Graph& g, const HloExportOptions& options = {});

// The instruction name of a node: `<sanitized name>.<id>` (without '%').
std::string hlo_instruction_name(const models::Node& n);

}  // namespace tpusim::hlo
