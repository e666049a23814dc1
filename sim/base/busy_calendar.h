// Occupancy of a resource shared by in-order queues that are scheduled out of time order.
//
// Both engines decide an instruction's start as soon as its deps' completion times are known, not
// when simulation time gets there (sim/core/sequencer.h, sim/engine/analytical_engine.cc). With
// one queue per unit that is exact: the unit is free at the end of the queue's previous
// instruction. With a background queue on the same unit (program.h: `async` instructions) one
// queue may have been placed far ahead of the other; a "free from" time would then push the other
// queue's work behind all of it, although the unit is idle in between. A calendar of busy
// intervals instead gives each instruction the earliest idle interval at or after its ready time
// that fits it: work fills the unit's gaps the way the hardware's issue logic would (first come,
// first served at each idle moment), without simulating time. Whoever is placed first keeps its
// interval (no preemption); which queue that is depends on the engine's scan order, so the two
// engines differ where background and main work compete for the same interval (measured cases
// in sim/README.md, "Background queues": one contended instruction can end ~30% later).
//
// Intervals are kept sorted in a vector: placements are mostly at or near the end, and intervals
// before every queue's last start can never be touched again, so they are dropped (prune).
#pragma once
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace tpusim {

class BusyCalendar {
 public:
  void clear() {
    iv_.clear();
    head_ = 0;
  }
  size_t size() const { return iv_.size() - head_; }

  // The earliest t >= at such that [t, t + dur) meets no busy interval (a zero-length occupancy
  // only has to fall outside every interval).
  uint64_t first_fit(uint64_t at, uint64_t dur) const {
    auto it = after(at);
    if (it != iv_.begin() + long(head_) && std::prev(it)->end > at) at = std::prev(it)->end;
    for (; it != iv_.end() && it->start < at + dur; ++it) at = std::max(at, it->end);
    return at;
  }

  // The start of the first busy interval after t (UINT64_MAX: none).
  uint64_t next_start(uint64_t t) const {
    const auto it = after(t);
    return it == iv_.end() ? UINT64_MAX : it->start;
  }

  // Serves `dur` cycles of work from `at` on in the time idle both here and in `other`, piece by
  // piece in the gaps (the unit interleaves requests: first come, first served at each idle moment,
  // rather than waiting for one gap long enough for all of it), and marks the pieces busy here.
  // Returns {the first piece's start, the last piece's end}.
  std::pair<uint64_t, uint64_t> fill(uint64_t at, uint64_t dur, const BusyCalendar& other) {
    uint64_t t = idle_from(at, other), begin = t;
    for (uint64_t left = dur; left > 0;) {
      const uint64_t gap = std::min(next_start(t), other.next_start(t)) - t;
      const uint64_t piece = std::min(left, gap);
      insert(t, piece);
      left -= piece;
      t += piece;
      if (left > 0) t = idle_from(t, other);
    }
    return {begin, t};
  }

  // Marks [start, start + dur) busy; it must be idle (first_fit). Adjacent intervals merge.
  void insert(uint64_t start, uint64_t dur) {
    if (dur == 0) return;
    const uint64_t end = start + dur;
    if (size() > 0 && iv_.back().end <= start) {  // the common case: after everything
      if (iv_.back().end == start)
        iv_.back().end = end;
      else
        iv_.push_back({start, end});
      return;
    }
    auto it = after(start);
    const bool join_prev = it != iv_.begin() + long(head_) && std::prev(it)->end == start;
    const bool join_next = it != iv_.end() && it->start == end;
    if (join_prev && join_next) {
      std::prev(it)->end = it->end;
      iv_.erase(it);
    } else if (join_prev) {
      std::prev(it)->end = end;
    } else if (join_next) {
      it->start = start;
    } else {
      iv_.insert(it, {start, end});
    }
  }

  // Marks [start, start + dur) busy whether or not it is idle: the union with what is there (for
  // occupancies that may overlap each other but not a third kind of work, see sim/hbm/
  // hbm_server.h; and occupancies longer than the interval they were fitted into, sim/base/
  // unit_pool.h).
  void add(uint64_t start, uint64_t dur) {
    if (dur == 0) return;
    const uint64_t end = start + dur;
    auto first = after(start);
    if (first != iv_.begin() + long(head_) && std::prev(first)->end >= start) --first;
    auto last = first;
    while (last != iv_.end() && last->start <= end) ++last;
    if (first == last) {
      iv_.insert(first, {start, end});
      return;
    }
    first->start = std::min(first->start, start);
    first->end = std::max(std::prev(last)->end, end);
    iv_.erase(first + 1, last);
  }

  // Drops the intervals that end at or before `frontier` (no later placement starts before it).
  void prune(uint64_t frontier) {
    while (head_ < iv_.size() && iv_[head_].end <= frontier) ++head_;
    if (head_ > 1024 && head_ * 2 > iv_.size()) {
      iv_.erase(iv_.begin(), iv_.begin() + long(head_));
      head_ = 0;
    }
  }

 private:
  struct Interval {
    uint64_t start, end;
  };
  using Iter = std::vector<Interval>::iterator;
  using ConstIter = std::vector<Interval>::const_iterator;
  // The first interval starting after t (upper_bound), searched from the end: placements are
  // mostly near it, and a binary search over a long calendar misses the cache at every level.
  template <class It>
  static It after(It lo, It hi, uint64_t t) {
    size_t step = 1;
    It top = hi;
    while (top != lo) {
      const It probe = size_t(top - lo) > step ? top - long(step) : lo;
      if (probe->start <= t) {
        lo = probe + 1;
        break;
      }
      top = probe;
      step *= 2;
    }
    return std::upper_bound(lo, top, t, [](uint64_t x, const Interval& v) { return x < v.start; });
  }
  ConstIter after(uint64_t t) const { return after(iv_.cbegin() + long(head_), iv_.cend(), t); }
  // The first t' >= t idle both here and in `other`.
  uint64_t idle_from(uint64_t t, const BusyCalendar& other) const {
    for (;;) {
      const uint64_t a = first_fit(t, 0);
      const uint64_t b = other.first_fit(a, 0);
      if (b == a) return a;
      t = b;
    }
  }
  Iter after(uint64_t t) { return after(iv_.begin() + long(head_), iv_.end(), t); }
  std::vector<Interval> iv_;
  size_t head_ = 0;  // intervals before it are pruned
};

// A unit serving several in-order queues (a main and a background queue). With work in only one
// queue it is the plain in-order unit (start = max(ready, end of the previous occupancy)), so
// programs without background work time exactly as before; otherwise the queues share a
// BusyCalendar and each keeps its own order (a start is never before its queue's last start).
class SharedUnit {
 public:
  // `sizes`: per queue, how many instructions it will place.
  void reset(const std::vector<uint32_t>& sizes) {
    remaining_ = sizes;
    last_start_.assign(sizes.size(), 0);
    uint32_t used = 0;
    for (uint32_t s : sizes) used += s > 0;
    shared_ = used > 1;
    free_ = 0;
    cal_.clear();
    pruned_at_ = 0;
  }

  // Places an occupancy of `dur` for queue `q`, ready at `ready`; returns its start. `floor`: no
  // later placement will start before it (the caller knows; e.g. simulation time), which lets
  // the calendar forget what lies before even while a queue's last start is older.
  uint64_t place(uint32_t q, uint64_t ready, uint64_t dur, uint64_t floor = 0) {
    if (!shared_) {
      const uint64_t start = std::max(ready, free_);
      free_ = start + dur;
      return start;
    }
    const uint64_t start = cal_.first_fit(std::max(ready, last_start_[q]), dur);
    cal_.insert(start, dur);
    last_start_[q] = start;
    if (remaining_[q] > 0) --remaining_[q];
    if (cal_.size() >= 2 * pruned_at_ + 64) {
      uint64_t frontier = UINT64_MAX;
      for (size_t k = 0; k < remaining_.size(); ++k)
        if (remaining_[k] > 0) frontier = std::min(frontier, last_start_[k]);
      cal_.prune(std::max(frontier, floor));
      pruned_at_ = cal_.size();
    }
    return start;
  }

 private:
  bool shared_ = false;
  uint64_t free_ = 0;
  std::vector<uint32_t> remaining_;
  std::vector<uint64_t> last_start_;
  BusyCalendar cal_;
  size_t pruned_at_ = 0;
};

}  // namespace tpusim
