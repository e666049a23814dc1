// The union of half-open intervals [a, b) of integer times, kept as sorted disjoint intervals.
// Built for intervals that arrive roughly in time order (instruction completions during a
// simulation): an interval that touches the last one extends it in O(1); one that lands earlier
// is merged in with a binary search. Its size is the number of gaps in the union, not the number
// of intervals added.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

namespace tpusim {

class IntervalUnion {
 public:
  struct Span {
    uint64_t a, b;  // [a, b), a < b
  };

  void clear() { spans_.clear(); }
  void add(uint64_t a, uint64_t b) {
    if (b <= a) return;  // empty: covers nothing
    if (spans_.empty() || a > spans_.back().b) {
      spans_.push_back({a, b});
      return;
    }
    if (a >= spans_.back().a) {
      spans_.back().b = std::max(spans_.back().b, b);
      return;
    }
    // Earlier: merge with every span it touches (those with a' <= b and b' >= a).
    auto lo = std::lower_bound(spans_.begin(), spans_.end(), a, [](const Span& s, uint64_t t) { return s.b < t; });
    auto hi = std::upper_bound(lo, spans_.end(), b, [](uint64_t t, const Span& s) { return t < s.a; });
    if (lo == hi) {
      spans_.insert(lo, {a, b});
      return;
    }
    lo->a = std::min(lo->a, a);
    lo->b = std::max((hi - 1)->b, b);
    spans_.erase(lo + 1, hi);
  }

  const std::vector<Span>& spans() const { return spans_; }
  uint64_t length() const {
    uint64_t t = 0;
    for (const Span& s : spans_) t += s.b - s.a;
    return t;
  }
  // The length of this union minus its overlap with `other`: |this \ other|. Linear in both sizes.
  uint64_t length_outside(const IntervalUnion& other) const {
    uint64_t t = 0;
    size_t k = 0;
    const std::vector<Span>& o = other.spans_;
    for (const Span& s : spans_) {
      uint64_t from = s.a;
      while (k < o.size() && o[k].b <= from) ++k;
      for (size_t j = k; j < o.size() && o[j].a < s.b; ++j) {
        if (o[j].a > from) t += o[j].a - from;
        from = std::max(from, o[j].b);
        if (from >= s.b) break;
      }
      if (from < s.b) t += s.b - from;
    }
    return t;
  }

 private:
  std::vector<Span> spans_;
};

}  // namespace tpusim
