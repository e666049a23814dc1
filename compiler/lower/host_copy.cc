#include "compiler/lower/lowering.h"

namespace tpusim::compiler {

uint32_t lower_host_copy(LowerContext& cx, const Fusion& f) {
  const models::Node& n = cx.graph.node(f.root);
  const bool to_host = n.kind == models::OpKind::kHostOffload;
  const uint64_t bytes = stored_bytes(cx.graph, f.root);
  cx.pb.begin_kernel(f.name);
  const uint32_t x = cx.pb.host_transfer(to_host ? isa::Op::kHostStore : isa::Op::kHostLoad, bytes, false, {},
                                         to_host ? "offload to host" : "reload from host");
  cx.pb.end_kernel();
  // The transfer reads (offload) or writes (reload) the value's HBM buffer.
  cx.moved(to_host ? n.inputs[0] : f.root, bytes);
  return x;
}

}  // namespace tpusim::compiler
