#include "sim/vmem/vmem_check.h"

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <queue>

#include "sim/base/sim_error.h"

namespace tpusim {
namespace {

bool live_overlap(const isa::VmemAlloc& a, const isa::VmemAlloc& b) {
  return a.first_instr <= b.last_instr && b.first_instr <= a.last_instr;
}

// Capacity minus the most bytes other buffers hold at any instruction of `a`'s live range
// (error path only, so quadratic is fine). Usage only rises at a buffer's first instruction.
uint64_t free_while_live(const std::vector<isa::VmemAlloc>& allocs, size_t a, uint64_t capacity) {
  auto used_at = [&](uint32_t t) {
    uint64_t sum = 0;
    for (size_t b = 0; b < allocs.size(); ++b)
      if (b != a && allocs[b].first_instr <= t && t <= allocs[b].last_instr) sum += allocs[b].size_bytes;
    return sum;
  };
  uint64_t worst = used_at(allocs[a].first_instr);
  for (const auto& b : allocs)
    if (b.first_instr > allocs[a].first_instr && b.first_instr <= allocs[a].last_instr)
      worst = std::max(worst, used_at(b.first_instr));
  return worst >= capacity ? 0 : capacity - worst;
}

std::string describe(const isa::VmemAlloc& a) {
  return "'" + a.label + "' (" + std::to_string(a.size_bytes) + " bytes at offset " + std::to_string(a.offset_bytes) +
         ", live #" + std::to_string(a.first_instr) + "..#" + std::to_string(a.last_instr) + ")";
}

}  // namespace

VmemUsage check_vmem(const VmemParams& p, const isa::CoreProgram& prog, const std::string& block) {
  const auto& allocs = prog.vmem_allocs;
  const uint64_t capacity = p.size_bytes();
  const size_t instrs = std::max<size_t>(prog.stream_size(), 1);
  VmemUsage u;
  u.capacity_bytes = capacity;
  u.allocs = allocs.size();

  std::vector<uint32_t> order(allocs.size());
  std::iota(order.begin(), order.end(), 0u);
  for (const auto& a : allocs) {
    if (a.first_instr > a.last_instr || a.last_instr >= instrs) {
      throw SimError("invalid program: " + block + " buffer " + describe(a) + " has a live range outside the " +
                     std::to_string(prog.stream_size()) + "-instruction stream");
    }
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t x, uint32_t y) { return allocs[x].first_instr < allocs[y].first_instr; });

  // Sweep over stream positions: `live` holds the buffers live now, keyed by offset; they never
  // overlap (we would have thrown), so checking the two address neighbours of a new buffer suffices.
  std::map<uint64_t, uint32_t> live;
  auto later_end = [&](uint32_t x, uint32_t y) { return allocs[x].last_instr > allocs[y].last_instr; };
  std::priority_queue<uint32_t, std::vector<uint32_t>, decltype(later_end)> expiring(later_end);
  uint64_t used = 0;
  for (uint32_t idx : order) {
    const isa::VmemAlloc& a = allocs[idx];
    while (!expiring.empty() && allocs[expiring.top()].last_instr < a.first_instr) {
      uint32_t e = expiring.top();
      expiring.pop();
      used -= allocs[e].size_bytes;
      if (allocs[e].size_bytes > 0) live.erase(allocs[e].offset_bytes);
    }
    if (a.size_bytes > capacity || a.offset_bytes > capacity - a.size_bytes) {
      throw SimError("out of VMEM on " + block + ": buffer " + describe(a) + " does not fit in the " +
                     std::to_string(capacity) + "-byte VMEM; " + std::to_string(free_while_live(allocs, idx, capacity)) +
                     " bytes free while it is live");
    }
    if (a.size_bytes > 0) {
      auto it = live.lower_bound(a.offset_bytes);
      const isa::VmemAlloc* clash = nullptr;
      if (it != live.end() && it->first < a.offset_bytes + a.size_bytes) clash = &allocs[it->second];
      if (!clash && it != live.begin()) {
        const isa::VmemAlloc& prev = allocs[std::prev(it)->second];
        if (prev.offset_bytes + prev.size_bytes > a.offset_bytes) clash = &prev;
      }
      if (clash && live_overlap(*clash, a)) {
        throw SimError("VMEM buffers overlap on " + block + ": " + describe(*clash) + " and " + describe(a) +
                       " share addresses while both are live; " +
                       std::to_string(free_while_live(allocs, idx, capacity)) + " bytes free while '" + a.label +
                       "' is live");
      }
      live.emplace(a.offset_bytes, idx);
    }
    expiring.push(idx);
    used += a.size_bytes;
    u.peak_bytes = std::max(u.peak_bytes, used);
  }
  return u;
}

}  // namespace tpusim
