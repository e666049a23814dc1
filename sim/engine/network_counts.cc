#include "sim/engine/network_counts.h"

#include <string>

#include "sim/base/stats.h"
#include "sim/ici/ici_timing.h"

namespace tpusim {

void NetworkCounts::reset(const HwConfig& hw, const ResolvedHw& r) {
  hw_ = &hw;
  ports_ = ici_port_count(hw.slice.topology);
  const uint32_t chips = hw.slice.chips();
  links_.assign(size_t(chips) * ports_, LinkStats{});
  for (auto& l : links_) l.reset(r.ici_link_bytes_per_cycle);
  noc_.assign(chips, LinkStats{});
  for (auto& l : noc_) l.reset(r.noc_bytes_per_cycle);
  pcie_.assign(size_t(chips) * 2, LinkStats{});
  for (auto& l : pcie_) l.reset(r.pcie_bytes_per_cycle);
  hosts_.assign(hw.slice.hosts, HostStats{});
  dcn_.assign(hw.slice.hosts, LinkStats{});
  for (auto& l : dcn_) l.reset(r.dcn_host_bytes_per_cycle);
}

void NetworkCounts::count(const ProgramPlan& plan, const ReplicaClasses& classes,
                          const std::function<const HostTransfers&(uint32_t slot)>& host_of) {
  const HwConfig& hw = *hw_;
  const TopologyParams& topo = hw.slice.topology;
  to_bytes_.assign(hw.slice.chips(), 0);
  to_packets_.assign(hw.slice.chips(), 0);
  for (const CorePlan& cp : plan.cores()) {
    if (!cp.has_transfers) continue;
    // What the core sends to each peer chip, then each route walked once.
    peers_.clear();
    isa::PeerTable::Reader peers = cp.peer_reader();
    for (uint32_t k = 0; k < cp.sends_recvs.size(); ++k) {
      const uint32_t peer = peers.next().chip;
      if (cp.op[cp.sends_recvs[k]] != uint8_t(isa::Op::kSend)) continue;
      if (!to_packets_[peer]) peers_.push_back(peer);
      to_bytes_[peer] += cp.transfer_bytes[k];
      to_packets_[peer] += network_packets(hw.chip, cp.transfer_bytes[k]);  // at least one
    }
    for (uint32_t peer : peers_) {
      auto carry = [&](LinkStats& l) {
        l.bytes += to_bytes_[peer];
        l.packets += to_packets_[peer];
      };
      if (peer == cp.chip) carry(noc_[cp.chip]);
      for (uint32_t at = cp.chip; at != peer;) {
        const uint32_t port = ici_next_port(topo, at, peer);
        carry(links_[size_t(at) * ports_ + port]);
        at = *ici_neighbour(topo, at, port);
      }
      to_bytes_[peer] = to_packets_[peer] = 0;
    }
    const HostTransfers& h = host_of(classes.rep_of[cp.slot]);
    for (uint32_t d = 0; d < 2; ++d) {
      LinkStats& l = pcie_[size_t(cp.chip) * 2 + d];
      l.bytes += d == 0 ? h.host.load_bytes : h.host.store_bytes + h.host.dcn_bytes;
      l.packets += h.pcie_packets[d];
    }
    const uint32_t host_id = cp.chip / hw.slice.chips_per_host;
    HostStats& host = hosts_[host_id];
    host.loads += h.host.loads;
    host.stores += h.host.stores;
    host.load_bytes += h.host.load_bytes;
    host.store_bytes += h.host.store_bytes;
    host.dcn_sends += h.host.dcn_sends;
    host.dcn_bytes += h.host.dcn_bytes;
    dcn_[host_id].bytes += h.host.dcn_bytes;
    dcn_[host_id].packets += h.dcn_packets;
  }
}

// Same keys as the SystemC blocks; only the stages that carried something.
void NetworkCounts::dump(RunResult& r) {
  auto dump = [&](const std::string& name, LinkStats& l) {
    if (!l.used()) return;
    l.run_cycles = r.device_cycles;
    StatGroup g(name);
    l.declare(g);
    r.stats[name] = g.dump();
  };
  for (uint32_t c = 0; c < hw_->slice.chips(); ++c) {
    const std::string chip = "slice.chip" + std::to_string(c);
    for (uint32_t p = 0; p < ports_; ++p) dump(chip + ".ici." + ici_port_name(p), links_[size_t(c) * ports_ + p]);
    dump(chip + ".noc", noc_[c]);
    dump(chip + ".pcie.h2d", pcie_[size_t(c) * 2]);
    dump(chip + ".pcie.d2h", pcie_[size_t(c) * 2 + 1]);
  }
  for (uint32_t h = 0; h < hosts_.size(); ++h) {
    dump("slice.host" + std::to_string(h) + ".dcn", dcn_[h]);
    if (!hosts_[h].used()) continue;
    StatGroup g("slice.host" + std::to_string(h));
    hosts_[h].declare(g);
    r.stats[g.name()] = g.dump();
  }
}

}  // namespace tpusim
