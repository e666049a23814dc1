// The checks of a parsed module that need the whole computation or module (hlo_parser.cc calls it):
// operands and control predecessors defined earlier in their computation (HLO is SSA and XLA prints
// in post-order), called computations defined earlier in the module (which also rules out recursion),
// one ROOT per computation (else the last instruction), parameter numbers 0..n-1 each once, parameter
// shapes (and the ROOT's) equal to the signature when there is one, one ENTRY. No shape inference.
#pragma once
#include "compiler/hlo/hlo_ast.h"

namespace tpusim::hlo {

// Resolves names to indices (Instruction::operands, called, control_predecessors; Computation::root;
// Module::entry) and throws HloError at the offending text.
void resolve_and_validate(Module& m);

// Attributes whose value names computations (`to_apply=%add`, `branch_computations={%a, %b}`).
bool is_computation_attr(std::string_view name);

// The place in in.called of the computation named by attribute `attr` (-1 when absent): one
// computation per attribute, but branch_computations, which comes alone.
int called_slot(const Instruction& in, std::string_view attr);

}  // namespace tpusim::hlo
