// Identical units behind in-order issue queues: a core's DMA engines (sim/dma/dma_engines.h) and
// its transfer channels (sim/xfer/xfer_channels.h). Plain C++, no SystemC: the SystemC blocks and
// the analytical engine keep one of these each and ask it the same questions, the blocks at
// simulation time (in kernel ps), the analytical engine whenever it places an instruction (in
// cycles): the pool does not care which unit of time it is given.
//
// The rule: an instruction of queue q ready at `ready` starts at the earliest t >= max(ready, the
// previous start of queue q) at which a unit is free, on the lowest-numbered unit free at t, and
// holds that unit from t until the end its user gives (hold/release).
// "Free" is known one of two ways:
//  * in order (the default): a unit is free from the end of its last occupancy. Exact whenever
//    work is placed in time order, as at simulation time (SystemC) or with a single queue.
//  * calendar (reset(..., true)): a unit is free in any idle interval long enough for the
//    occupancy's duration without contention (`alone`), whatever was placed after it: the
//    earliest such interval over all units wins, the lowest-numbered unit at ties. For an engine
//    that places one queue ahead of another out of time order (the analytical engine with
//    background queues, sim/base/busy_calendar.h); the occupancy it then holds is its real one
//    (a wait stretches it), so held intervals may overlap later ones (BusyCalendar::add).
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "sim/base/busy_calendar.h"

namespace tpusim {

class UnitPool {
 public:
  // Never free again until release() (an occupancy whose end is not known yet).
  static constexpr uint64_t kHeld = UINT64_MAX;

  struct Pick {
    uint32_t unit = 0;
    uint64_t start = 0;
  };

  void reset(uint32_t units, uint32_t queues = 1, bool calendars = false) {
    free_.assign(units, 0);
    last_start_.assign(queues, 0);
    calendars_ = calendars;
    cal_.resize(calendars ? units : 0);
    for (BusyCalendar& c : cal_) c.clear();
  }
  bool calendars() const { return calendars_; }
  uint64_t last_start(uint32_t q = 0) const { return last_start_[q]; }

  // Where and when the next instruction of queue `q`, ready at `ready`, starts (see above;
  // `alone` is read only with calendars). With every unit held (kHeld), start is kHeld.
  Pick pick(uint32_t q, uint64_t ready, uint64_t alone = 0) const {
    Pick p;
    p.start = std::max(ready, last_start_[q]);
    if (!calendars_) {
      p.start = std::max(p.start, *std::min_element(free_.begin(), free_.end()));
      while (free_[p.unit] > p.start) ++p.unit;
      return p;
    }
    uint64_t best = UINT64_MAX;
    for (uint32_t k = 0; k < cal_.size(); ++k) {
      const uint64_t f = cal_[k].first_fit(p.start, alone);
      if (f < best) best = f, p.unit = k;
    }
    p.start = best;
    return p;
  }

  // The instruction picked as `p` for queue `q` holds its unit until `end` (kHeld: until
  // release(); in order only).
  void hold(uint32_t q, const Pick& p, uint64_t end) {
    last_start_[q] = p.start;
    if (calendars_)
      cal_[p.unit].add(p.start, end - p.start);
    else
      free_[p.unit] = end;
  }
  // Ends the occupancy of `unit` (held with kHeld) at `end`.
  void release(uint32_t unit, uint64_t end) { free_[unit] = end; }

  // Calendars only: no later pick starts before `frontier`.
  void prune(uint64_t frontier) {
    for (BusyCalendar& c : cal_) c.prune(frontier);
  }
  size_t calendar_size() const {
    size_t n = 0;
    for (const BusyCalendar& c : cal_) n += c.size();
    return n;
  }

 private:
  std::vector<uint64_t> free_;        // in order: per unit, the end of its last occupancy
  std::vector<uint64_t> last_start_;  // per queue: its previous start (queues are in order)
  bool calendars_ = false;
  std::vector<BusyCalendar> cal_;     // calendars: per unit, its occupancies
};

}  // namespace tpusim
