// The "analytical" engine: the Program semantics of program.h and the timing formulas of
// sim/*/..._timing.h as a list schedule in plain C++ (no SystemC, no contention model).
//
// Each unit is a resource with a `free_at`, in order per unit; DMA engines are resources taken
// first-free in stream order; a core's HBM is ONE serial bandwidth server at the core's bandwidth
// (hbm_core_bytes_per_cycle), so bandwidth is shared in aggregate but there are no channels and
// no channel-level queueing; latency is pipelined. A DMA issued at s with bytes B completes at
//   max(s + setup, server_free) + hbm_transfer_cycles(B) + latency
// (= s + dma_fixed_cycles + hbm_transfer_cycles(B) when the server is free).
// Same stats keys as the SystemC engine where meaningful (no per-channel HBM groups) and the same
// trace events (HBM on track "hbm.coreK" instead of per channel).
#pragma once
#include <memory>

#include "sim/engine/engine.h"

namespace tpusim {

std::unique_ptr<Engine> make_analytical_engine(const HwConfig& hw);

}  // namespace tpusim
