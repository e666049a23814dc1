#include "compiler/collectives/collectives.h"
#include "compiler/collectives/replicas.h"

namespace tpusim::compiler {

isa::Program collective_program(CollectiveKind kind, const HwConfig& hw, uint64_t bytes, const CollectiveOptions& opt,
                                CollectiveResult* result) {
  const std::vector<CoreId> ring = ring_order(hw);
  isa::Program p;
  p.name = collective_name(kind);
  ReplicaStreams streams(p, ring, hw.chip.core.vmem.size_bytes());
  std::vector<ProgramBuilder*> b = streams.begin_section();
  const CollectiveResult r =
      emit_collective(kind, b, ring, hw, bytes, std::vector<std::vector<uint32_t>>(ring.size()), opt);
  streams.end_section();
  streams.finish();
  if (result) *result = r;
  return p;
}

}  // namespace tpusim::compiler
