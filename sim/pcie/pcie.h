// Pcie: a chip's host link ("slice.chip3.pcie"), shared by the chip's cores. Full duplex: two
// bandwidth stages (sim/ici/packet_server.h) of pcie.bandwidth_gbyte_per_s, "pcie.h2d" for host
// loads and "pcie.d2h" for host stores, each followed by pcie.latency_ns.
//  * kHostLoad: the host (port `host`) provides the data from its RAM, h2d carries it, the
//    issuing core's transfer unit (`to_core`) writes it into its HBM.
//  * kHostStore: the core's transfer unit read it from HBM, d2h carries it, the host stores it.
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>
#include <systemc>

#include "sim/base/sc_support.h"
#include "sim/hw/resolved_hw.h"
#include "sim/ici/packet_server.h"
#include "sim/ici/train.h"

namespace tpusim {

class Pcie : public sc_core::sc_module, public TrainIf {
 public:
  sc_core::sc_export<TrainIf> in;                          // from the chip's cores
  sc_core::sc_vector<sc_core::sc_port<TrainIf>> to_core;   // per core: its transfer unit
  sc_core::sc_port<TrainIf> host;                          // the host this chip is attached to

  Pcie(sc_core::sc_module_name name, uint32_t cores);

  void configure(const ResolvedHw& r) {
    h2d_.configure(r.pcie_bytes_per_cycle, r.pcie_latency_cycles);
    d2h_.configure(r.pcie_bytes_per_cycle, r.pcie_latency_cycles);
  }
  void begin_run(const RunContext* run) {
    h2d_.begin_run(run);
    d2h_.begin_run(run);
  }
  void end_run(uint64_t run_cycles) {
    h2d_.end_run(run_cycles);
    d2h_.end_run(run_cycles);
  }
  void dump_stats(nlohmann::json& j) const {
    h2d_.dump_stats(j);
    d2h_.dump_stats(j);
  }

  void transmit(Train& train) override;

 private:
  PacketServer h2d_, d2h_;
};

}  // namespace tpusim
