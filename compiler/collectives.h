// Collectives lowered to core-to-core transfers (kSend/kRecv) plus the vector work of reductions.
//
// All-reduce: the bidirectional ring. Half the bytes go clockwise, half counter-clockwise, so both
// directions of every ring link carry traffic. Each half runs reduce-scatter (n-1 steps: send a
// chunk of bytes/2n to the ring neighbour, receive one, add it into the local copy) then
// all-gather (n-1 steps: forward the reduced chunk). Per core it moves 2(n-1)/n of the bytes each
// way, the bandwidth-optimal amount (Patarasuk & Yuan, JPDC 2009). Chunks are cut into pieces so
// that the transfer of one piece overlaps the reduction of the previous one.
#pragma once
#include <cstdint>
#include <vector>

#include "compiler/program_builder.h"
#include "sim/isa/program.h"
#include "sim/slice/slice_params.h"

namespace tpusim::compiler {

struct CoreId {
  uint32_t chip = 0, core = 0;
  bool operator==(const CoreId& o) const { return chip == o.chip && core == o.core; }
};

// A cycle through every core of the slice in which consecutive members are one ICI hop (or the
// on-chip network) apart: the two cores of a chip are adjacent, and chips follow a Hamiltonian
// cycle of the mesh (boustrophedon rows returning along column 0) or of the torus.
std::vector<CoreId> ring_order(const HwConfig& hw);

struct AllReduceOptions {
  uint64_t piece_bytes = 1ull << 20;  // pipelining granularity of a chunk (4 pieces must fit VMEM)
  uint32_t tag_base = 0;              // tags [tag_base, tag_base + tags_used) are taken
};

// Appends an all-reduce of `bytes` (fp32 elements) over `ring` to the builders (builders[i]
// emits core ring[i]'s stream). `after[i]`: instructions of core i the collective waits for.
// Returns, per core, the instruction that completes it; sets *tags_used.
std::vector<uint32_t> emit_all_reduce(std::vector<ProgramBuilder*>& builders, const std::vector<CoreId>& ring,
                                      uint64_t bytes, const std::vector<std::vector<uint32_t>>& after,
                                      const AllReduceOptions& opt, uint32_t* tags_used);

}  // namespace tpusim::compiler
