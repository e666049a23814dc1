// What a run's transfers carried over the links, the NoC, PCIe and the hosts (the stats
// slice.chipN.ici.x+, .noc, .pcie.h2d|d2h, slice.hostH, slice.hostH.dcn), for the analytical engine. Bytes and
// packets do not depend on timing, so they are counted once the run is over, for every core: a
// send along its own route (sim/ici/ici_timing.h), a host transfer as its core's class
// representative counted it (sim/engine/replica_classes.h).
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "sim/analysis/program_plan.h"
#include "sim/engine/engine.h"
#include "sim/engine/replica_classes.h"
#include "sim/host/host_stats.h"
#include "sim/hw/hw_config.h"
#include "sim/hw/resolved_hw.h"
#include "sim/ici/link_stats.h"

namespace tpusim {

// A core's host loads and stores, counted while it runs.
struct HostTransfers {
  HostStats host;                     // its chip's host's share
  uint64_t pcie_packets[2] = {0, 0};  // their packets on its chip's PCIe: h2d, d2h (DCN stores included)
  uint64_t dcn_packets = 0;           // its DCN stores' packets through its host's network interface
  void reset() { *this = HostTransfers{}; }
};

class NetworkCounts {
 public:
  void reset(const HwConfig& hw, const ResolvedHw& r);
  // Every core of `plan`: its sends along their routes; its host transfers, those of
  // `host_of(slot of its class representative)`.
  void count(const ProgramPlan& plan, const ReplicaClasses& classes,
             const std::function<const HostTransfers&(uint32_t slot)>& host_of);
  // The stats that carried something, their utilization over `r.device_cycles`.
  void dump(RunResult& r);

 private:
  const HwConfig* hw_ = nullptr;
  uint32_t ports_ = 0;
  std::vector<LinkStats> links_;  // per chip and ICI port index
  std::vector<LinkStats> noc_;    // per chip
  std::vector<LinkStats> pcie_;   // per chip: h2d, d2h
  std::vector<HostStats> hosts_;
  std::vector<LinkStats> dcn_;    // per host: its network interface (multislice)
  std::vector<uint64_t> to_bytes_, to_packets_;  // count() scratch, per peer chip
  std::vector<uint32_t> peers_;
};

}  // namespace tpusim
