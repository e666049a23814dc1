// Router: a chip's ICI switch ("slice.chip3.ici"). Trains enter through `in` (from the chip's
// cores and from the neighbours' links) and leave either to a local core (`to_core`, when the
// chip is the destination) or through one of the chip's wired ports, each a Link child
// ("slice.chip3.ici.x+") whose far end is the neighbour's router (`out`, bound by the chip's
// parent). Routing is dimension order (sim/ici/ici_timing.h: ici_next_port). The router itself
// adds no time: the hop latency is the link's; buffers are unbounded (no backpressure: a flow
// that is slowed down further along its path queues in the router instead of slowing its source).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>
#include <systemc>

#include "sim/base/sc_support.h"
#include "sim/hw/resolved_hw.h"
#include "sim/ici/link.h"
#include "sim/ici/train.h"

namespace tpusim {

class Router : public sc_core::sc_module, public TrainIf {
 public:
  using OptionalPort = sc_core::sc_port<TrainIf, 1, sc_core::SC_ZERO_OR_MORE_BOUND>;

  sc_core::sc_export<TrainIf> in;                // from the chip's cores and the neighbours' links
  sc_core::sc_vector<sc_core::sc_port<TrainIf>> to_core;  // per core of the chip: its transfer unit
  sc_core::sc_vector<OptionalPort> out;          // per ICI port index (ici_timing.h): the neighbour
                                                 // behind it; bound only where a link is wired

  // Structure: the chip's id and the topology decide which ports carry a link.
  Router(sc_core::sc_module_name name, uint32_t chip, const HwConfig& hw);

  void configure(const ResolvedHw& r);
  void begin_run(const RunContext* run);
  void end_run(uint64_t run_cycles);
  void dump_stats(nlohmann::json& j) const;
  bool wired(uint32_t port) const { return port < links_.size() && links_[port]; }

  void transmit(Train& train) override;

 private:
  uint32_t chip_;
  TopologyParams topology_;
  std::vector<std::unique_ptr<Link>> links_;  // by port index; null where no link is wired
};

}  // namespace tpusim
