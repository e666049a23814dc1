// DMA: a core's `dma.engines` DMA engines behind one in-order issue queue (which engine a transfer
// takes and when: sim/dma/dma_engines.h, shared with the analytical engine). A transfer takes an
// engine from its start to its completion:
//   setup_cycles on the engine, then its requests (dma.chunk_bytes each) go out to the HBM at
//   once (one b_transport per transfer, see sim/hbm/hbm_protocol.h); the transfer completes on
//   the first cycle boundary after the last request's data arrived (the HBM adds its latency). The engine count bounds the transfers in flight; bandwidth and contention are
//   the HBM's. A zero-byte transfer sends no request and completes after dma_fixed_cycles.
//   A transfer naming CMEM (isa::MemSpace::kCmem) goes to the chip's CMEM instead, through the
//   `cmem` socket, as one request (CMEM has no channels); a zero-byte one completes after
//   cmem_dma_fixed_cycles (both: sim/hw/resolved_hw.h).
// One SystemC method; per transfer one activation and one b_transport call.
#pragma once
#include <cstdint>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include "sim/base/core_ifs.h"
#include "sim/base/sc_support.h"
#include "sim/base/stats.h"
#include "sim/dma/dma_engines.h"
#include "sim/dma/dma_stats.h"
#include "sim/hbm/hbm_protocol.h"
#include "sim/hw/resolved_hw.h"
#include "sim/isa/program.h"

namespace tpusim {

class Dma : public sc_core::sc_module {
 public:
  sc_core::sc_fifo_in<uint32_t> in;                // instruction indices from the sequencer
  sc_core::sc_port<CompletionIf> done;             // to the core's sequencer
  tlm_utils::simple_initiator_socket<Dma> mem;     // to the chip's HBM
  tlm_utils::simple_initiator_socket<Dma> cmem;    // to the chip's CMEM

  explicit Dma(sc_core::sc_module_name name);

  void configure(const ChipParams& chip, const ResolvedHw& r);
  void begin_run(isa::StreamView stream, const RunContext* run);
  void end_run(uint64_t core_cycles) { stats_.run_cycles = core_cycles; }
  const StatGroup& stats() const { return group_; }

 private:
  void step();
  void start(uint32_t instr, uint32_t queue, const UnitPool::Pick& pick);

  DmaParams p_;
  uint64_t fixed_cycles_ = 0;
  uint64_t cmem_fixed_cycles_ = 0;
  isa::StreamView stream_;  // the core stream of the run (set by begin_run)
  const RunContext* run_ = nullptr;
  DmaEngines engines_;  // in kernel time (ps)
  std::vector<TraceNames> tracks_;  // per engine: "core0.dma2"
  tlm::tlm_generic_payload trans_;  // reused for every request
  HbmRequestTag* tag_ = nullptr;    // owned by trans_
  bool holding_ = false;            // `held_` was taken from the queue but no engine was free
  uint32_t held_ = 0;
  DmaStats stats_;
  StatGroup group_;
};

}  // namespace tpusim
