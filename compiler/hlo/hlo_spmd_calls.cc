// The SPMD pass in called computations (docs/hlo.md, "SPMD partitioning"): the bodies of `while`,
// `call` and each branch of `conditional` are partitioned with the same rules as ENTRY, for the
// tilings their operands arrive with. A loop's carried tuple keeps one tiling for the operand, the
// body's parameter and root, the condition and the result (XLA's sharding propagation gives the while
// one sharding); what the body makes of it decides where it differs from the operand's (a gradient
// accumulator that starts replicated and is summed with tiled values is carried tiled).
#include <algorithm>

#include "compiler/hlo/hlo_validate.h"
#include "compiler/hlo/hlo_spmd_partitioner.h"

namespace tpusim::hlo::spmd {
namespace {

// Call depth and the instructions partitioned in all (every version and dry run), past which a
// called computation runs whole: the importer's own bounds (hlo_import.h: 64, 2^21 imported), doubled
// for the dry runs of loops.
constexpr int kMaxDepth = 64;
constexpr int64_t kMaxProcessed = int64_t(1) << 22;
// Dry runs of a loop body to learn the carried tilings: each can only tile a leaf more finely.
constexpr int kLoopRounds = 2;

void leaves(Val& v, std::vector<Tiling*>& out) {
  if (!v.tuple) return out.push_back(&v.t);
  for (Val& e : v.elems) leaves(e, out);
}
void leaves(const Val& v, std::vector<const Tiling*>& out) {
  if (!v.tuple) return out.push_back(&v.t);
  for (const Val& e : v.elems) leaves(e, out);
}

// The tilings of `v` without its instructions: a called computation's parameter value.
Val plain(Val v) {
  v.index = -1;
  v.deferred = -1;
  for (Val& e : v.elems) e = plain(std::move(e));
  return v;
}

// A memo key: the tilings of every leaf.
void signature(const Val& v, std::string& s) {
  if (v.tuple) {
    s += '(';
    for (const Val& e : v.elems) signature(e, s);
    s += ')';
    return;
  }
  // Appended piece by piece: `"r" + std::to_string(...)` trips GCC 12's false -Wrestrict.
  s += v.t.manual ? 'm' : 't';
  for (int64_t x : v.t.tiles) {
    s += std::to_string(x);
    s += ',';
  }
  s += 'r';
  s += std::to_string(v.t.rep);
  s += ':';
  for (int64_t x : v.t.devices) {
    s += std::to_string(x);
    s += ',';
  }
  s += ';';
}

}  // namespace

bool fits(const Val& v, const Shape& s) {
  if (!s.is_tuple()) return !v.tuple && v.t.tiles.size() == s.dims.size();
  if (!v.tuple || v.elems.size() != s.tuple.size()) return false;
  for (size_t i = 0; i < s.tuple.size(); ++i)
    if (!fits(v.elems[i], s.tuple[i])) return false;
  return true;
}

void Partitioner::swap_frame(Frame& f) {
  std::swap(c_, f.c);
  std::swap(out_, f.out);
  std::swap(names_, f.names);
  std::swap(vals_, f.vals);
  std::swap(users_, f.users);
  std::swap(cur_, f.cur);
  std::swap(params_, f.params);
  std::swap(all_reduces_, f.all_reduces);
  std::swap(slices_, f.slices);
}

void Partitioner::restore(Snapshot s) {
  report_ = std::move(s.report);
  helpers_.resize(s.helpers);
  for (auto it = add_.begin(); it != add_.end();) it = size_t(-it->second - 1) >= s.helpers ? add_.erase(it) : std::next(it);
  parts_.resize(s.parts);
  part_of_.resize(s.parts);
  for (auto it = memo_.begin(); it != memo_.end();)
    it = size_t(it->second.index - kPartBase) >= s.parts ? memo_.erase(it) : std::next(it);
}

bool Partitioner::may_descend(const Instruction& in) {
  if (depth_ < kMaxDepth && processed_ < kMaxProcessed) return true;
  note(in, "not partitioned inside: the SPMD pass stops at a call depth of 64 or 2^22 instructions partitioned; its "
           "operands are gathered and every partition runs it whole");
  return false;
}

Called Partitioner::computation(int comp, const std::vector<Val>& params, const Val* root_to, bool dry) {
  std::string key = std::to_string(comp) + ":";
  for (const Val& p : params) signature(p, key);
  if (root_to) signature(*root_to, key += "->");
  if (!dry)
    if (const auto it = memo_.find(key); it != memo_.end()) return it->second;
  Frame caller;
  swap_frame(caller);
  c_ = &m_.computations.at(size_t(comp));
  params_ = &params;
  ++depth_;
  run_instructions();
  Val root = vals_.at(size_t(c_->root));
  int index = root.index >= 0 ? use(root) : int(out_.size()) - 1;
  if (root_to) {  // a loop body returns the state as it took it (resharded per iteration when it differs)
    index = reshard_tree(root, *root_to, c_->root_instruction().shape);
    root = *root_to;
  }
  Computation made = close(index);
  --depth_;
  swap_frame(caller);
  Called r{-1, plain(root)};
  if (dry) return r;
  parts_.push_back(std::move(made));
  part_of_.push_back(comp);
  r.index = kPartBase + int(parts_.size()) - 1;
  memo_.emplace(std::move(key), r);
  return r;
}

int Partitioner::reshard_tree(const Val& v, const Val& to, const Shape& global) {
  if (v.tuple != to.tuple) return use(v);  // not the loop's structure: the importer stands it in
  if (!v.tuple) return reshard(v, to.t, global);
  std::vector<const Tiling*> a, b;
  leaves(v, a);
  leaves(to, b);
  bool same = a.size() == b.size();
  for (size_t i = 0; same && i < a.size(); ++i) same = a[i]->manual || b[i]->manual || *a[i] == *b[i];
  if (same || v.elems.size() != to.elems.size() || !global.is_tuple() || global.tuple.size() != v.elems.size()) return v.index;
  // The elements: the operands of the tuple instruction that made `v` (a loop counter stays the
  // constant or the add the importer reads the trip count from), else get-tuple-elements.
  const std::vector<int> made = out_.at(size_t(v.index)).opcode == "tuple" ? out_.at(size_t(v.index)).operands : std::vector<int>{};
  std::vector<int> ops;
  Shape shape;
  shape.type = ElementType::kTuple;
  for (size_t i = 0; i < v.elems.size(); ++i) {
    Val e = v.elems[i];
    e.deferred = -1;
    e.index = made.size() == v.elems.size() ? made[i]
                                            : emit("get-tuple-element", "gte", local(global.tuple[i], e), {v.index},
                                                   {attr("index", std::to_string(i))});
    ops.push_back(reshard_tree(e, to.elems[i], global.tuple[i]));
    shape.tuple.push_back(out_.at(size_t(ops.back())).shape);
  }
  return emit("tuple", "tuple", shape, ops);
}

Val Partitioner::while_loop(const Instruction& in, const std::vector<Tiling>* given) {
  const int cs = called_slot(in, "condition"), bs = called_slot(in, "body");
  if (cs < 0 || bs < 0 || in.operands.size() != 1 || !fits(operand(in, 0), in.shape) || !may_descend(in))
    return whole(in, given);
  const int cond = in.called[size_t(cs)], body = in.called[size_t(bs)];
  Val state = plain(operand(in, 0));
  std::vector<Tiling*> sl;
  leaves(state, sl);
  std::vector<char> fixed(sl.size(), 0);
  // Given shardings fix the state's: the while's own, else the body parameter's.
  auto fix = [&](const std::vector<Tiling>& g) {
    if (g.size() != sl.size()) return;
    for (size_t k = 0; k < sl.size(); ++k)
      if (!fixed[k] && !g[k].manual) *sl[k] = g[k], fixed[k] = 1;
  };
  if (given) fix(*given);
  {
    const Snapshot s = snapshot();  // given_of may note (a maximal sharding): the body's run notes it once
    for (const Instruction& p : m_.computations.at(size_t(body)).instructions)
      if (p.opcode == "parameter" && p.parameter_number == 0)
        if (const std::optional<std::vector<Tiling>> g = given_of(p)) fix(*g);
    restore(s);
  }
  // What the body makes of the state: a leaf it returns more finely tiled than it took is carried so
  // (XLA's propagation gives the loop one sharding for its operand, body and result).
  for (int round = 0; round < kLoopRounds && std::count(fixed.begin(), fixed.end(), 0) > 0; ++round) {
    const Snapshot s = snapshot();
    const Called d = computation(body, {state}, nullptr, true);
    restore(s);
    std::vector<const Tiling*> rl;
    leaves(d.root, rl);
    if (rl.size() != sl.size()) break;
    bool changed = false;
    for (size_t k = 0; k < sl.size(); ++k)
      if (!fixed[k] && !rl[k]->manual && rl[k]->tile_count() > sl[k]->tile_count()) *sl[k] = *rl[k], changed = true;
    if (!changed) break;
  }
  // The operand resharded to the state once, before the loop; the body's result to it every iteration.
  const int init = reshard_tree(operand(in, 0), state, operand_global(in, 0));
  const Called c = computation(cond, {state}, nullptr, false);
  const Called b = computation(body, {state}, &state, false);
  Val v = state;
  v.index = emit_self(in, {init}, local(in.shape, state));
  out_.back().called[size_t(cs)] = c.index;
  out_.back().called[size_t(bs)] = b.index;
  return v;
}

Val Partitioner::call(const Instruction& in, const std::vector<Tiling>* given) {
  if (in.called.size() != 1 || !may_descend(in)) return whole(in, given);
  const Computation& callee = m_.computations.at(size_t(in.called[0]));
  std::vector<Val> params;
  std::vector<int> ops;
  for (size_t i = 0; i < in.operands.size(); ++i) {
    ops.push_back(use(operand(in, i)));
    params.push_back(plain(operand(in, i)));
  }
  for (const Instruction& p : callee.instructions)
    if (p.opcode == "parameter" && (!p.parameter_number || *p.parameter_number >= int64_t(params.size()) ||
                                    !fits(params[size_t(*p.parameter_number)], p.shape)))
      return whole(in, given);
  // Inline-equivalent: the callee computes on the operands' tiles as they are.
  const Called r = computation(in.called[0], params, nullptr, false);
  if (!fits(r.root, in.shape)) return whole(in, given);
  Val v = r.root;
  v.index = emit_self(in, ops, local(in.shape, v));
  out_.back().called[0] = r.index;
  return finish(v, in, given);
}

Val Partitioner::conditional(const Instruction& in, const std::vector<Tiling>* given) {
  std::vector<size_t> slots;
  const int ts = called_slot(in, "true_computation"), fs = called_slot(in, "false_computation");
  if (ts >= 0 && fs >= 0) {
    slots = {size_t(ts), size_t(fs)};
  } else {
    for (size_t k = 0; k < in.called.size(); ++k) slots.push_back(k);
  }
  if (slots.empty() || in.operands.size() != slots.size() + 1 || !may_descend(in)) return whole(in, given);
  std::vector<int> ops{use(operand(in, 0))};  // the predicate or branch index: a scalar
  for (size_t j = 0; j < slots.size(); ++j) {
    const Computation& branch = m_.computations.at(size_t(in.called[slots[j]]));
    for (const Instruction& p : branch.instructions)
      if (p.opcode == "parameter" && (p.parameter_number != 0 || !fits(operand(in, j + 1), p.shape))) return whole(in, given);
    ops.push_back(use(operand(in, j + 1)));
  }
  // The result: the given tiling, else the first branch's; the other branches reshard theirs to it.
  std::optional<Val> to;
  if (given) {
    size_t k = 0;
    to = plain(tree(in.shape, *given, k, -1));
  }
  std::vector<int> made;
  for (size_t j = 0; j < slots.size(); ++j) {
    const Called r = computation(in.called[slots[j]], {plain(operand(in, j + 1))}, to ? &*to : nullptr, false);
    if (!to) to = r.root;
    made.push_back(r.index);
  }
  if (!fits(*to, in.shape)) return whole(in, given);
  Val v = *to;
  v.index = emit_self(in, ops, local(in.shape, v));
  for (size_t j = 0; j < slots.size(); ++j) out_.back().called[slots[j]] = made[j];
  return v;
}

}  // namespace tpusim::hlo::spmd
