#include "compiler/lower/reroll.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace tpusim::compiler {
namespace {

// Every field but the deps' values (their count too).
bool same_but_deps(const isa::Instr& a, const isa::Instr& b) {
  return a.op == b.op && a.mem == b.mem && a.async == b.async && a.collective == b.collective && a.mxu == b.mxu &&
         a.rows == b.rows && a.k == b.k && a.n == b.n && a.passes == b.passes && a.barrier_id == b.barrier_id &&
         a.peer_chip == b.peer_chip && a.peer_core == b.peer_core && a.tag == b.tag && a.bytes == b.bytes &&
         a.vpu == b.vpu && a.label == b.label && a.deps.size() == b.deps.size();
}

// How many times the body in[i, i + len) runs back to back from i (1: it does not repeat), with
// each body instruction's fixed-dep mask, decided by run 1 (a dep is the same instruction, or
// `len` further on) and then required of every later run.
uint32_t runs(const std::vector<isa::Instr>& in, size_t i, size_t end, uint32_t len, uint16_t* fixed) {
  if (i + 2 * size_t(len) > end) return 1;
  for (uint32_t j = 0; j < len; ++j) {
    const isa::Instr& a = in[i + j];
    const isa::Instr& b = in[i + len + j];
    if (!isa::repeatable(a) || !same_but_deps(a, b)) return 1;
    uint16_t mask = 0;
    for (size_t k = 0; k < a.deps.size(); ++k) {
      if (b.deps[k] == a.deps[k]) {
        mask |= uint16_t(1u << k);
      } else if (b.deps[k] != a.deps[k] + len) {
        return 1;
      }
    }
    fixed[j] = mask;
  }
  uint32_t r = 2;
  for (; i + (size_t(r) + 1) * len <= end; ++r) {
    const size_t at = i + size_t(r) * len;
    const uint32_t shift = r * len;
    for (uint32_t j = 0; j < len; ++j) {
      const isa::Instr& a = in[i + j];
      const isa::Instr& b = in[at + j];
      if (!same_but_deps(a, b)) return r;
      for (size_t k = 0; k < a.deps.size(); ++k)
        if (b.deps[k] != ((fixed[j] >> k) & 1 ? a.deps[k] : a.deps[k] + shift)) return r;
    }
  }
  return r;
}

}  // namespace

// Greedy, left to right: at each instruction the body length that covers the most instructions
// (the shortest on a tie) is taken, else the instruction stays as it is. A multiple of the best
// length found so far cannot cover more, so it is not tried.
uint64_t reroll_tail(isa::CoreProgram& core, size_t from) {
  std::vector<isa::Instr>& in = core.instrs;
  const size_t end = in.size();
  size_t i = from, w = from;
  uint64_t extra = 0;
  uint16_t fixed[kMaxRerollBody], best_fixed[kMaxRerollBody];
  while (i < end) {
    uint32_t best_len = 0, best_runs = 0;
    for (uint32_t len = 1; len <= kMaxRerollBody && i + 2 * size_t(len) <= end; ++len) {
      if (uint64_t(best_runs) * best_len == end - i) break;  // covers the rest: nothing covers more
      if (best_len && len % best_len == 0) continue;
      if (in[i].op != in[i + len].op || in[i].label != in[i + len].label) continue;  // a quick reject
      const uint32_t r = runs(in, i, end, len, fixed);
      if (r >= 2 && uint64_t(r) * len > uint64_t(best_runs) * best_len) {
        best_len = len;
        best_runs = r;
        std::copy(fixed, fixed + len, best_fixed);
      }
    }
    if (best_len) {
      if (w != i) std::move(in.begin() + long(i), in.begin() + long(i + best_len), in.begin() + long(w));
      core.repeats.push_back({uint32_t(w), best_len, best_runs, std::vector<uint16_t>(best_fixed, best_fixed + best_len)});
      extra += uint64_t(best_runs - 1) * best_len;
      w += best_len;
      i += size_t(best_runs) * best_len;
    } else {
      if (w != i) in[w] = std::move(in[i]);
      ++w;
      ++i;
    }
  }
  in.erase(in.begin() + long(w), in.end());
  return extra;
}

}  // namespace tpusim::compiler
