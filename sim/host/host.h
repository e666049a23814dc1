// Host: one host machine of the slice ("slice.host0"), the far end of its chips' PCIe links
// (chips [h * chips_per_host, (h + 1) * chips_per_host)). It owns host RAM, which is the source
// of host loads and the destination of host stores. Host RAM adds no time of its own (PCIe is
// the bottleneck); a store is complete when its last byte has crossed PCIe. A data-center-network
// store (multislice, isa::Instr::dcn) goes on through the host's network interfaces ("slice.host0.dcn",
// one bandwidth stage shared by the host's chips, followed by the DCN's latency) and is complete
// when it is in the other slice's host RAM. The host CPU (tracing, compilation) is modelled by the
// workload driver, not here.
#pragma once
#include <nlohmann/json.hpp>
#include <systemc>

#include "sim/base/sc_support.h"
#include "sim/base/stats.h"
#include "sim/host/host_stats.h"
#include "sim/hw/resolved_hw.h"
#include "sim/ici/packet_server.h"
#include "sim/ici/train.h"

namespace tpusim {

class Host : public sc_core::sc_module, public TrainIf {
 public:
  sc_core::sc_export<TrainIf> in;  // from the PCIe links of the host's chips

  explicit Host(sc_core::sc_module_name name);

  void configure(const ResolvedHw& r) { dcn_.configure(r.dcn_host_bytes_per_cycle, r.dcn_latency_cycles); }
  void begin_run(const RunContext* run) {
    stats_.reset();
    dcn_.begin_run(run);
  }
  void end_run(uint64_t run_cycles) { dcn_.end_run(run_cycles); }
  void dump_stats(nlohmann::json& j) const {
    if (stats_.used()) j[group_.name()] = group_.dump();
    dcn_.dump_stats(j);
  }

  void transmit(Train& t) override;

 private:
  HostStats stats_;
  StatGroup group_;
  PacketServer dcn_;
};

}  // namespace tpusim
