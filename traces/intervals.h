// Half-open time intervals [start, end) in integer nanoseconds, and the set operations the trace
// analysis needs: union (busy time of a lane whose operations may nest or overlap), clipping to a
// window, and overlap with a sorted union (how much of a gap another lane was busy).
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

namespace tpusim {

struct Interval {
  int64_t start = 0, end = 0;
  int64_t length() const { return end > start ? end - start : 0; }
  bool operator==(const Interval&) const = default;
};

// Sorted, disjoint, non-empty intervals covering the same time as `v` (touching ones merged).
inline std::vector<Interval> interval_union(std::vector<Interval> v) {
  std::sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) {
    return a.start != b.start ? a.start < b.start : a.end < b.end;
  });
  std::vector<Interval> out;
  for (const Interval& i : v) {
    if (i.end <= i.start) continue;
    if (!out.empty() && i.start <= out.back().end) out.back().end = std::max(out.back().end, i.end);
    else out.push_back(i);
  }
  return out;
}

inline int64_t total_length(const std::vector<Interval>& v) {
  int64_t t = 0;
  for (const Interval& i : v) t += i.length();
  return t;
}

// The parts of a sorted union `u` inside `w`.
inline std::vector<Interval> clip(const std::vector<Interval>& u, Interval w) {
  std::vector<Interval> out;
  auto it = std::lower_bound(u.begin(), u.end(), w.start, [](const Interval& i, int64_t t) { return i.end <= t; });
  for (; it != u.end() && it->start < w.end; ++it) {
    const Interval c{std::max(it->start, w.start), std::min(it->end, w.end)};
    if (c.end > c.start) out.push_back(c);
  }
  return out;
}

// The parts of `w` not covered by the sorted union `u`.
inline std::vector<Interval> complement(const std::vector<Interval>& u, Interval w) {
  std::vector<Interval> out;
  int64_t t = w.start;
  for (const Interval& c : clip(u, w)) {
    if (c.start > t) out.push_back({t, c.start});
    t = std::max(t, c.end);
  }
  if (t < w.end) out.push_back({t, w.end});
  return out;
}

}  // namespace tpusim
