// The "analytical" engine: the Program semantics of program.h and the timing formulas of
// sim/*/..._timing.h as a list schedule in plain C++ (no SystemC, no contention model).
//
// Each unit is a resource with a `free_at`, in order per unit; DMA engines are resources taken
// first-free in stream order; a core's HBM is ONE serial bandwidth server at the core's bandwidth
// (hbm_core_bytes_per_cycle), so bandwidth is shared in aggregate but there are no channels and
// no channel-level queueing; latency is pipelined. A DMA issued at s with bytes B completes at
//   max(s + setup, server_free) + hbm_transfer_cycles(B) + latency
// (= s + dma_fixed_cycles + hbm_transfer_cycles(B) when the server is free).
// Transfers (kSend, kHostLoad, kHostStore) take the contention-free times of sim/ici/ici_timing.h
// on the core's in-order transfer queue: links, the NoC and PCIe are never contended here (the
// SystemC model shares them); the source read uses the core's HBM server like a DMA. A kRecv
// completes at max(deps, its send's delivery). Cores are scheduled in rounds: each scans its
// stream in order and schedules what it can; an instruction waiting for another core (a recv's
// data, a barrier) blocks only its own queue and what depends on it, and is retried when that
// core delivers.
// Same stats keys as the SystemC engine where meaningful (no per-channel HBM groups) and the same
// trace events (HBM on track "hbm.coreK" instead of per channel).
#pragma once
#include <memory>

#include "sim/engine/engine.h"

namespace tpusim {

std::unique_ptr<Engine> make_analytical_engine(const HwConfig& hw);

}  // namespace tpusim
