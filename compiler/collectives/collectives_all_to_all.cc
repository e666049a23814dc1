// All-to-all by pairwise exchange: in step k (1..n-1) core i sends the piece it addresses to core
// i+k and receives the piece core i-k addresses to it (indices in the order of `cores`, modulo n).
// Every core sends (n-1)/n of its buffer, one message per peer; the messages of a step are
// routed dimension by dimension by the ICI (sim/ici/ici_timing.h) and share links, so on a
// large slice this is link-bound (a bisection-limited exchange), not latency-bound. Input and output
// are separate buffers (a piece received must not overwrite one not yet sent); a core's piece for
// itself stays in the input buffer.
#include <algorithm>

#include "compiler/collectives/collective_algorithms.h"

namespace tpusim::compiler {

CollectivePlan all_to_all_plan(uint32_t n, uint64_t bytes) {
  CollectivePlan plan;
  plan.kind = CollectiveKind::kAllToAll;
  plan.algorithm = CollectiveAlgorithm::kRing;
  plan.cores = n;
  plan.lanes = 1;
  plan.chunks = 2 * n;  // [0, n): the input buffer, piece c for core c; [n, 2n): the output, piece from core c at n + c
  plan.chunk_bytes = std::max<uint64_t>(1, (bytes + n - 1) / n);
  for (uint32_t k = 1; k < n; ++k) {
    std::vector<uint32_t> to(n), first(n), recv_first(n);
    for (uint32_t i = 0; i < n; ++i) {
      to[i] = (i + k) % n;
      first[i] = to[i];  // the piece addressed to the peer
      recv_first[to[i]] = n + i;  // the output slot of the sender
    }
    plan.add(Combine::kCopy, 0, 1, std::move(to), std::move(first), "all-to-all", std::move(recv_first)).from_input = true;
  }
  return plan;
}

}  // namespace tpusim::compiler
