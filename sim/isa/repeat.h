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
//  * Repeats are sorted by `first`, do not overlap, have trips >= 2, and their bodies hold only
//    DMA, MXU and VPU work (no barrier, transfer or host transfer: those are matched across cores
//    one by one). The plan (sim/analysis/program_plan.h) checks this.
#pragma once
#include <cstdint>
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

}  // namespace tpusim::isa
