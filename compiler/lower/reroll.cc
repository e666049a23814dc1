#include "compiler/lower/reroll.h"

#include <algorithm>
#include <span>
#include <utility>
#include <vector>

namespace tpusim::compiler {
namespace {

constexpr uint32_t kNone = UINT32_MAX;

// Every field but the deps' values (their count too).
bool same_but_deps(const isa::Instr& a, const isa::Instr& b) {
  return isa::same_work(a, b) && a.peer_chip == b.peer_chip && a.peer_core == b.peer_core &&
         a.deps.size() == b.deps.size();
}

// A unit of the region being rerolled: one stored instruction, or an outermost repeat of the
// region with everything inside it.
struct Token {
  uint32_t first = 0, len = 1;       // stored instructions
  uint32_t rep = kNone, reps = 0;    // its repeats: [rep, rep + reps) of the program's list
  uint64_t span = 1;                 // stream instructions
  uint32_t depth = 0;                // how deep its repeats nest, itself included
  uint64_t sig = 0;                  // equal for tokens that may match (a hash of what same_shape and same_but_deps compare)
};

uint64_t mix(uint64_t h, uint64_t v) { return (h ^ v) * 0x100000001b3ull; }

uint64_t signature(const isa::Instr& a) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint64_t v : {uint64_t(a.op) | uint64_t(a.mem) << 8 | uint64_t(a.async) << 16 | uint64_t(a.collective) << 24 |
                         uint64_t(a.deps.size()) << 32,
                     uint64_t(a.mxu) | uint64_t(a.rows) << 32, uint64_t(a.k) | uint64_t(a.n) << 32, uint64_t(a.passes) | uint64_t(a.packing) << 16 | uint64_t(a.collective_axis) << 24,
                     a.bytes, a.vpu.alu_vregs, a.vpu.eup_vregs, a.vpu.xlu_vregs, a.vpu.vld_vregs, a.vpu.vst_vregs,
                     uint64_t(reinterpret_cast<uintptr_t>(a.label.empty() ? nullptr : &a.label.str()))})  // interned: one string per label
    h = mix(h, v);
  return h;
}

// The tokens of stored instructions [from, end) whose repeats are the program's from `first_rep` on.
void tokens_of(const isa::CoreProgram& c, size_t from, size_t first_rep, std::vector<Token>& out) {
  const std::span<const isa::Repeat> reps(c.repeats.data() + first_rep, c.repeats.size() - first_rep);
  const isa::RepeatTree tree = isa::repeat_tree(reps);
  std::vector<uint32_t> level(reps.size(), 0);
  for (size_t q = 0; q < reps.size(); ++q)
    if (tree.parent[q] >= 0) level[q] = level[size_t(tree.parent[q])] + 1;
  out.clear();
  size_t r = 0;
  for (size_t p = from; p < c.instrs.size();) {
    if (r < reps.size() && reps[r].first == p) {
      Token t;
      t.first = uint32_t(p);
      t.len = reps[r].len;
      t.rep = uint32_t(first_rep + r);
      size_t q = r;
      for (; q < reps.size() && reps[q].first < p + t.len; ++q) t.depth = std::max(t.depth, level[q] - level[r] + 1);
      t.reps = uint32_t(q - r);
      t.span = uint64_t(reps[r].trips) * tree.span[r];
      t.sig = mix(mix(mix(signature(c.instrs[p]), t.len), reps[r].trips), t.reps);
      out.push_back(t);
      p += t.len;
      r = q;
    } else {
      Token t;
      t.first = uint32_t(p);
      t.sig = signature(c.instrs[p]);
      out.push_back(t);
      ++p;
    }
  }
}

// The same stored length and the same repeats inside, at the same offsets.
bool same_shape(const isa::CoreProgram& c, const Token& a, const Token& b) {
  if (a.len != b.len || a.reps != b.reps || (a.rep == kNone) != (b.rep == kNone)) return false;
  for (uint32_t k = 0; k < a.reps; ++k) {
    const isa::Repeat& x = c.repeats[a.rep + k];
    const isa::Repeat& y = c.repeats[b.rep + k];
    if (x.first - a.first != y.first - b.first || x.len != y.len || x.trips != y.trips || x.fixed != y.fixed) return false;
  }
  return true;
}

// How many times the body toks[i, i + lt) runs back to back from token i (1: it does not repeat),
// one run being `span` stream instructions; `fixed` gets each stored body instruction's
// fixed-dep mask, decided by run 1 (a dep is the same instruction, or `span` further on) and then
// required of every later run. At most `most` runs are counted.
uint32_t runs(const isa::CoreProgram& c, const std::vector<Token>& toks, size_t i, size_t lt, uint64_t span,
              std::vector<uint16_t>& fixed, uint32_t most = UINT32_MAX) {
  const std::vector<isa::Instr>& in = c.instrs;
  uint32_t r = 1;
  for (;; ++r) {
    if (r == most) return r;
    if (i + (size_t(r) + 1) * lt > toks.size()) return r;
    const uint64_t shift = uint64_t(r) * span;
    if (shift >= (uint64_t(1) << 31)) return r;
    size_t off = 0;  // stored offset in the body
    for (size_t j = 0; j < lt; ++j) {
      const Token& ta = toks[i + j];
      const Token& tb = toks[i + size_t(r) * lt + j];
      if (!same_shape(c, ta, tb)) return r;
      for (uint32_t o = 0; o < ta.len; ++o) {
        const isa::Instr& a = in[ta.first + o];
        const isa::Instr& b = in[tb.first + o];
        if (!same_but_deps(a, b)) return r;
        if (r == 1) {
          if (!isa::repeatable(a)) return r;
          uint16_t mask = 0;
          for (size_t k = 0; k < a.deps.size(); ++k) {
            if (b.deps[k] == a.deps[k]) {
              mask |= uint16_t(1u << k);
            } else if (uint64_t(b.deps[k]) != a.deps[k] + shift) {
              return r;
            }
          }
          fixed[off + o] = mask;
        } else {
          for (size_t k = 0; k < a.deps.size(); ++k)
            if (uint64_t(b.deps[k]) != ((fixed[off + o] >> k) & 1 ? a.deps[k] : a.deps[k] + shift)) return r;
        }
      }
      off += ta.len;
    }
  }
}

// One pass over the region's tokens, left to right: a token that starts a body (up to
// kMaxRerollBody tokens, the shortest) running at least twice starts a repeat, unless a shorter
// body starts running at least twice at a later token inside it: that is an inner loop, rolled
// first (the tokens before it stay as they are). Each pass so rolls the innermost loops, and the
// next pass, whose tokens are those loops, the loops around them: one level deeper per pass.
bool reroll_pass(isa::CoreProgram& c, size_t from, size_t first_rep) {
  // Scratch kept between calls: a step rerolls thousands of kernels.
  thread_local std::vector<Token> toks;
  thread_local std::vector<uint64_t> span_sum, len_sum, table_sig;
  thread_local std::vector<uint32_t> next_same, table_at;
  thread_local std::vector<uint16_t> fixed;
  thread_local std::vector<isa::Repeat> out_reps;
  tokens_of(c, from, first_rep, toks);
  const size_t n = toks.size();
  span_sum.assign(n + 1, 0);  // prefix sums
  len_sum.assign(n + 1, 0);
  for (size_t t = 0; t < n; ++t) {
    span_sum[t + 1] = span_sum[t] + toks[t].span;
    len_sum[t + 1] = len_sum[t] + toks[t].len;
  }
  // Per token, the next token of the same signature (kNone: none): the only body lengths a body
  // starting there can have. (Open addressing over the signatures, back to front.)
  size_t cap = 16;
  while (cap < 2 * n) cap *= 2;
  table_sig.assign(cap, 0);
  table_at.assign(cap, kNone);
  next_same.assign(n, kNone);
  for (size_t t = n; t-- > 0;) {
    size_t h = size_t(toks[t].sig) & (cap - 1);
    while (table_at[h] != kNone && table_sig[h] != toks[t].sig) h = (h + 1) & (cap - 1);
    next_same[t] = table_at[h];
    table_sig[h] = toks[t].sig;
    table_at[h] = uint32_t(t);
  }
  // The shortest body of at most `most` tokens from token i that runs at least twice (0: none);
  // `fixed` holds its masks. Only two runs are compared: a body that an inner loop makes way for
  // costs no walk over all its runs.
  auto shortest = [&](size_t i, size_t most) -> size_t {
    uint32_t depth = 0;
    size_t seen = i;  // depth is the deepest of tokens [i, seen)
    for (uint32_t j = next_same[i]; j != kNone && j - i <= most && i + 2 * (j - i) <= n; j = next_same[j]) {
      const size_t lt = j - i;
      while (seen < i + lt) depth = std::max(depth, toks[seen++].depth);
      if (depth + 1 > isa::kMaxRepeatDepth) break;
      if (toks[i + lt - 1].sig != toks[i + 2 * lt - 1].sig) continue;  // a quick reject
      fixed.resize(len_sum[i + lt] - len_sum[i]);
      if (runs(c, toks, i, lt, span_sum[i + lt] - span_sum[i], fixed, 2) == 2) return lt;
    }
    return 0;
  };
  // The region is compacted in place: a token is read at or after where it is written.
  out_reps.clear();
  size_t w = from;
  auto copy = [&](const Token& t) {  // token t, its repeats moved to where it lands
    for (uint32_t k = 0; k < t.reps; ++k) {
      isa::Repeat r = std::move(c.repeats[t.rep + k]);
      r.first = uint32_t(r.first - t.first + w);
      out_reps.push_back(std::move(r));
    }
    if (w != t.first) std::move(c.instrs.begin() + t.first, c.instrs.begin() + t.first + t.len, c.instrs.begin() + long(w));
    w += t.len;
  };
  bool formed = false;
  for (size_t i = 0; i < n;) {
    const size_t lt = shortest(i, kMaxRerollBody);
    if (lt == 0) {
      copy(toks[i++]);
      continue;
    }
    size_t inner = i + 1;
    while (inner < i + lt && shortest(inner, lt - 1) == 0) ++inner;
    if (inner < i + lt) {  // an inner loop starts there: the tokens before it stay
      while (i < inner) copy(toks[i++]);
      continue;
    }
    fixed.resize(len_sum[i + lt] - len_sum[i]);
    const uint32_t r = runs(c, toks, i, lt, span_sum[i + lt] - span_sum[i], fixed);  // its masks, all its runs
    out_reps.push_back({uint32_t(w), uint32_t(len_sum[i + lt] - len_sum[i]), r, fixed});
    for (size_t t = i; t < i + lt; ++t) copy(toks[t]);
    i += size_t(r) * lt;
    formed = true;
  }
  c.instrs.erase(c.instrs.begin() + long(w), c.instrs.end());
  c.repeats.erase(c.repeats.begin() + long(first_rep), c.repeats.end());
  c.repeats.insert(c.repeats.end(), std::make_move_iterator(out_reps.begin()), std::make_move_iterator(out_reps.end()));
  return formed;
}

}  // namespace

uint64_t reroll_tail(isa::CoreProgram& core, size_t from) {
  const size_t before = core.instrs.size();
  const size_t first_rep = size_t(std::lower_bound(core.repeats.begin(), core.repeats.end(), from,
                                                   [](const isa::Repeat& r, size_t f) { return r.first < f; }) -
                                  core.repeats.begin());
  for (uint32_t pass = 0; pass < isa::kMaxRepeatDepth; ++pass)
    if (!reroll_pass(core, from, first_rep)) break;
  return before - core.instrs.size();
}

}  // namespace tpusim::compiler
