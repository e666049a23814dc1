#include "compiler/lower/lowering.h"

namespace tpusim::compiler {

uint64_t emit_next_batch_infeed(ProgramBuilder& b, const models::Graph& g, bool prefetch) {
  uint64_t bytes = 0;
  for (const auto& node : g.nodes())
    if (node.kind == models::OpKind::kParameter && node.role == models::ParamRole::kInput && !node.shape.empty())
      bytes += stored_bytes(g, node.id);
  if (prefetch && bytes > 0) {
    isa::Instr in;
    in.op = isa::Op::kHostLoad;
    in.bytes = bytes;
    in.label = "infeed:next batch";
    b.emit(in);
  }
  return bytes;
}

}  // namespace tpusim::compiler
