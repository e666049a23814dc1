#include "sim/ici/router.h"

#include <string>

#include "sim/ici/ici_timing.h"

namespace tpusim {

Router::Router(sc_core::sc_module_name name, uint32_t chip, const HwConfig& hw)
    : sc_module(name),
      in("in"),
      to_core("to_core", hw.chip.cores),
      out("out", ici_port_count(hw.slice.topology)),
      chip_(chip),
      topology_(hw.slice.topology) {
  in.bind(*this);
  links_.resize(ici_port_count(topology_));
  for (uint32_t port : ici_ports_of(topology_, chip_)) {
    links_[port] = std::make_unique<Link>(ici_port_name(port).c_str());
    links_[port]->out.bind(out[port]);  // hierarchical: the chip's parent binds out[port]
  }
}

void Router::configure(const ResolvedHw& r) {
  for (auto& l : links_)
    if (l) l->configure(r.ici_link_bytes_per_cycle, r.ici_hop_cycles);
}

void Router::begin_run(const RunContext* run) {
  for (auto& l : links_)
    if (l) l->begin_run(run);
}

void Router::end_run(uint64_t run_cycles) {
  for (auto& l : links_)
    if (l) l->end_run(run_cycles);
}

void Router::dump_stats(nlohmann::json& j) const {
  for (const auto& l : links_)
    if (l) l->dump_stats(j);
}

void Router::transmit(Train& t) {
  if (t.dst_chip == chip_) return to_core[t.dst_core]->transmit(t);
  links_[ici_next_port(topology_, chip_, t.dst_chip)]->transmit(t);
}

}  // namespace tpusim
