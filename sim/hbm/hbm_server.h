// The per-core HBM bandwidth server: the analytical engine's HBM model. (The SystemC HBM,
// sim/hbm/simple_hbm.h, serves the same requests per channel; the two differ where requests
// overlap or cover the channels unevenly: sim/README.md, "One timing model per block".)
//
// Rule: a core's HBM is one serial server at hbm_core_bytes_per_cycle (sim/hw/resolved_hw.h).
//  * A DMA's request of B bytes issued at `at` (start + setup) is served from max(at, the end of
//    everything reserved before it) for hbm_transfer_cycles(B) whole cycles; its data is there
//    the HBM latency after the service ends (latency is pipelined, bandwidth is not).
//  * A transfer's source read (kSend, kHostStore) is served from max(at, the end of the DMAs
//    reserved before it): the transfer channels read train by train at their stream rate, below
//    the HBM share (sim/xfer/xfer.h sizes trains so), so reads do not delay each other; later
//    DMAs wait for the read.
//  * A send's write at its destination takes the destination's server for its bytes, ending when
//    the message is delivered (serve_write: it delays later DMAs, not its delivery, as a read);
//    the engine delivers a round's sends at its end, not in time order with the destination's own
//    placements. A host load's write is counted, not reserved.
//  * With background DMAs (calendars), the engine places the core's two DMA queues out of time
//    order, so the server is a calendar: a DMA is served in the idle time from its request on,
//    piece by piece in the gaps the DMAs and reads already placed leave (the HBM interleaves
//    requests chunk by chunk: a DMA does not wait for one gap that holds all of it), a read
//    likewise in the gaps the DMAs leave (a transfer reads at its stream rate, far below the HBM's:
//    a 64 MiB host copy must not wait for one DMA-free gap of its whole HBM time); a send's write
//    at a destination with calendars is reserved (reserve_write).
#pragma once
#include <algorithm>
#include <cstdint>
#include <tuple>

#include "sim/base/busy_calendar.h"
#include "sim/hbm/hbm_timing.h"
#include "sim/hw/resolved_hw.h"

namespace tpusim {

class HbmServer {
 public:
  struct Service {
    uint64_t begin = 0, cycles = 0;  // the service: [begin, begin + cycles)
  };

  void reset(const ResolvedHw& r, uint32_t chunk_bytes, bool calendars) {
    rate_ = r.hbm_core_bytes_per_cycle;
    chunk_ = chunk_bytes;
    calendars_ = calendars;
    free_ = dma_free_ = 0;
    dmas_.clear();
    reads_.clear();
    bytes = requests = 0;
    busy_cycles = 0;
  }
  bool calendars() const { return calendars_; }
  // Cycles a DMA of `b` bytes occupies the server (hbm_transfer_cycles at the core's rate).
  uint64_t transfer_cycles(uint64_t b) const { return hbm_transfer_cycles(rate_, b); }

  // A DMA's request of `b` (> 0) bytes issued at `at`.
  Service serve_dma(uint64_t at, uint64_t b) {
    const uint64_t t = hbm_transfer_cycles(rate_, b);
    uint64_t begin = std::max(at, free_), end = begin + t;
    if (calendars_) std::tie(begin, end) = dmas_.fill(at, t, reads_);
    free_ = dma_free_ = std::max(free_, end);
    account(b);
    return {begin, end - begin};
  }
  // A transfer's source read of `b` (> 0) bytes issued at `at`.
  Service serve_read(uint64_t at, uint64_t b) {
    const uint64_t t = hbm_transfer_cycles(rate_, b);
    uint64_t begin = std::max(at, dma_free_);
    if (calendars_) {  // piece by piece in the DMAs' gaps, as they are (reads may overlap reads)
      begin = dmas_.first_fit(at, 0);
      for (uint64_t left = t, x = begin; left > 0;) {
        const uint64_t piece = std::min(left, dmas_.next_start(x) - x);
        reads_.add(x, piece);
        left -= piece;
        x = left > 0 ? dmas_.first_fit(x + piece, 0) : x;
      }
    }
    free_ = std::max(free_, begin) + t;  // the read delays later DMAs, not its own start
    account(b);
    return {begin, t};
  }
  // Without calendars: a message of `b` (> 0) bytes written into this core's HBM as it arrives
  // (the last of it at `delivered`). It delays the DMAs placed after it, as a read does, not its
  // own delivery.
  void serve_write(uint64_t delivered, uint64_t b) {
    const uint64_t t = hbm_transfer_cycles(rate_, b);
    free_ = std::max(free_, delivered > t ? delivered - t : 0) + t;
    account(b);
  }
  // Calendars only: a message of `b` (> 0) bytes delivered at `delivered` into this core's HBM.
  // Its last HBM-rate worth of writing must find room among the DMAs by then (no earlier than
  // `floor`), else the delivery waits: returns when it is written.
  uint64_t reserve_write(uint64_t delivered, uint64_t b, uint64_t floor) {
    const uint64_t t = hbm_transfer_cycles(rate_, b);
    const uint64_t w = dmas_.first_fit(std::max(delivered > t ? delivered - t : 0, floor), t);
    reads_.add(w, t);
    return std::max(delivered, w + t);
  }

  // Counts `b` bytes moved through the core's HBM (every service above, and destination writes).
  void account(uint64_t b) {
    bytes += b;
    requests += (b + chunk_ - 1) / chunk_;
    busy_cycles += double(b) / rate_;
  }

  // Calendars: no later request starts before `frontier`.
  void prune(uint64_t frontier) {
    dmas_.prune(frontier);
    reads_.prune(frontier);
  }
  size_t calendar_size() const { return dmas_.size() + reads_.size(); }

  // Stats of the core (summed per chip into HbmStats): bytes, requests of dma.chunk_bytes,
  // unrounded bytes / rate as the SystemC HBM reports it.
  uint64_t bytes = 0, requests = 0;
  double busy_cycles = 0;

 private:
  double rate_ = 0;
  uint64_t chunk_ = 1;
  bool calendars_ = false;
  uint64_t free_ = 0;      // end of all reservations
  uint64_t dma_free_ = 0;  // ... as the last DMA left it (what a read waits for)
  BusyCalendar dmas_, reads_;  // calendars: the DMAs' reservations (exclusive), the reads' and writes'
};

}  // namespace tpusim
