// Sync: the slice's barrier service. When a barrier group completes is BarrierGroups' rule
// (sim/slice/barrier_groups.h, shared with the analytical engine): when its last participant
// arrives, with zero latency. Arrivals come at simulation time, so the release is now.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include <systemc>

#include "sim/base/core_ifs.h"
#include "sim/slice/barrier_groups.h"

namespace tpusim {

class Sync : public sc_core::sc_module, public BarrierIf {
 public:
  explicit Sync(sc_core::sc_module_name name) : sc_module(name) {}

  void begin_run(const std::vector<uint32_t>& participants) {
    groups_.reset(participants);
    waiting_.assign(participants.size(), {});
  }

  void arrive(uint32_t group, std::function<void()> release) override {
    auto& w = waiting_[group];
    w.push_back(std::move(release));
    if (!groups_.arrive(group, sc_core::sc_time_stamp().value())) return;
    for (auto& r : w) r();
    w.clear();
  }

 private:
  BarrierGroups groups_;
  std::vector<std::vector<std::function<void()>>> waiting_;
};

}  // namespace tpusim
