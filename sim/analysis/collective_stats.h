// Collective statistics: what one core's collectives cost it, kind by kind (all-reduce,
// all-gather, ...), from the instructions the compiler marked with their collective
// (isa::Instr::collective). Both engines compute them the same way: they feed every instruction's
// ready and completion time (the ones the op profile reads, sim/analysis/op_profile.h) to a
// CollectiveRecorder, which keeps, per kind and for the core's other work, the union of the
// intervals [ready, completion).
//
// Per kind, and likewise per mesh axis (the collectives along it, whatever their kind):
//   instructions  the core's instructions of that kind;
//   bytes         what the core sends in them (its kSend bytes);
//   busy          the length of the union of their intervals: the time the core is inside such a
//                 collective (waiting for a piece to arrive counts: the collective is under way);
//   exposed       the part of `busy` during which the core runs no work of its own: no instruction
//                 that is foreground (on a main queue, not `async`), not a collective's and not a
//                 transfer or a barrier. The time the collective adds to the step: overlapped with
//                 compute it costs nothing, on the critical path all of it. Background work that
//                 is not a collective (infeed) does not hide a collective: it holds up nothing.
// An instruction's interval starts when its deps completed (not when its unit took it up), so a
// foreground instruction queued behind its unit's previous one covers that wait too; the previous
// one runs meanwhile, so the union is the same unless a collective's work holds the unit.
#pragma once
#include <array>
#include <cstdint>
#include <span>

#include "sim/base/interval_union.h"
#include "sim/hw/hw_config.h"
#include "sim/isa/program.h"

namespace tpusim {

struct CorePlan;

struct CollectiveKindStats {
  uint64_t instructions = 0;
  uint64_t bytes = 0;                               // sent by the core
  uint64_t busy_cycles = 0, exposed_cycles = 0;     // core cycles
  double busy_s = 0, exposed_s = 0;

  CollectiveKindStats& operator+=(const CollectiveKindStats& o);
  bool operator==(const CollectiveKindStats&) const = default;
};

struct CollectiveStats {
  uint32_t chip = 0, core = 0;  // the core the statistics are of
  std::array<CollectiveKindStats, isa::kCollectiveKinds> kinds{};  // indexed by isa::Collective (kNone: unused)
  // The same figures per mesh axis (isa::Instr::collective_axis; [0]: collectives of no known axis).
  std::array<CollectiveKindStats, isa::kCollectiveAxes> axes{};

  const CollectiveKindStats& operator[](isa::Collective k) const { return kinds[size_t(k)]; }
  CollectiveKindStats& operator[](isa::Collective k) { return kinds[size_t(k)]; }
  // Sums every kind's figures (a run's total over its steps).
  CollectiveStats& operator+=(const CollectiveStats& o);
  bool operator==(const CollectiveStats&) const = default;
};

const char* collective_kind_name(isa::Collective k);  // "all-reduce", ...; "none"

// What the recorder counts an instruction as (decoded once per stream, program_plan.h): 0 =
// nothing (a barrier, a non-collective transfer or background instruction), 1 = the core's own
// work, 1 + k = a collective of kind k.
inline uint8_t collective_role(const isa::Instr& in) {
  if (in.collective != isa::Collective::kNone) return uint8_t(1 + uint8_t(in.collective));
  if (in.async) return 0;
  switch (in.op) {
    case isa::Op::kBarrier:
    case isa::Op::kSend:
    case isa::Op::kRecv:
    case isa::Op::kHostLoad:
    case isa::Op::kHostStore: return 0;
    default: return 1;
  }
}

// The mesh axis the recorder counts a collective's instruction under (0: none or not known).
inline uint8_t collective_axis(const isa::Instr& in) {
  return in.collective != isa::Collective::kNone && in.collective_axis < isa::kCollectiveAxes ? in.collective_axis : 0;
}

// Collects the unions of one core's run, in any time unit (SystemC: ps; analytical: cycles),
// converted when the statistics are taken. O(1) per instruction when instructions come roughly in
// time order.
class CollectiveRecorder {
 public:
  void reset(const CorePlan& cp);
  void record(uint32_t instr, uint64_t ready, uint64_t complete) {
    if (const uint8_t r = role_[instr]) {
      unions_[r - 1].add(ready, complete);
      if (r > 1) axis_unions_[axis_[instr]].add(ready, complete);
    }
  }
  // The statistics of the recorded run; recorded times convert to core cycles as t / period.
  CollectiveStats stats(const CorePlan& cp, const HwConfig& hw, uint64_t period = 1) const;

 private:
  std::span<const uint8_t> role_, axis_;
  // [0]: the core's own work; [k]: collective kind k.
  std::array<IntervalUnion, isa::kCollectiveKinds> unions_;
  std::array<IntervalUnion, isa::kCollectiveAxes> axis_unions_;  // [a]: the collectives along axis a
};

}  // namespace tpusim
