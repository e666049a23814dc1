// The per-op rules of the SPMD pass (docs/hlo.md, "SPMD partitioning", has them as a table): the
// tiling each op gives its result when none is given (propagation), the tilings its operands must
// have for that, and the collectives after it (partial sums).
#include <algorithm>
#include <numeric>
#include <set>

#include "compiler/hlo/hlo_attrs.h"
#include "compiler/hlo/hlo_import_stats.h"
#include "compiler/hlo/hlo_spmd_partitioner.h"

namespace tpusim::hlo::spmd {
namespace {

// XLA's element-wise opcodes (HloInstruction::IsElementwise): the result and every non-scalar operand
// have one shape, element by element.
bool is_elementwise(const std::string& op) {
  static const std::set<std::string, std::less<>> ops = {
      "abs", "add", "and", "atan2", "bitcast-convert", "cbrt", "ceil", "clamp", "compare", "complex", "convert", "copy",
      "cosine", "count-leading-zeros", "divide", "erf", "exponential", "exponential-minus-one", "floor", "imag",
      "is-finite", "log", "log-plus-one", "logistic", "map", "maximum", "minimum", "multiply", "negate", "not", "or",
      "popcnt", "power", "real", "reduce-precision", "remainder", "round-nearest-afz", "round-nearest-even", "rsqrt",
      "select", "shift-left", "shift-right-arithmetic", "shift-right-logical", "sign", "sine", "sqrt",
      "stochastic-convert", "subtract", "tan", "tanh", "xor"};
  return ops.count(op) > 0;
}

bool any_manual(const Val& v) {
  if (!v.tuple) return v.t.manual;
  return std::any_of(v.elems.begin(), v.elems.end(), any_manual);
}
bool any_tiled(const Val& v) {
  if (!v.tuple) return !v.t.manual && v.t.tile_count() > 1;
  return std::any_of(v.elems.begin(), v.elems.end(), any_tiled);
}

// For each dimension of `from` tiled in `tiles`: the dimension of `to` that starts at the same place of
// the row-major order when both sizes are multiples of the tile count (the tile stays the major part
// of a merged or split dimension: local element counts agree), else -1.
std::vector<int> reshape_map(const std::vector<int64_t>& from, const std::vector<int64_t>& to, const std::vector<int64_t>& tiles) {
  std::vector<int> map(from.size(), -1);
  int64_t pf = 1;
  for (size_t d = 0; d < from.size(); ++d) {
    const int64_t t = d < tiles.size() ? tiles[d] : 1;
    if (t > 1 && from[d] % t == 0) {
      int64_t pt = 1;
      for (size_t j = 0; j < to.size() && pt <= pf; ++j) {
        if (pt == pf && to[j] > 1) {
          if (to[j] % t == 0) map[d] = int(j);
          break;
        }
        pt *= to[j];
      }
    }
    pf *= from[d];
  }
  return map;
}

int64_t product(const std::vector<int64_t>& v) { return std::accumulate(v.begin(), v.end(), int64_t(1), std::multiplies<>()); }

}  // namespace

Val Partitioner::partition(const Instruction& in, const std::vector<Tiling>* given) {
  const std::string& op = in.opcode;
  const int self = int(&in - c_->instructions.data());
  if ((op == "broadcast" || op == "iota") && !given && users_.at(size_t(self)) == 1 && !in.shape.is_tuple()) {
    const std::optional<Tiling> t = op == "iota" ? replicated(in.shape.dims.size(), n_) : broadcast_tiling(in);
    if (t) {
      Val v = leaf(-1, *t);
      v.deferred = self;
      return v;
    }
  }
  if (op == "parameter" && params_) {
    // A called computation's parameter: the caller's value, whatever the annotation (the caller
    // reconciled them: a loop's state takes its body parameter's sharding).
    const int64_t k = in.parameter_number.value_or(-1);
    if (k >= 0 && k < int64_t(params_->size()) && fits((*params_)[size_t(k)], in.shape)) {
      Val v = (*params_)[size_t(k)];
      v.deferred = -1;
      v.index = emit_self(in, {}, local(in.shape, v));
      return v;
    }
  }
  if (op == "parameter" || op == "constant" || op == "iota" || op == "rng") return source(in, given);
  if (op == "custom-call") return custom_call(in, given);
  bool manual_value = given && std::any_of(given->begin(), given->end(), [](const Tiling& t) { return t.manual; });
  for (size_t i = 0; i < in.operands.size(); ++i) manual_value = manual_value || any_manual(operand(in, i));
  if (manual_value) return as_written(in);
  if (op == "tuple") return tuple(in, given);
  if (op == "while") return while_loop(in, given);
  if (op == "call") return call(in, given);
  if (op == "conditional") return conditional(in, given);
  if (op == "get-tuple-element" && in.operands.size() == 1) {
    const Val& t = operand(in, 0);
    const int64_t k = int_attr(m_, in, "index").value_or(-1);
    if (!t.tuple || k < 0 || k >= int64_t(t.elems.size()) || !fits(t.elems[size_t(k)], in.shape)) return whole(in, given);
    Val v = t.elems[size_t(k)];
    v.index = emit_self(in, {t.index}, local(in.shape, v));
    return finish(v, in, given);
  }
  if ((op == "opt-barrier" || op == "add-dependency" || op == "domain") && !in.operands.empty()) {
    std::vector<int> ops;
    for (size_t i = 0; i < in.operands.size(); ++i) ops.push_back(use(operand(in, i)));
    Val v = operand(in, 0);
    v.deferred = -1;
    v.index = emit_self(in, ops, out_.at(size_t(ops[0])).shape);
    return v;
  }
  if (is_elementwise(op)) return elementwise(in, given);
  if (op == "broadcast") return broadcast(in, given);
  if (op == "transpose") return transpose(in, given);
  if (op == "reshape" || op == "bitcast") return reshape(in, given);
  if (op == "dot") return dot(in, given);
  if (op == "reduce") return reduce(in, given);
  if (op == "slice" || op == "pad" || op == "reverse" || op == "concatenate" || op == "dynamic-slice" ||
      op == "dynamic-update-slice" || op == "sort")
    return dimensionwise(in, given);
  return whole(in, given);
}

Val Partitioner::source(const Instruction& in, const std::vector<Tiling>* given) {
  size_t k = 0;
  Val v = tree(in.shape, given ? *given : std::vector<Tiling>{}, k, -1);
  std::vector<int> ops;  // rng's scalar bounds
  for (size_t i = 0; i < in.operands.size(); ++i) ops.push_back(use(operand(in, i)));
  v.index = emit_self(in, ops, local(in.shape, v));
  return v;
}

Val Partitioner::elementwise(const Instruction& in, const std::vector<Tiling>* given) {
  if (in.shape.is_tuple()) return whole(in, given);
  const size_t rank = in.shape.dims.size();
  // The most finely tiled operand of the result's shape leads (the first of equals); a given sharding wins.
  Tiling target = replicated(rank, n_);
  if (given) {
    target = given->front();
  } else {
    for (size_t i = 0; i < in.operands.size(); ++i) {
      const Val& v = operand(in, i);
      if (!v.tuple && operand_global(in, i).dims == in.shape.dims && v.t.tile_count() > target.tile_count()) target = v.t;
    }
  }
  std::vector<int> ops;
  for (size_t i = 0; i < in.operands.size(); ++i) {
    const Val& v = operand(in, i);
    const Shape& s = operand_global(in, i);
    ops.push_back(!v.tuple && rank > 0 && s.dims == in.shape.dims ? reshard(v, target, s) : use(v));
  }
  return leaf(emit_self(in, ops, local_shape(in.shape, target)), target);
}

Val Partitioner::broadcast(const Instruction& in, const std::vector<Tiling>* given) {
  const std::vector<int64_t> d = int_list_attr(m_, in, "dimensions").value_or(std::vector<int64_t>{});
  if (in.operands.size() != 1 || operand(in, 0).tuple || in.shape.is_tuple()) return whole(in, given);
  const Val& x = operand(in, 0);
  const Shape& xs = operand_global(in, 0);
  const size_t rank = in.shape.dims.size();
  const std::optional<Tiling> natural = broadcast_tiling(in);
  if (!natural) return whole(in, given);
  Tiling o;
  int idx = -1;
  if (given) {
    // The operand takes the given tiles of the dimensions it maps to; the added ones are replicated.
    o = given->front();
    std::vector<int> inv(rank, -1);
    std::vector<int64_t> sizes(d.size(), 1);
    for (size_t i = 0; i < d.size(); ++i) inv[size_t(d[i])] = int(i), sizes[i] = o.tiles[size_t(d[i])];
    idx = reshard(x, *remap(o, inv, sizes), xs);
  } else {
    o = *natural;
    idx = use(x);
  }
  return leaf(emit_self(in, {idx}, local_shape(in.shape, o)), o);
}

std::optional<Tiling> Partitioner::broadcast_tiling(const Instruction& in) const {
  const std::vector<int64_t> d = int_list_attr(m_, in, "dimensions").value_or(std::vector<int64_t>{});
  if (in.operands.size() != 1 || operand(in, 0).tuple || in.shape.is_tuple()) return std::nullopt;
  const Tiling& x = operand(in, 0).t;
  const size_t rank = in.shape.dims.size();
  if (d.size() != operand_global(in, 0).dims.size() || x.manual ||
      std::any_of(d.begin(), d.end(), [&](int64_t v) { return v < 0 || v >= int64_t(rank); }))
    return std::nullopt;
  std::vector<int> map(d.size());
  std::vector<int64_t> sizes(rank, 1);
  for (size_t i = 0; i < d.size(); ++i) map[i] = int(d[i]), sizes[size_t(d[i])] = x.tiles[i];
  return remap(x, map, sizes);
}

Val Partitioner::transpose(const Instruction& in, const std::vector<Tiling>* given) {
  const std::vector<int64_t> p = int_list_attr(m_, in, "dimensions").value_or(std::vector<int64_t>{});
  if (in.operands.size() != 1 || operand(in, 0).tuple || p.size() != in.shape.dims.size()) return whole(in, given);
  std::vector<int64_t> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  for (size_t j = 0; j < sorted.size(); ++j)
    if (sorted[j] != int64_t(j)) return whole(in, given);
  const Val& x = operand(in, 0);
  const size_t r = p.size();
  Tiling o;
  int idx = -1;
  if (given) {
    o = given->front();
    std::vector<int> map(r);
    std::vector<int64_t> sizes(r);
    for (size_t j = 0; j < r; ++j) map[j] = int(p[j]), sizes[size_t(p[j])] = o.tiles[j];
    idx = reshard(x, *remap(o, map, sizes), operand_global(in, 0));
  } else {
    std::vector<int> map(r);
    std::vector<int64_t> sizes(r);
    for (size_t j = 0; j < r; ++j) map[size_t(p[j])] = int(j), sizes[j] = x.t.tiles[size_t(p[j])];
    o = *remap(x.t, map, sizes);
    idx = use(x);
  }
  return leaf(emit_self(in, {idx}, local_shape(in.shape, o)), o);
}

Val Partitioner::reshape(const Instruction& in, const std::vector<Tiling>* given) {
  if (in.operands.size() != 1 || operand(in, 0).tuple || in.shape.is_tuple()) return whole(in, given);
  const Val& x = operand(in, 0);
  const Shape& xs = operand_global(in, 0);
  if (product(xs.dims) != product(in.shape.dims)) return whole(in, given);
  if (given && !given->front().replicated()) {
    // The operand tiled so that the given tiles follow through, when every tiled dimension maps back.
    const Tiling& g = given->front();
    const std::vector<int> back = reshape_map(in.shape.dims, xs.dims, g.tiles);
    bool ok = true;
    std::vector<int64_t> sizes(xs.dims.size(), 1);
    for (size_t j = 0; j < back.size(); ++j) {
      if (g.tiles[j] > 1 && back[j] < 0) ok = false;
      if (back[j] >= 0) sizes[size_t(back[j])] = g.tiles[j];
    }
    if (ok) {
      const int idx = reshard(x, *remap(g, back, sizes), xs);
      return leaf(emit_self(in, {idx}, local_shape(in.shape, g)), g);
    }
  }
  const std::vector<int> map = reshape_map(xs.dims, in.shape.dims, x.t.tiles);
  std::vector<int> lost;
  for (size_t d = 0; d < map.size(); ++d)
    if (x.t.tiles[d] > 1 && map[d] < 0) lost.push_back(int(d));
  Tiling xt = x.t;
  int idx = -1;
  if (!lost.empty()) {
    note(in, "the reshape splits or merges a tiled dimension so that the tile is not the major part of one result "
             "dimension: the operand is gathered on it first (XLA may reshard with an all-to-all instead)");
    xt = untile(x.t, lost);
    idx = reshard(x, xt, xs);
  } else {
    idx = use(x);
  }
  std::vector<int64_t> sizes(in.shape.dims.size(), 1);
  for (size_t d = 0; d < map.size(); ++d)
    if (map[d] >= 0 && xt.tiles[d] > 1) sizes[size_t(map[d])] = xt.tiles[d];
  const Tiling o = *remap(xt, map, sizes);
  return finish(leaf(emit_self(in, {idx}, local_shape(in.shape, o)), o), in, given);
}

Val Partitioner::dot(const Instruction& in, const std::vector<Tiling>* given) {
  if (in.operands.size() != 2 || operand(in, 0).tuple || operand(in, 1).tuple || in.shape.is_tuple()) return whole(in, given);
  const Val& lv = operand(in, 0);
  const Val& rv = operand(in, 1);
  const Shape& ls = operand_global(in, 0);
  const Shape& rs = operand_global(in, 1);
  const DotDims dd = dot_dims(m_, in);
  const size_t rl = ls.dims.size(), rr = rs.dims.size();
  auto in_range = [](const std::vector<int64_t>& v, size_t r) {
    return std::all_of(v.begin(), v.end(), [&](int64_t x) { return x >= 0 && x < int64_t(r); });
  };
  if (dd.lhs_batch.size() != dd.rhs_batch.size() || dd.lhs_contracting.size() != dd.rhs_contracting.size() ||
      !in_range(dd.lhs_batch, rl) || !in_range(dd.lhs_contracting, rl) || !in_range(dd.rhs_batch, rr) ||
      !in_range(dd.rhs_contracting, rr))
    return whole(in, given);
  // Result axes: batch, lhs free, rhs free (XLA's order), then one partial-sum axis per contracting pair.
  const size_t nb = dd.lhs_batch.size(), nc = dd.lhs_contracting.size();
  std::vector<int> lmap(rl, -2), rmap(rr, -2);
  for (size_t k = 0; k < nb; ++k) lmap[size_t(dd.lhs_batch[k])] = int(k), rmap[size_t(dd.rhs_batch[k])] = int(k);
  std::vector<size_t> lf, rf;
  for (size_t i = 0; i < rl; ++i)
    if (lmap[i] == -2) lf.push_back(i);
  for (size_t i = 0; i < rr; ++i)
    if (rmap[i] == -2 && std::find(dd.rhs_contracting.begin(), dd.rhs_contracting.end(), int64_t(i)) == dd.rhs_contracting.end())
      rf.push_back(i);
  lf.erase(std::remove_if(lf.begin(), lf.end(), [&](size_t i) {
             return std::find(dd.lhs_contracting.begin(), dd.lhs_contracting.end(), int64_t(i)) != dd.lhs_contracting.end();
           }), lf.end());
  const size_t nout = nb + lf.size() + rf.size();
  if (nout != in.shape.dims.size()) return whole(in, given);
  for (size_t j = 0; j < lf.size(); ++j) lmap[lf[j]] = int(nb + j);
  for (size_t j = 0; j < rf.size(); ++j) rmap[rf[j]] = int(nb + lf.size() + j);
  for (size_t k = 0; k < nc; ++k)
    lmap[size_t(dd.lhs_contracting[k])] = rmap[size_t(dd.rhs_contracting[k])] = int(nout + k);
  const Tiling& L = lv.t;
  const Tiling& R = rv.t;
  // Propagated: batch from the lhs (else the rhs), free dimensions from their operand, each
  // contracting pair the finer of the two (partial sums); what does not fit the partitions is dropped,
  // rhs free first.
  std::vector<int64_t> sz(nout + nc, 1);
  for (size_t i = 0; i < rl; ++i) sz[size_t(lmap[i])] = std::max(sz[size_t(lmap[i])], L.tiles[i]);
  for (size_t i = 0; i < rr; ++i) {
    const size_t a = size_t(rmap[i]);
    if (a < nb && sz[a] > 1) continue;
    sz[a] = std::max(sz[a], R.tiles[i]);
  }
  auto fits = [&](const std::vector<int64_t>& s) { const int64_t p = product(s); return p <= n_ && n_ % p == 0; };
  auto drop = [&](size_t from, size_t to) {
    for (size_t a = from; a < to; ++a) sz[a] = 1;
  };
  if (!fits(sz)) drop(nb + lf.size(), nout);
  if (!fits(sz)) drop(nout, nout + nc);
  if (!fits(sz)) drop(0, nout);
  // A given result tiling is computed directly when the operands reach it without communication
  // (slices of replicated operands); otherwise the propagated result is resharded to it.
  auto free_of_comm = [&](const Tiling& x, const std::vector<int>& map, const std::vector<int64_t>& s) {
    for (size_t i = 0; i < x.tiles.size(); ++i)
      if (x.tiles[i] > 1 && s[size_t(map[i])] % x.tiles[i] != 0) return false;
    return true;
  };
  if (given) {
    std::vector<int64_t> b = sz;
    std::copy(given->front().tiles.begin(), given->front().tiles.end(), b.begin());
    if (!fits(b)) std::fill(b.begin() + int64_t(nout), b.end(), 1);
    if (b != sz && fits(b) && free_of_comm(L, lmap, b) && free_of_comm(R, rmap, b)) sz = b;
  }
  std::optional<Tiling> oc = L.tile_count() >= R.tile_count() ? remap(L, lmap, sz) : remap(R, rmap, sz);
  if (!oc) oc = L.tile_count() >= R.tile_count() ? remap(R, rmap, sz) : remap(L, lmap, sz);
  if (!oc) oc = remap(replicated(0, n_), {}, sz);
  auto need = [&](const std::vector<int>& map, size_t rank) {
    std::vector<int> inv(nout + nc, -1);
    std::vector<int64_t> s(rank, 1);
    for (size_t i = 0; i < rank; ++i) inv[size_t(map[i])] = int(i), s[i] = sz[size_t(map[i])];
    return *remap(*oc, inv, s);
  };
  const int li = reshard(lv, need(lmap, rl), ls);
  const int ri = reshard(rv, need(rmap, rr), rs);
  Tiling o;
  o.tiles.assign(sz.begin(), sz.begin() + int64_t(nout));
  o.rep = oc->rep * product(std::vector<int64_t>(sz.begin() + int64_t(nout), sz.end()));
  o.devices = oc->devices;
  int x = emit_self(in, {li, ri}, local_shape(in.shape, o));
  std::vector<int> partial;
  for (size_t k = 0; k < nc; ++k)
    if (sz[nout + k] > 1) partial.push_back(int(nout + k));
  if (!partial.empty()) x = all_reduce(x, *oc, partial, add_computation(in.shape.type), "all-reduce");
  return finish(leaf(x, o), in, given);
}

Val Partitioner::reduce(const Instruction& in, const std::vector<Tiling>* given) {
  if (in.operands.size() != 2 || in.shape.is_tuple() || operand(in, 0).tuple || in.called.empty()) return whole(in, given);
  const Val& x = operand(in, 0);
  const Shape& xs = operand_global(in, 0);
  const std::vector<int64_t> dims = int_list_attr(m_, in, "dimensions").value_or(std::vector<int64_t>{});
  const size_t r = xs.dims.size();
  std::vector<int> map(r, -1);
  for (int64_t d : dims) {
    if (d < 0 || d >= int64_t(r)) return whole(in, given);
    map[size_t(d)] = -2;
  }
  std::vector<int64_t> sizes;
  for (size_t i = 0; i < r; ++i)
    if (map[i] == -1) map[i] = int(sizes.size()), sizes.push_back(x.t.tiles[i]);
  const size_t nout = sizes.size();
  if (nout != in.shape.dims.size()) return whole(in, given);
  // A reduced tiled dimension leaves a partial result per tile: an all-reduce with the reduce's own
  // computation over the devices along it.
  std::vector<int> partial;
  for (size_t i = 0; i < r; ++i)
    if (map[i] == -2) {
      map[i] = x.t.tiles[i] > 1 ? int(sizes.size()) : -1;
      if (x.t.tiles[i] > 1) partial.push_back(int(sizes.size())), sizes.push_back(x.t.tiles[i]);
    }
  const Tiling oc = *remap(x.t, map, sizes);
  Tiling o;
  o.tiles.assign(sizes.begin(), sizes.begin() + int64_t(nout));
  o.rep = oc.rep * product(std::vector<int64_t>(sizes.begin() + int64_t(nout), sizes.end()));
  o.devices = oc.devices;
  int y = emit_self(in, {use(x), use(operand(in, 1))}, local_shape(in.shape, o));
  if (!partial.empty()) y = all_reduce(y, oc, partial, in.called[0], "all-reduce");
  return finish(leaf(y, o), in, given);
}

Val Partitioner::dimensionwise(const Instruction& in, const std::vector<Tiling>* given) {
  const std::string& op = in.opcode;
  if (in.operands.empty() || operand(in, 0).tuple) return whole(in, given);
  const Shape& xs = operand_global(in, 0);
  const size_t r = xs.dims.size();
  // These ops keep the operand's rank; a module that says otherwise is left whole (the window
  // rewrite below reads the result's dimensions by the operand's: the fuzzer found a heap overflow).
  if (!in.shape.is_tuple() && in.shape.dims.size() != r) return whole(in, given);
  // The dimensions the op works along: they must be whole on every partition.
  std::vector<int> along;
  if (op == "slice") {
    const std::vector<SliceDim> s = slice_attr(m_, in).value_or(std::vector<SliceDim>{});
    if (s.size() != r) return whole(in, given);
    for (size_t i = 0; i < r; ++i)
      if (s[i].start != 0 || s[i].limit != xs.dims[i] || s[i].stride != 1) along.push_back(int(i));
  } else if (op == "pad") {
    const std::vector<PadDim> p = padding_attr(m_, in).value_or(std::vector<PadDim>{});
    if (p.size() != r) return whole(in, given);
    for (size_t i = 0; i < r; ++i)
      if (p[i].low || p[i].high || p[i].interior) along.push_back(int(i));
  } else if (op == "dynamic-slice" || op == "dynamic-update-slice") {
    std::vector<int64_t> s = op == "dynamic-slice" ? int_list_attr(m_, in, "dynamic_slice_sizes").value_or(std::vector<int64_t>{})
                                                   : (in.operands.size() > 1 ? operand_global(in, 1).dims : std::vector<int64_t>{});
    if (s.size() != r) return whole(in, given);
    for (size_t i = 0; i < r; ++i)
      if (s[i] != xs.dims[i]) along.push_back(int(i));
  } else {  // reverse, concatenate, sort: dimensions={...}
    for (int64_t d : int_list_attr(m_, in, "dimensions").value_or(std::vector<int64_t>{})) {
      if (d < 0 || d >= int64_t(r)) return whole(in, given);
      along.push_back(int(d));
    }
  }
  // The most finely tiled operand of the array's rank leads, as for element-wise ops (a
  // dynamic-update-slice of a tiled update into replicated zeros, a scan's stacked outputs, is tiled).
  Tiling o = untile(operand(in, 0).t, along);
  for (size_t i = 1; i < in.operands.size() && (op == "dynamic-update-slice" || op == "concatenate"); ++i) {
    const Val& v = operand(in, i);
    if (v.tuple || v.t.manual || operand_global(in, i).dims.size() != r) continue;
    Tiling t = untile(v.t, along);
    if (t.tile_count() > o.tile_count()) o = std::move(t);
  }
  if (given && !in.shape.is_tuple() && given->front().tiles.size() == r &&
      std::all_of(along.begin(), along.end(), [&](int d) { return given->front().tiles[size_t(d)] == 1; }))
    o = given->front();
  // Operands of the array's rank take the result's tiling (concatenate's pieces, the update, sort's
  // values); start indices and padding values are scalars.
  std::vector<int> ops;
  for (size_t i = 0; i < in.operands.size(); ++i) {
    const Val& v = operand(in, i);
    const Shape& s = operand_global(in, i);
    ops.push_back(!v.tuple && s.dims.size() == r && r > 0 ? reshard(v, o, s) : use(v));
  }
  Val v;
  if (in.shape.is_tuple()) {
    size_t k = 0;
    v = tree(in.shape, std::vector<Tiling>(in.shape.tuple.size(), o), k, -1);
  } else {
    v = leaf(-1, o);
  }
  v.index = emit_self(in, ops, local(in.shape, v));
  // The window of a sliced op covers the local tile on the tiled dimensions.
  Instruction& self = out_.back();
  if (op == "slice" || op == "dynamic-slice") {
    const std::vector<int64_t>& ld = self.shape.dims;
    const std::optional<std::vector<SliceDim>> s = op == "slice" ? slice_attr(m_, in) : std::nullopt;
    std::string text = "{";
    for (size_t i = 0; i < r; ++i) {
      // Appended piece by piece: `(i ? "," : "") + to_string(...)` trips GCC 12's false -Wrestrict.
      if (op == "slice") {
        text += i ? ", [" : "[";
        text += o.tiles[i] > 1 ? "0:" + std::to_string(ld[i])
                               : std::to_string((*s)[i].start) + ":" + std::to_string((*s)[i].limit) + ":" +
                                     std::to_string((*s)[i].stride);
        text += "]";
      } else {
        if (i) text += ",";
        text += std::to_string(ld[i]);
      }
    }
    for (Attribute& a : self.attrs)
      if (a.name == (op == "slice" ? "slice" : "dynamic_slice_sizes")) a.value = text + "}";
  }
  return in.shape.is_tuple() ? v : finish(v, in, given);
}

Val Partitioner::custom_call(const Instruction& in, const std::vector<Tiling>* given) {
  const std::string target = string_attr(m_, in, "custom_call_target").value_or("");
  const bool array = in.operands.size() == 1 && !operand(in, 0).tuple && !in.shape.is_tuple();
  if (array && target == "Sharding") {
    // with_sharding_constraint: the value resharded to the annotation.
    const Val& x = operand(in, 0);
    const Tiling o = given ? given->front() : x.t;
    const int idx = reshard(x, o, operand_global(in, 0));
    return leaf(emit_self(in, {idx}, local_shape(in.shape, o)), o);
  }
  if (array && target == "SPMDFullToShardShape")  // into a manual region: the local tile as it is
    return leaf(emit_self(in, {use(operand(in, 0))}, in.shape), manual(in.shape.dims.size()));
  if (array && target == "SPMDShardToFullShape") {  // out of it: the local tile of the given sharding
    const Tiling o = given && !given->front().manual ? given->front() : replicated(in.shape.dims.size(), n_);
    return leaf(emit_self(in, {use(operand(in, 0))}, local_shape(in.shape, o)), o);
  }
  bool manual_value = given && std::any_of(given->begin(), given->end(), [](const Tiling& t) { return t.manual; });
  for (size_t i = 0; i < in.operands.size(); ++i) manual_value = manual_value || any_manual(operand(in, i));
  return manual_value ? as_written(in) : whole(in, given);
}

Val Partitioner::as_written(const Instruction& in) {
  std::vector<int> ops;
  for (size_t i = 0; i < in.operands.size(); ++i) ops.push_back(use(operand(in, i)));
  const int x = emit_self(in, ops, in.shape);
  if (copies_ > 1 && in.attr("replica_groups")) {
    for (Attribute& a : out_.back().attrs)
      if (a.name == "replica_groups") a.value = expand_groups(in);
  }
  size_t k = 0;
  std::vector<Tiling> leaves;
  std::vector<const Shape*> stack{&in.shape};
  while (!stack.empty()) {
    const Shape* s = stack.back();
    stack.pop_back();
    if (s->is_tuple())
      for (size_t i = s->tuple.size(); i-- > 0;) stack.push_back(&s->tuple[i]);
    else
      leaves.push_back(manual(s->dims.size()));
  }
  return tree(in.shape, leaves, k, x);
}

std::string Partitioner::expand_groups(const Instruction& in) const {
  std::vector<std::vector<int64_t>> g = replica_groups_attr(m_, in).value_or(std::vector<std::vector<int64_t>>{});
  if (g.empty()) {  // {}: every partition, in each copy
    g.emplace_back(size_t(n_));
    std::iota(g[0].begin(), g[0].end(), int64_t(0));
  }
  return groups_text(g);
}

Val Partitioner::whole(const Instruction& in, const std::vector<Tiling>* given) {
  std::vector<int> ops;
  bool tiled = false, tiled_tuple = false;
  for (size_t i = 0; i < in.operands.size(); ++i) {
    const Val& v = operand(in, i);
    if (v.tuple) {
      tiled_tuple = tiled_tuple || any_tiled(v);
      ops.push_back(use(v));
      continue;
    }
    const Shape& s = operand_global(in, i);
    tiled = tiled || any_tiled(v);
    ops.push_back(reshard(v, replicated(s.dims.size(), n_), s));
  }
  const int x = emit_self(in, ops, in.shape);
  const bool given_tiled = given && std::any_of(given->begin(), given->end(), [](const Tiling& t) { return t.tile_count() > 1; });
  const std::string& op = in.opcode;
  if (op.starts_with("all-") || op.starts_with("collective-") || op.starts_with("reduce-scatter"))
    note(in, "a collective outside a manual region of a pre-partitioning module: run on its written shapes with its "
             "replica_groups as written");
  else if (tiled_tuple)
    note(in, "a tuple operand holds tiled values: passed as partitioned, where '" + in.opcode + "' expects the whole "
             "shapes");
  else if (tiled || given_tiled)
    note(in, "'" + in.opcode + "' is not partitioned by tpusim's SPMD pass: its operands are gathered and every "
             "partition runs it whole (XLA would partition it: time overstated)");
  size_t k = 0;
  return finish(tree(in.shape, {}, k, x), in, given);
}

Val Partitioner::tuple(const Instruction& in, const std::vector<Tiling>* given) {
  Val v;
  v.tuple = true;
  std::vector<int> ops;
  Shape shape;
  shape.type = ElementType::kTuple;
  size_t k = 0;
  for (size_t i = 0; i < in.operands.size(); ++i) {
    Val e = operand(in, i);
    if (!e.tuple && given && k < given->size()) {
      const Tiling& g = (*given)[k++];
      if (!g.manual) {
        e.index = reshard(e, g, operand_global(in, i));
        e.t = g;
        e.deferred = -1;
      }
    } else if (e.tuple) {
      k += leaf_count(e);
    }
    e.index = use(e);
    e.deferred = -1;
    ops.push_back(e.index);
    shape.tuple.push_back(out_.at(size_t(e.index)).shape);
    v.elems.push_back(std::move(e));
  }
  v.index = emit_self(in, ops, shape);
  return v;
}

}  // namespace tpusim::hlo::spmd
