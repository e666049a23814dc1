// Barrier groups: when a barrier completes. One model for the SystemC sync service
// (sim/slice/sync.h) and the analytical engine.
//
// Rule: a core reaches its barriers in stream order (the sequencer's sync queue: a barrier is
// reached at max(its deps completed, the previous barrier's reach)); the j-th barrier with an id
// forms a group with the j-th one of every other core that has it (ProgramPlan::
// barrier_participants). The group completes when its last participant reaches it, at that
// time: the release is immediate (zero latency; synchronisation over ICI is not modelled).
// SystemC reports arrivals at simulation time, so the last one is also the latest; the
// analytical engine reports them in whatever order it places the cores, with their times.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

namespace tpusim {

class BarrierGroups {
 public:
  // `participants`: per group, how many cores take part.
  void reset(const std::vector<uint32_t>& participants) {
    expected_ = &participants;
    arrived_.assign(participants.size(), 0);
    latest_.assign(participants.size(), 0);
  }
  // `count` participants reach group `g` at `at` (the analytical engine counts a class of
  // symmetric replicas at once); returns whether the group is now complete.
  bool arrive(uint32_t g, uint64_t at, uint32_t count = 1) {
    latest_[g] = std::max(latest_[g], at);
    const bool was = complete(g);
    arrived_[g] += count;
    return !was && complete(g);
  }
  bool complete(uint32_t g) const { return arrived_[g] >= (*expected_)[g]; }
  // A complete group's release: its latest arrival.
  uint64_t release(uint32_t g) const { return latest_[g]; }

 private:
  const std::vector<uint32_t>* expected_ = nullptr;
  std::vector<uint32_t> arrived_;
  std::vector<uint64_t> latest_;
};

}  // namespace tpusim
