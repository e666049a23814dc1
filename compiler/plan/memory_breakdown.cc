#include "compiler/plan/memory_breakdown.h"

namespace tpusim::compiler {

MemoryBreakdown breakdown_at_peak(const MemoryPlan& m) {
  MemoryBreakdown b;
  for (size_t i : m.live_at_peak) {
    const HbmBuffer& buf = m.buffers[i];
    uint64_t* into = &b.activation_bytes;
    switch (buf.kind) {
      case BufferKind::kParameter: into = &b.parameter_bytes; break;
      case BufferKind::kOptimizerState: into = &b.optimizer_state_bytes; break;
      case BufferKind::kGradient: into = &b.gradient_bytes; break;
      case BufferKind::kGatheredParameter: into = &b.gathered_parameter_bytes; break;
      default: break;
    }
    *into += buf.bytes * buf.copies;
  }
  b.peak_bytes = m.peak_bytes;
  return b;
}

}  // namespace tpusim::compiler
