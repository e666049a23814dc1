// A sharing core's peer table (isa::CoreProgram::peers): the peer of each of its stream's kSend and
// kRecv, in stream order, stored as runs. A collective's transfers alternate between a send to one
// core and a receive from another, piece after piece and step after step (a ring's every step: the
// same two neighbours), so the table is a few runs per collective where one entry per transfer
// was ~10^6 entries per core and 1.9 GB per program on a 70B-class step over 256 chips.
//
// A run of `count` entries from index `first` alternates two peers: entry first + j is `a` for
// even j, `b` for odd j (a == b: one peer throughout). Reading entry k finds its run by binary
// search; reading in order (or nearly: a matching receive a few transfers on) passes a hint, the
// run found last, and costs O(1).
#pragma once
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <vector>

namespace tpusim::isa {

// A transfer peer: core `core` of chip `chip`.
struct PeerRef {
  uint32_t chip = 0;
  uint32_t core = 0;
  bool operator==(const PeerRef&) const = default;
};

class PeerTable {
  struct Run {
    uint32_t first = 0;  // index of its first entry
    uint32_t count = 0;
    PeerRef a, b;
    bool operator==(const Run&) const = default;
  };

 public:
  PeerTable() = default;
  PeerTable(std::initializer_list<PeerRef> peers) {
    for (const PeerRef& p : peers) push_back(p);
  }
  explicit PeerTable(const std::vector<PeerRef>& peers) {
    for (const PeerRef& p : peers) push_back(p);
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  void clear() {
    runs_.clear();
    size_ = 0;
  }
  size_t runs() const { return runs_.size(); }

  void push_back(PeerRef p) {
    if (!runs_.empty()) {
      Run& r = runs_.back();
      if (r.count == 1) {
        r.b = p;
        ++r.count;
        ++size_;
        return;
      }
      if (p == (r.count % 2 ? r.b : r.a)) {
        ++r.count;
        ++size_;
        return;
      }
    }
    runs_.push_back({uint32_t(size_), 1, p, p});
    ++size_;
  }
  // push_back of every entry of `o`, run by run: once two of a run's entries are in a run here,
  // that run continues the pattern, so the rest extends it.
  void append(const PeerTable& o) {
    for (const Run& r : o.runs_) {
      uint32_t j = 0;
      for (; j < r.count && (j < 2 || runs_.back().count < 2); ++j) push_back(j % 2 ? r.b : r.a);
      if (j < r.count) {
        runs_.back().count += r.count - j;
        size_ += r.count - j;
      }
    }
  }

  // Entry k (< size()). `hint`: the run index a previous read found (any value: a starting guess).
  PeerRef at(size_t k, size_t& hint) const {
    if (hint >= runs_.size() || k < runs_[hint].first) hint = 0;
    // In order: the run found last or one of the next few.
    for (size_t step = 0; step < 4 && hint < runs_.size(); ++step, ++hint)
      if (k < size_t(runs_[hint].first) + runs_[hint].count) return entry(runs_[hint], k);
    hint = size_t(std::upper_bound(runs_.begin(), runs_.end(), k, [](size_t x, const Run& r) { return x < r.first; }) -
                  runs_.begin()) - 1;
    return entry(runs_[hint], k);
  }
  PeerRef operator[](size_t k) const {
    size_t hint = runs_.size();
    return at(k, hint);
  }
  // Reads the entries in order, one next() each (cheaper than at() in a loop over every entry).
  class Reader {
   public:
    explicit Reader(const PeerTable& t) : run_(t.runs_.data()) {}
    PeerRef next() {
      if (j_ == run_->count) {
        ++run_;
        j_ = 0;
      }
      return j_++ % 2 ? run_->b : run_->a;
    }

   private:
    const Run* run_;
    uint32_t j_ = 0;
  };
  Reader reader() const { return Reader(*this); }

  std::vector<PeerRef> expanded() const {
    std::vector<PeerRef> v;
    v.reserve(size_);
    for (const Run& r : runs_)
      for (uint32_t j = 0; j < r.count; ++j) v.push_back(j % 2 ? r.b : r.a);
    return v;
  }

  // Equal entries (the runs are built the same way from equal entries).
  bool operator==(const PeerTable& o) const { return size_ == o.size_ && runs_ == o.runs_; }

 private:
  static PeerRef entry(const Run& r, size_t k) { return (k - r.first) % 2 ? r.b : r.a; }
  std::vector<Run> runs_;
  size_t size_ = 0;
};

}  // namespace tpusim::isa
