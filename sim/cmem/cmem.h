// CMEM: a chip's on-chip memory between HBM and the cores' VMEMs (TPU v4: 128 MiB per chip,
// shared by both TensorCores), the target of the cores' CMEM DMA sockets. Same socket protocol
// as the HBM (sim/hbm/hbm_protocol.h: one b_transport per transfer, `delay` in = issue time,
// out = arrival of the last data), timing from sim/cmem/cmem_timing.h.
// Model: one bandwidth server per chip (sim/cmem/cmem_server.h, shared with the analytical
// engine), first come first served, in whole cycles: a transfer issued at cycle r starts at
// max(r, end of the previous one), occupies cmem_transfer_cycles and its last data arrives
// cmem_latency_cycles after that (latency pipelined). Loosely timed (a reservation, no SystemC
// event), so the two cores' overlapping transfers contend.
// Every chip has the block (the structure does not depend on the config); on a chip without
// CMEM it serves nothing (the program plan rejects CMEM DMAs there).
#pragma once
#include <cstdint>

#include <nlohmann/json.hpp>
#include <systemc>
#include <tlm>
#include <tlm_utils/multi_passthrough_target_socket.h>

#include "sim/base/sc_support.h"
#include "sim/base/stats.h"
#include "sim/cmem/cmem_server.h"
#include "sim/cmem/cmem_stats.h"
#include "sim/hbm/hbm_protocol.h"
#include "sim/hw/resolved_hw.h"

namespace tpusim {

class Cmem : public sc_core::sc_module {
 public:
  // Bound by every core's DMA CMEM socket, in core order (socket index = core index).
  tlm_utils::multi_passthrough_target_socket<Cmem> target;

  explicit Cmem(sc_core::sc_module_name name);

  void configure(const ChipParams& chip, const ResolvedHw& r);
  void begin_run(const RunContext* run);
  void end_run(uint64_t chip_cycles);
  // Adds "slice.chipN.cmem" when the run used it.
  void dump_stats(nlohmann::json& out) const;

 private:
  void b_transport(int core, tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);

  ResolvedHw r_;
  double clock_mhz_ = 0, peak_gbyte_per_s_ = 0;  // for the stats
  CmemServer server_;  // in cycles of the run
  const RunContext* run_ = nullptr;
  TraceNames track_;
  CmemStats stats_;
  StatGroup group_;
};

}  // namespace tpusim
