// Slice: the top module ("slice"): chips (count = product of topology dims), the hosts that drive
// them over PCIe (`slice.hosts`, chips [h * chips_per_host, (h + 1) * chips_per_host) on host h),
// and the barrier service. The slice binds the chips' ICI ports to their neighbours (a directed
// link leaves chip A's port towards B's router: chip(A).ici_out[port] -> chip(B).ici_in) and each
// chip's PCIe link to its host. Built once per process from the config's structure; numeric
// parameters are applied by configure(). Idle chips, cores and links cost nothing at run time:
// their processes never wake.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>
#include <systemc>

#include "sim/base/sc_support.h"
#include "sim/chip/chip.h"
#include "sim/host/host.h"
#include "sim/hw/resolved_hw.h"
#include "sim/slice/sync.h"

namespace tpusim {

class Slice : public sc_core::sc_module {
 public:
  Slice(sc_core::sc_module_name name, const HwConfig& hw);

  // Applies every numeric parameter (`r`: resolve_hw(hw)) to every block.
  void configure(const HwConfig& hw, const ResolvedHw& r);
  // Network blocks and hosts of every chip (per run; cheap).
  void begin_run(const RunContext* run);
  void end_run(uint64_t run_cycles);
  // Stats of the network blocks and hosts that carried something in this run.
  void dump_network_stats(nlohmann::json& out) const;

  Chip& chip(uint32_t i) { return *chips_[i]; }
  uint32_t chips() const { return uint32_t(chips_.size()); }
  Sync& sync() { return sync_; }

 private:
  std::vector<std::unique_ptr<Chip>> chips_;
  std::vector<std::unique_ptr<Host>> hosts_;
  Sync sync_;
};

}  // namespace tpusim
