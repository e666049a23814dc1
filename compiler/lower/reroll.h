// Rerolling a kernel's tile loops: the instructions a lowering emitted tile by tile are stored
// once per loop as a repeat (sim/isa/repeat.h) with its run count, so that a step's program grows
// with the distinct work of its kernels, not with its tiles. The expanded stream is exactly the
// emitted one: every field and every effective dep, so both engines see the same instructions.
#pragma once
#include <cstdint>

#include "sim/isa/program.h"

namespace tpusim::compiler {

// Rerolls `core`'s stored instructions from index `from` to the end (one kernel; no repeat
// reaches into it from before): a body of up to kMaxRerollBody instructions or repeats that runs at
// least twice back to back (every field equal, each dep either the same instruction in every run
// or the same distance back) becomes a repeat, pass after pass, so that a pass can wrap the loops
// the one before found (nested tile loops). Returns the stored instructions it removed (the
// stream is unchanged: its expansion is the instructions as they were).
uint64_t reroll_tail(isa::CoreProgram& core, size_t from);

inline constexpr uint32_t kMaxRerollBody = 64;  // tokens: instructions or repeats
// Kernels shorter than this stay unrolled: what rerolling would save is less than it costs
// (measured on the shipped workloads: the default run's kernels, 512 tokens per core, are a few
// hundred instructions and rerolling them cost 10% of its wall time; a step of 24k tokens per
// chip has kernels of tens of thousands).
inline constexpr uint32_t kMinRerollKernel = 1024;

}  // namespace tpusim::compiler
