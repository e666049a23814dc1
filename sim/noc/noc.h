// Noc: the on-chip network between the TensorCores of one chip ("slice.chip3.noc"), the path of
// kSend between two cores of the same chip. One bandwidth stage (sim/ici/packet_server.h) of
// noc.bandwidth_gbyte_per_s shared by all core-to-core traffic of the chip, then noc.latency_ns.
// Traffic to and from the ICI router does not cross it (ICI transfers pay the hop latency only).
#pragma once
#include <cstdint>

#include <nlohmann/json.hpp>
#include <systemc>

#include "sim/base/sc_support.h"
#include "sim/hw/resolved_hw.h"
#include "sim/ici/packet_server.h"
#include "sim/ici/train.h"

namespace tpusim {

class Noc : public sc_core::sc_module, public TrainIf {
 public:
  sc_core::sc_export<TrainIf> in;                          // from the chip's cores
  sc_core::sc_vector<sc_core::sc_port<TrainIf>> to_core;   // per core: its transfer unit

  Noc(sc_core::sc_module_name name, uint32_t cores);

  void configure(const ResolvedHw& r) { server_.configure(r.noc_bytes_per_cycle, r.noc_latency_cycles); }
  void begin_run(const RunContext* run) { server_.begin_run(run); }
  void end_run(uint64_t run_cycles) { server_.end_run(run_cycles); }
  void dump_stats(nlohmann::json& j) const { server_.dump_stats(j); }

  void transmit(Train& train) override;

 private:
  PacketServer server_;
};

}  // namespace tpusim
