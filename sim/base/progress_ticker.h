// Progress of one engine run, for a display (a full-pod step simulates for minutes): counts
// completed instructions and calls the display about every 1% of the run's total (every core's
// instructions), at most 100 times per run. Never part of the results.
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>

namespace tpusim {

// done, total: instructions completed so far and in the run, over every core.
using RunProgress = std::function<void(uint64_t done, uint64_t total)>;

class ProgressTicker {
 public:
  // Arms for a run of `total` instructions; `fn` may be null or empty (then tick() only counts).
  void reset(uint64_t total, const RunProgress* fn) {
    total_ = total;
    done_ = 0;
    fn_ = fn && *fn ? fn : nullptr;
    step_ = std::max<uint64_t>(total / 100, 1);
    next_ = fn_ ? step_ : UINT64_MAX;
  }
  void tick(uint64_t n = 1) {
    done_ += n;
    if (done_ >= next_) fire();
  }
  uint64_t done() const { return done_; }

 private:
  void fire() {
    next_ = done_ + step_;
    (*fn_)(std::min(done_, total_), total_);
  }
  uint64_t total_ = 0, done_ = 0, step_ = 1, next_ = UINT64_MAX;
  const RunProgress* fn_ = nullptr;
};

}  // namespace tpusim
