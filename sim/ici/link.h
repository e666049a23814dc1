// Link: one direction of the ICI connection leaving a chip's port ("slice.chip3.ici.x+"): the
// port's parallel links as one bandwidth stage (sim/ici/packet_server.h) of
// ici_link_bytes_per_cycle, followed by the hop latency (wire + the next router). Its `out` port
// leads to the neighbour's router; the slice binds it (through the router's and chip's `out`).
#pragma once
#include <cstdint>

#include <nlohmann/json.hpp>
#include <systemc>

#include "sim/base/sc_support.h"
#include "sim/ici/packet_server.h"
#include "sim/ici/train.h"

namespace tpusim {

class Link : public sc_core::sc_module {
 public:
  sc_core::sc_port<TrainIf> out;  // the neighbour chip's router

  explicit Link(sc_core::sc_module_name name) : sc_module(name), out("out"), server_(this->name()) {}

  void configure(double bytes_per_cycle, uint64_t hop_cycles) { server_.configure(bytes_per_cycle, hop_cycles); }
  void begin_run(const RunContext* run) { server_.begin_run(run); }
  void end_run(uint64_t run_cycles) { server_.end_run(run_cycles); }
  void dump_stats(nlohmann::json& j) const { server_.dump_stats(j); }
  // Called by the owning router for packets leaving through this port.
  void transmit(Train& train) {
    server_.pass(train);
    out->transmit(train);
  }

 private:
  PacketServer server_;
};

}  // namespace tpusim
