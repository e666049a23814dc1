// The DMA -> HBM socket protocol (TLM-2 base protocol, blocking transport, loosely timed).
//
// A DMA transfer is cut into requests of `dma.chunk_bytes` (the last one shorter), all issued at
// the same time and spread round-robin over the initiating core's channels. Since they arrive
// together, the initiator hands the whole transfer over in ONE b_transport call (length = the
// transfer, HbmRequestTag::chunk_bytes = the request size) and the target reserves every
// request's slot on its channel exactly as if they had come one by one; this costs O(channels)
// per transfer whatever the chunk size, so chunk_bytes can be the real interleave granularity.
// `delay` in: the issue time relative to now (a whole number of cycles); out: the time, relative
// to now, at which the last request's data has arrived (service end + latency). Reservations are
// loosely timed (each channel keeps when it is next free): contention emerges from overlapping
// reservations without a SystemC event per request. No data is carried; the command says
// load (read) or store (write).
#pragma once
#include <cstdint>
#include <string_view>

#include <tlm>

namespace tpusim {

// Describes the transfer carried by a payload.
struct HbmRequestTag : tlm::tlm_extension<HbmRequestTag> {
  uint64_t bytes = 0;        // the transfer (TLM's data length is 32-bit)
  uint32_t chunk_bytes = 0;  // request size the transfer is cut into
  uint32_t instr = 0;        // instruction index, for trace aggregation
  std::string_view label;

  tlm::tlm_extension_base* clone() const override { return new HbmRequestTag(*this); }
  void copy_from(const tlm::tlm_extension_base& e) override { *this = static_cast<const HbmRequestTag&>(e); }
};

}  // namespace tpusim
