// Rerolling a kernel's tile loops: the instructions a lowering emitted tile by tile are stored
// once per loop as a repeat (sim/isa/repeat.h) with its run count, so that a step's program grows
// with the distinct work of its kernels, not with its tiles. The expanded stream is exactly the
// emitted one: every field and every effective dep, so both engines see the same instructions.
#pragma once
#include <cstdint>

#include "sim/isa/program.h"

namespace tpusim::compiler {

// Rerolls `core`'s stored instructions from index `from` to the end (one kernel, nothing after it
// in a repeat yet): runs of a body of up to kMaxRerollBody instructions that repeats at least twice
// (every field equal, each dep either the same instruction in every run or the same distance back)
// become repeats. Returns the stream instructions the new repeats hold beyond their stored bodies
// (what the stored count shrank by).
uint64_t reroll_tail(isa::CoreProgram& core, size_t from);

inline constexpr uint32_t kMaxRerollBody = 512;

}  // namespace tpusim::compiler
