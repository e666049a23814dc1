#include "sim/slice/slice.h"

#include <string>

#include "sim/ici/ici_timing.h"

namespace tpusim {

Slice::Slice(sc_core::sc_module_name name, const HwConfig& hw) : sc_module(name), sync_("sync") {
  const TopologyParams& topo = hw.slice.topology;
  for (uint32_t h = 0; h < hw.slice.hosts; ++h) hosts_.push_back(std::make_unique<Host>(("host" + std::to_string(h)).c_str()));
  for (uint32_t i = 0; i < hw.slice.chips(); ++i) {
    chips_.push_back(std::make_unique<Chip>(("chip" + std::to_string(i)).c_str(), hw, i));
    chips_.back()->sync.bind(sync_);
    chips_.back()->host.bind(hosts_[i / hw.slice.chips_per_host]->in);
  }
  for (uint32_t i = 0; i < chips_.size(); ++i)
    for (uint32_t port : ici_ports_of(topo, i)) chips_[i]->ici_out[port].bind(chips_[*ici_neighbour(topo, i, port)]->ici_in);
}

void Slice::configure(const HwConfig& hw, const ResolvedHw& r) {
  for (auto& c : chips_) c->configure(hw, r);
  for (auto& h : hosts_) h->configure(r);
}

void Slice::begin_run(const RunContext* run) {
  for (auto& c : chips_) c->begin_run(run);
  for (auto& h : hosts_) h->begin_run(run);
}

void Slice::end_run(uint64_t run_cycles) {
  for (auto& c : chips_) c->end_run(run_cycles);
  for (auto& h : hosts_) h->end_run(run_cycles);
}

void Slice::dump_network_stats(nlohmann::json& out) const {
  for (const auto& c : chips_) c->dump_network_stats(out);
  for (const auto& h : hosts_) h->dump_stats(out);
}

}  // namespace tpusim
