// Host: one host machine of the slice ("slice.host0"), the far end of its chips' PCIe links
// (chips [h * chips_per_host, (h + 1) * chips_per_host)). It owns host RAM, which is the source
// of host loads and the destination of host stores. Host RAM adds no time of its own (PCIe is
// the bottleneck); a store is complete when its last byte has crossed PCIe. The host CPU
// (tracing, compilation) is modelled by the workload driver, not here.
#pragma once
#include <nlohmann/json.hpp>
#include <systemc>

#include "sim/base/stats.h"
#include "sim/host/host_stats.h"
#include "sim/ici/train.h"

namespace tpusim {

class Host : public sc_core::sc_module, public TrainIf {
 public:
  sc_core::sc_export<TrainIf> in;  // from the PCIe links of the host's chips

  explicit Host(sc_core::sc_module_name name);

  void begin_run() { stats_.reset(); }
  void dump_stats(nlohmann::json& j) const {
    if (stats_.used()) j[group_.name()] = group_.dump();
  }

  void transmit(Train& t) override;

 private:
  HostStats stats_;
  StatGroup group_;
};

}  // namespace tpusim
