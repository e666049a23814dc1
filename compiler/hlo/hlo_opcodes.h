// What the importer knows of each HLO opcode and element type, apart from how it builds the graph
// (hlo_import.cc, hlo_import_ops.cc): XLA's opcode list, the opcodes the graph builds, the element
// types it holds, and why one is not modelled (the reasons the unmodelled list shows).
#pragma once
#include <optional>
#include <string>

#include "compiler/hlo/hlo_ast.h"
#include "models/graph.h"

namespace tpusim::hlo {

// The element types the graph holds (models::DType). f32 and bf16 are exact; s32, u32, s64 and u64
// are held as s32 and pred as s32 too (pred is 1 byte in HBM, s32 4: masks are overstated 4x, 8-byte
// integers understated 2x; both are index/mask tensors whose traffic is small next to activations).
// Other types are approximated by the closest of the same kind and listed as unmodelled.
struct TypeMap {
  models::DType dtype = models::DType::kF32;
  bool exact = true;
};
std::optional<TypeMap> map_type(ElementType t);

// Why an opcode with no graph counterpart is not modelled (the default names the opcode).
std::string no_op_reason(const Module& m, const Instruction& in);
// Why the importer declined an opcode it knows: the instruction's form is outside what the graph holds.
std::string form_reason(const std::string& op);
// The opcodes the importer builds graph ops of (besides the element-wise table).
bool is_built(const std::string& op);
// Every opcode of XLA's HLO (xla/hlo/ir/hlo_opcode.h) as printed: anything else is bad input.
bool is_hlo_opcode(const std::string& op);
// Custom-call targets that are no op on one core: SPMD sharding markers.
bool is_sharding_marker(const std::string& target);

}  // namespace tpusim::hlo
