// A flash attention call as tpusim exports it (hlo_export.cc, emit_attention): a Pallas kernel's
// custom-call to "tpu_custom_call" with the call's attributes under "tpusim_attention" in its
// backend_config. Its operands (q, k, v; backward also out, lse, d_out) and tuple result are as
// Graph::attention and attention_grad take and give them.
#pragma once
#include <optional>
#include <vector>

#include "compiler/hlo/hlo_ast.h"
#include "models/graph.h"

namespace tpusim::hlo::import_ops {

// The call's result nodes (out, lse; or dq, dk, dv) built on `g` from the operand nodes `ops` (-1:
// an operand that is not an array, refused);
// nullopt when `in` carries no tpusim_attention attributes (another Mosaic kernel, whose body is
// serialized, not HLO). Throws HloError at the instruction when the attributes or the operands'
// shapes are not a flash attention call's.
std::optional<std::vector<int>> flash_attention(const Module& m, const Instruction& in, models::Graph& g,
                                                const std::vector<int>& ops);

}  // namespace tpusim::hlo::import_ops
