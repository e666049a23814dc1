#include "compiler/collectives/collective_plan.h"

#include <algorithm>
#include <stdexcept>

namespace tpusim::compiler {

const char* collective_name(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce: return "all-reduce";
    case CollectiveKind::kReduceScatter: return "reduce-scatter";
    case CollectiveKind::kAllGather: return "all-gather";
    case CollectiveKind::kAllToAll: return "all-to-all";
  }
  return "?";
}

const char* algorithm_name(CollectiveAlgorithm algorithm) {
  switch (algorithm) {
    case CollectiveAlgorithm::kAuto: return "auto";
    case CollectiveAlgorithm::kRing: return "ring";
    case CollectiveAlgorithm::kDimensionByDimension: return "dims";
  }
  return "?";
}

PlanStep& CollectivePlan::add(Combine combine, uint32_t lane, uint32_t count, std::vector<uint32_t> send_to,
                              std::vector<uint32_t> first, const char* what, std::vector<uint32_t> recv_first) {
  PlanStep s;
  s.combine = combine;
  s.lane = lane;
  s.count = count;
  s.what = what;
  if (recv_first.empty()) {
    recv_first.assign(send_to.size(), 0);
    for (size_t i = 0; i < send_to.size(); ++i) recv_first[send_to[i]] = first[i];
  }
  s.send_to = std::move(send_to);
  s.first = std::move(first);
  s.recv_first = std::move(recv_first);
  steps.push_back(std::move(s));
  return steps.back();
}

namespace {

// A chunk's value: the sorted ids of the contributions it holds (all-reduce family: core indices;
// all-to-all: source * n + destination). Empty: the core does not hold it.
using Value = std::vector<uint32_t>;

std::string where(size_t step, uint32_t core, uint32_t lane, uint32_t chunk) {
  return "step " + std::to_string(step) + ", core " + std::to_string(core) + ", lane " + std::to_string(lane) +
         ", chunk " + std::to_string(chunk);
}

}  // namespace

std::string execute_plan(const CollectivePlan& p) {
  const uint32_t n = p.cores, C = p.chunks;
  // state[(core * lanes + lane) * C + chunk]
  std::vector<Value> state(size_t(n) * p.lanes * C);
  auto at = [&](uint32_t core, uint32_t lane, uint32_t chunk) -> Value& {
    return state[(size_t(core) * p.lanes + lane) * C + chunk];
  };
  for (uint32_t i = 0; i < n; ++i)
    for (uint32_t l = 0; l < p.lanes; ++l)
      for (uint32_t c = 0; c < C; ++c) {
        switch (p.kind) {
          case CollectiveKind::kAllReduce:
          case CollectiveKind::kReduceScatter: at(i, l, c) = {i}; break;
          case CollectiveKind::kAllGather:
            if (p.owner[l][c] == i) at(i, l, c) = {i};
            break;
          case CollectiveKind::kAllToAll:
            if (c < n) at(i, l, c) = {i * n + c};
            break;
        }
      }
  for (size_t k = 0; k < p.steps.size(); ++k) {
    const PlanStep& s = p.steps[k];
    if (s.send_to.size() != n || s.first.size() != n || s.recv_first.size() != n) return "step " + std::to_string(k) + ": not one transfer per core";
    std::vector<bool> receives(n, false);
    for (uint32_t i = 0; i < n; ++i) {
      if (s.send_to[i] >= n || s.send_to[i] == i || receives[s.send_to[i]])
        return "step " + std::to_string(k) + ": send_to is not a permutation without fixed points";
      receives[s.send_to[i]] = true;
    }
    // Values sent in a step are those before it (each core sends and receives once per step).
    std::vector<std::vector<Value>> sent(n);
    for (uint32_t i = 0; i < n; ++i)
      for (uint32_t c = 0; c < s.count; ++c) {
        if (s.first[i] + c >= C) return where(k, i, s.lane, s.first[i] + c) + ": chunk out of range";
        const Value& v = at(i, s.lane, s.first[i] + c);
        if (v.empty()) return where(k, i, s.lane, s.first[i] + c) + ": sends a chunk it does not hold";
        sent[i].push_back(v);
      }
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t j = s.send_to[i];
      for (uint32_t c = 0; c < s.count; ++c) {
        if (s.recv_first[j] + c >= C) return where(k, j, s.lane, s.recv_first[j] + c) + ": chunk out of range";
        Value& dst = at(j, s.lane, s.recv_first[j] + c);
        const Value& v = sent[i][c];
        if (s.combine == Combine::kCopy) {
          dst = v;
          continue;
        }
        Value sum;
        std::set_union(dst.begin(), dst.end(), v.begin(), v.end(), std::back_inserter(sum));
        if (dst.empty() || sum.size() != dst.size() + v.size())
          return where(k, j, s.lane, s.recv_first[j] + c) + ": a contribution would be counted twice";
        dst = std::move(sum);
      }
    }
  }
  Value all(n);
  for (uint32_t i = 0; i < n; ++i) all[i] = i;
  if (p.kind == CollectiveKind::kAllReduce && !p.device.empty()) {
    if (p.device.size() != n) return "device: not one entry per core";
    const uint32_t devices = *std::max_element(p.device.begin(), p.device.end()) + 1;
    for (uint32_t d = 0; d < devices; ++d)
      for (uint32_t l = 0; l < p.lanes; ++l)
        for (uint32_t c = 0; c < C; ++c) {
          bool held = false;
          for (uint32_t i = 0; i < n && !held; ++i) held = p.device[i] == d && at(i, l, c) == all;
          if (!held)
            return "after the last step, no core of device " + std::to_string(d) + " holds lane " + std::to_string(l) +
                   " chunk " + std::to_string(c) + " fully reduced";
        }
    return "";
  }
  for (uint32_t i = 0; i < n; ++i)
    for (uint32_t l = 0; l < p.lanes; ++l)
      for (uint32_t c = 0; c < C; ++c) {
        const Value& v = at(i, l, c);
        bool ok = true;
        switch (p.kind) {
          case CollectiveKind::kAllReduce: ok = v == all; break;
          case CollectiveKind::kReduceScatter: ok = p.owner[l][c] != i || v == all; break;
          case CollectiveKind::kAllGather: ok = v == Value{p.owner[l][c]}; break;
          case CollectiveKind::kAllToAll:
            if (c < n) ok = c != i || v == Value{i * n + i};  // its own piece stays in the input
            else ok = c - n == i || v == Value{(c - n) * n + i};
            break;
        }
        if (!ok) return "after the last step, core " + std::to_string(i) + " lane " + std::to_string(l) + " chunk " +
                        std::to_string(c) + " holds the wrong contributions (" + std::to_string(v.size()) + ")";
      }
  return "";
}

}  // namespace tpusim::compiler
