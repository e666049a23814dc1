// A core's DMA engines: which engine a DMA takes and when it is free. One model for the SystemC
// DMA (sim/dma/dma.h) and the analytical engine (sim/engine/analytical_engine.cc).
//
// A core has `dma.engines` engines behind one issue queue, fed by the main and the background
// (`async`) DMA queue, each in stream order (program.h). A DMA takes the lowest-numbered engine
// free at its start and holds it from its start to its completion:
//   start    = the earliest time >= max(ready, its queue's previous start) an engine is free
//   complete = start + setup + [the HBM or CMEM service, which may wait for the memory] + latency;
//              a zero-byte DMA sends no request: start + dma_fixed_cycles | cmem_dma_fixed_cycles
// (the pool: sim/base/unit_pool.h; the formulas: sim/hbm/hbm_timing.h, sim/cmem/cmem_timing.h;
// the memories: sim/hbm/simple_hbm.h in SystemC, sim/hbm/hbm_server.h in the analytical engine).
// SystemC picks at simulation time, so "free" is the end of the engine's last DMA. The
// analytical engine does the same unless the core has background DMAs: it then places the two
// queues out of time order, so the engines are calendars and a DMA takes the earliest idle
// interval long enough for it without waiting for memory (dma_alone_cycles).
#pragma once
#include <cstdint>

#include "sim/base/unit_pool.h"
#include "sim/cmem/cmem_timing.h"
#include "sim/hbm/hbm_timing.h"
#include "sim/hw/resolved_hw.h"
#include "sim/isa/program.h"

namespace tpusim {

class DmaEngines : public UnitPool {
 public:
  static constexpr uint32_t kMain = 0, kBackground = 1;  // the queues

  void reset(uint32_t engines, bool calendars = false) { UnitPool::reset(engines, 2, calendars); }
  static uint32_t queue_of(const isa::Instr& ins) { return ins.async ? kBackground : kMain; }
};

// Cycles a DMA takes when nothing else uses its memory (the engine's occupancy without waiting).
// `hbm_cycles`: hbm_transfer_cycles of its bytes (a caller with an HbmServer has it at hand).
inline uint64_t dma_alone_cycles(const ResolvedHw& r, const isa::Instr& ins, uint64_t hbm_cycles) {
  if (ins.mem == isa::MemSpace::kCmem) return r.cmem_dma_fixed_cycles + cmem_transfer_cycles(r, ins.bytes);
  return r.dma_fixed_cycles + (ins.bytes == 0 ? 0 : hbm_cycles);
}
inline uint64_t dma_alone_cycles(const ResolvedHw& r, const isa::Instr& ins) {
  const bool cmem = ins.mem == isa::MemSpace::kCmem;
  return dma_alone_cycles(r, ins, cmem ? 0 : hbm_transfer_cycles(r.hbm_core_bytes_per_cycle, ins.bytes));
}

}  // namespace tpusim
