// Growing instruction streams. A training step's stream is ~200k instructions (tens of MB per
// core, once per replica) written once: on Linux most of the cost of building it is faulting the
// fresh memory in, 4 KiB at a time. Buffers are therefore grown here, with a request for
// transparent huge pages (madvise; a no-op where THP is off or unsupported) made before anything
// is written into them.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "sim/isa/program.h"

namespace tpusim::compiler {

// Ensures capacity for `n` instructions, moving the existing ones into the new buffer.
inline void reserve_instrs(std::vector<isa::Instr>& instrs, size_t n) {
  if (n <= instrs.capacity()) return;
  std::vector<isa::Instr> bigger;
  bigger.reserve(n);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr uintptr_t kHugePage = uintptr_t(2) << 20;
  const uintptr_t lo = (reinterpret_cast<uintptr_t>(bigger.data()) + kHugePage - 1) & ~(kHugePage - 1);
  const uintptr_t hi = reinterpret_cast<uintptr_t>(bigger.data() + bigger.capacity()) & ~(kHugePage - 1);
  if (hi > lo) madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_HUGEPAGE);  // a hint: failure is harmless
#endif
  bigger.insert(bigger.end(), std::make_move_iterator(instrs.begin()), std::make_move_iterator(instrs.end()));
  instrs.swap(bigger);
}

// Appends one instruction, growing the buffer through reserve_instrs by 4x: every growth moves
// the whole stream, and capacity never written costs only address space.
inline void append_instr(std::vector<isa::Instr>& instrs, isa::Instr&& in) {
  if (instrs.size() == instrs.capacity()) reserve_instrs(instrs, std::max<size_t>(4096, 4 * instrs.capacity()));
  instrs.push_back(std::move(in));
}

}  // namespace tpusim::compiler
