// The CMEM bandwidth server: one model for the SystemC CMEM (sim/cmem/cmem.h) and the analytical
// engine.
//
// Rule (formulas: sim/cmem/cmem_timing.h): first come, first served, in whole cycles. A transfer
// issued at cycle `at` is served from max(at, the end of the previous one) for
// cmem_transfer_cycles; its last data arrives cmem_latency_cycles after the service ends
// (latency is pipelined). SystemC keeps one server per chip, shared by its cores (CMEM is the
// chip's); the analytical engine one per core, so the two cores of a v4 chip contend for CMEM
// only in SystemC (sim/README.md, "One timing model per block").
#pragma once
#include <algorithm>
#include <cstdint>

#include "sim/cmem/cmem_timing.h"

namespace tpusim {

class CmemServer {
 public:
  struct Service {
    uint64_t begin = 0, cycles = 0;  // the service: [begin, begin + cycles)
  };

  void reset() { *this = CmemServer{}; }
  // A transfer of `bytes` issued at cycle `at`; counts it in the stats below.
  Service serve(const ResolvedHw& r, uint64_t at, uint64_t bytes) {
    const uint64_t t = cmem_transfer_cycles(r, bytes);
    const uint64_t begin = std::max(at, free_);
    free_ = begin + t;
    ++transfers;
    this->bytes += bytes;
    busy_cycles += t;
    return {begin, t};
  }
  uint64_t free() const { return free_; }  // the end of the last service

  uint64_t transfers = 0, bytes = 0, busy_cycles = 0;  // what CmemStats reports

 private:
  uint64_t free_ = 0;
};

}  // namespace tpusim
