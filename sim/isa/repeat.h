// Repeats: a tile loop stored once. A kernel's tile loop emits the same few instructions per tile
// (load, weights, matmul, accumulate, store), each depending on the tile before it by the same
// distance; stored unrolled, a Llama-class step is tens of millions of 120-byte instructions, and
// writing them is most of a compile. A Repeat stores such a run's body once, with its run count.
//
// The contract (both engines and every pass read the *expanded* stream, so a program means
// exactly what its unrolled form means):
//  * `CoreProgram::instrs` holds the stored instructions; a Repeat says that the `len` stored
//    instructions from `first` run `trips` times back to back. Stream indices (deps, VMEM live
//    ranges, kernel ranges, errors, traces) count the expanded stream: run t's copy of body
//    instruction j has stream index start + t * len + j, where `start` is the stream index of
//    stored instruction `first`.
//  * The stored body holds run 0's deps. In run t a dep d of body instruction j is d + t * len (the
//    same distance back: the tile before), unless bit k of `fixed[j]` is set for its k-th dep: then
//    it is d in every run (an instruction before the loop, e.g. the kernel's entry or a block's
//    prologue).
//  * Repeats nest: a body may hold whole repeats (a tile loop's inner loops). A repeat's `span`
//    is the stream instructions of one run of its body: len, plus trips x span - len for each
//    repeat directly inside it; "t * len" above is then t * span, and the moves of nested repeats add up:
//    in run t of an outer repeat and run u of an inner one, a dep moves t x span(outer) unless the
//    outer repeat fixes it, plus u x span(inner) unless the inner one does. Each repeat's `fixed`
//    has an entry per stored instruction of its body, the nested ones' included.
//  * Repeats are sorted by `first` (an outer repeat before the ones inside it that start at the
//    same instruction), two repeats either nest or do not overlap, nesting is at most
//    kMaxRepeatDepth deep, trips >= 2, and bodies hold only DMA, MXU and VPU work (no barrier,
//    transfer or host transfer: those are matched across cores one by one). The plan
//    (sim/analysis/program_plan.h) checks this.
#pragma once
#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

namespace tpusim::isa {

struct Repeat {
  uint32_t first = 0;  // index into CoreProgram::instrs of the body's first stored instruction
  uint32_t len = 0;    // stored instructions in the body
  uint32_t trips = 0;  // runs of the body (>= 2)
  // Per body instruction: bit k set = its k-th dep names the same instruction in every run (a
  // body instruction has at most 16 deps).
  std::vector<uint16_t> fixed;

  bool operator==(const Repeat&) const = default;
};

inline constexpr uint32_t kMaxRepeatDeps = 16;
inline constexpr uint32_t kMaxRepeatDepth = 8;

// Per repeat of a sorted, properly nested list: the stream instructions of one run of its body
// (`span`), and the index of the repeat directly around it (-1: none). Repeats past `stored`
// instructions or overlapping without nesting are not detected here (the plan checks them).
// Lengths saturate at kRepeatLengthCap, so that absurd run counts cannot wrap around.
inline constexpr uint64_t kRepeatLengthCap = uint64_t(1) << 40;
struct RepeatTree {
  std::vector<uint64_t> span;
  std::vector<int32_t> parent;
  uint64_t extra = 0;  // stream instructions beyond the stored ones: sum over the outermost of trips x span - len
};
inline RepeatTree repeat_tree(std::span<const Repeat> reps) {
  RepeatTree t;
  t.span.assign(reps.size(), 0);
  t.parent.assign(reps.size(), -1);
  std::vector<uint32_t> open;  // the repeats around the current one, outermost first
  for (uint32_t i = 0; i < reps.size(); ++i) {
    while (!open.empty() && uint64_t(reps[open.back()].first) + reps[open.back()].len <= reps[i].first) open.pop_back();
    if (!open.empty()) t.parent[i] = int32_t(open.back());
    open.push_back(i);
  }
  std::vector<uint64_t> inner(reps.size(), 0);  // what the repeats inside add to a run
  constexpr uint64_t cap = kRepeatLengthCap;
  for (size_t i = reps.size(); i-- > 0;) {
    t.span[i] = std::min(cap, reps[i].len + inner[i]);
    // What the repeat adds to the stream beyond its stored body: trips x span - len.
    const uint64_t runs = reps[i].trips > 0 ? reps[i].trips - 1 : 0;
    const uint64_t more = t.span[i] && runs > cap / t.span[i] ? cap : std::min(cap, runs * t.span[i] + inner[i]);
    uint64_t& into = t.parent[i] >= 0 ? inner[size_t(t.parent[i])] : t.extra;
    into = std::min(cap, into + more);
  }
  return t;
}

}  // namespace tpusim::isa
