// How a transfer's HBM requests spread over its core's channels: the rule of the SystemC HBM
// (sim/hbm/simple_hbm.h), and the one place where a contention-free program times differently on
// the two engines (sim/README.md, "One timing model per block").
//
// A transfer of B bytes is cut into requests of `chunk` bytes (dma.chunk_bytes, the last one
// shorter) that go round-robin over the core's `count` channels, starting at the core's pointer;
// each channel serves rate / count (rate = hbm_core_bytes_per_cycle, count = hbm_core_channels:
// sim/hw/resolved_hw.h). Channel d (counted from the pointer) gets requests d, d + count, ...: the
// `last` channels before the one that gets the last request get k full requests, that one k
// requests minus the last one's shortfall, the rest of the touched ones k - 1. Alone, the transfer takes as long as its busiest channel:
//   hbm_interleaved_cycles = ceil(busiest channel's bytes * count / rate)
// which is hbm_transfer_cycles(B) (the analytical engine's per-core server) exactly when B is a
// whole number of interleave rounds (count * chunk), and longer otherwise: a 2 KiB DMA on a v3
// core (16 channels of 2 KiB) occupies one channel at 1/16 of the rate, as long as 32 KiB.
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>

#include "sim/hw/resolved_hw.h"

namespace tpusim {

// a / b; chunk sizes and channel counts are usually powers of two, and a 64-bit division is slow.
inline uint64_t hbm_div_pow2(uint64_t a, uint64_t b) { return (b & (b - 1)) == 0 ? a >> std::countr_zero(b) : a / b; }

struct HbmSpread {
  uint64_t requests = 0;  // 0 for a zero-byte transfer (nothing below is set)
  uint64_t k = 0;         // requests of the busiest channel
  uint64_t last = 0;      // channels before the one that gets the last request (they get k full ones)
  uint64_t touched = 0;   // channels that get a request
  uint64_t short_by = 0;  // the last request's shortfall
  uint64_t chunk = 0;

  // Bytes of the channels before the last request's, of its channel, and of the ones after it.
  uint64_t full_bytes() const { return k * chunk; }
  uint64_t tail_bytes() const { return k * chunk - short_by; }
  uint64_t fewer_bytes() const { return (k - 1) * chunk; }
  uint64_t busiest_bytes() const { return requests == 0 ? 0 : last > 0 ? full_bytes() : tail_bytes(); }
};

// The spread of `bytes` in requests of `chunk` over `count` channels.
inline HbmSpread hbm_spread(uint64_t bytes, uint64_t chunk, uint64_t count) {
  HbmSpread s;
  s.chunk = chunk;
  s.requests = hbm_div_pow2(bytes + chunk - 1, chunk);
  if (s.requests == 0) return s;
  s.short_by = s.requests * chunk - bytes;
  s.k = hbm_div_pow2(s.requests - 1, count) + 1;
  s.last = s.requests - 1 - (s.k - 1) * count;
  s.touched = s.requests < count ? s.requests : count;
  return s;
}

// Cycles a transfer of `bytes` in requests of `chunk_bytes` alone occupies its core's channels in
// the SystemC HBM (above).
inline uint64_t hbm_interleaved_cycles(const ResolvedHw& r, uint64_t chunk_bytes, uint64_t bytes) {
  const uint64_t count = r.hbm_core_channels;
  const HbmSpread s = hbm_spread(bytes, chunk_bytes, count);
  return uint64_t(std::ceil(double(s.busiest_bytes() * count) / r.hbm_core_bytes_per_cycle));
}

}  // namespace tpusim
