// Sync: the slice's barrier service. A barrier group completes when all its participants (the
// cores whose stream holds that barrier, program_plan.h) have arrived; the release is immediate
// (zero latency: cross-chip synchronisation over ICI is not modelled yet).
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include <systemc>

#include "sim/core/core_ifs.h"

namespace tpusim {

class Sync : public sc_core::sc_module, public BarrierIf {
 public:
  explicit Sync(sc_core::sc_module_name name) : sc_module(name) {}

  void begin_run(const std::vector<uint32_t>& participants) {
    expected_ = participants;
    waiting_.assign(participants.size(), {});
  }

  void arrive(uint32_t group, std::function<void()> release) override {
    auto& w = waiting_[group];
    w.push_back(std::move(release));
    if (w.size() < expected_[group]) return;
    for (auto& r : w) r();
    w.clear();
  }

 private:
  std::vector<uint32_t> expected_;
  std::vector<std::vector<std::function<void()>>> waiting_;
};

}  // namespace tpusim
