#include "compiler/hlo/hlo_import_flat.h"

#include <string_view>

#include "compiler/hlo/hlo_attrs.h"

namespace tpusim::hlo {

namespace {

using Users = std::vector<std::vector<int>>;

Users users_of(const Computation& c) {
  Users u(c.instructions.size());
  for (size_t i = 0; i < c.instructions.size(); ++i)
    for (int o : c.instructions[i].operands) u.at(size_t(o)).push_back(int(i));
  return u;
}

bool one_dim(const Shape& s) { return !s.is_tuple() && s.dims.size() == 1; }

// A collective along dimension 0 (dimensions={0}).
bool along_zero(const Module& m, const Instruction& in) {
  const auto d = int_list_attr(m, in, "dimensions");
  return d && d->size() == 1 && (*d)[0] == 0;
}

// The only user of instruction i, -1 when it has none or several.
int only_user(const Users& u, int i) { return u[size_t(i)].size() == 1 ? u[size_t(i)][0] : -1; }

void find_gather(const Module& m, const Computation& c, const Users& u, int i, FlatPatterns& out) {
  const Instruction& in = c.instructions[size_t(i)];
  if (in.operands.size() != 1 || !one_dim(c.instructions[size_t(in.operands[0])].shape) || !along_zero(m, in)) return;
  FlatGather g;
  if (in.opcode == "all-gather") {
    if (!one_dim(in.shape)) return;
    g.buffer = i;
  } else {
    if (!in.shape.is_tuple() || in.shape.tuple.size() < 2 || !one_dim(in.shape.tuple[1])) return;
    g.buffer = only_user(u, i);
    if (g.buffer < 0 || c.instructions[size_t(g.buffer)].opcode != "all-gather-done") return;
  }
  int64_t at = 0;
  std::vector<FlatUse> views;
  std::vector<int> reshapes;
  for (int s : u[size_t(g.buffer)]) {
    const Instruction& cut = c.instructions[size_t(s)];
    const auto sl = cut.opcode == "slice" ? slice_attr(m, cut) : std::nullopt;
    if (!sl || sl->size() != 1 || (*sl)[0].start != at || (*sl)[0].stride != 1 || !one_dim(cut.shape)) return;
    at = (*sl)[0].limit;
    const int r = only_user(u, s);
    const bool reshaped = r >= 0 && c.instructions[size_t(r)].opcode == "reshape";
    g.cuts.push_back(s);
    g.dims.push_back(reshaped ? c.instructions[size_t(r)].shape.dims : cut.shape.dims);
    reshapes.push_back(reshaped ? r : -1);
  }
  if (g.cuts.empty()) return;
  for (size_t k = 0; k < g.cuts.size(); ++k) {
    out.uses[g.cuts[k]] = {FlatRole::kCut, i, int(k)};
    if (reshapes[k] >= 0) out.uses[reshapes[k]] = {FlatRole::kCutReshape, i, int(k)};
  }
  out.uses[i] = {FlatRole::kGather, i, -1};
  out.gathers[i] = std::move(g);
}

// The reduce-scatter an async-start holds: the root of its computation, of its parameter.
const Instruction* wrapped_scatter(const Module& m, const Instruction& in) {
  if (in.called.size() != 1) return nullptr;
  const Computation& w = m.computations.at(size_t(in.called[0]));
  if (w.root < 0 || w.instructions.size() != 2) return nullptr;
  const Instruction& r = w.root_instruction();
  if (r.opcode != "reduce-scatter" || r.operands.size() != 1 || w.instructions[size_t(r.operands[0])].opcode != "parameter")
    return nullptr;
  return &r;
}

void find_scatter(const Module& m, const Computation& c, const Users& u, int i, FlatPatterns& out) {
  const Instruction& in = c.instructions[size_t(i)];
  if (in.operands.size() != 1) return;
  FlatScatter f;
  if (in.opcode == "async-start") {
    const Instruction* rs = wrapped_scatter(m, in);
    if (!rs || !one_dim(rs->shape) || !along_zero(m, *rs)) return;
    f.done = only_user(u, i);
    if (f.done < 0 || c.instructions[size_t(f.done)].opcode != "async-done") return;
  } else if (!one_dim(in.shape) || !along_zero(m, in)) {
    return;
  }
  std::vector<int> views;
  int x = in.operands[0];
  if (c.instructions[size_t(x)].opcode == "pad") {
    const Instruction& pad = c.instructions[size_t(x)];
    const auto p = padding_attr(m, pad);
    if (only_user(u, x) != i || pad.operands.size() != 2 || !p || p->size() != 1 || (*p)[0].low != 0 ||
        (*p)[0].interior != 0 || c.instructions[size_t(pad.operands[1])].opcode != "constant" ||
        only_user(u, pad.operands[1]) != x)
      return;
    views = {x, pad.operands[1]};
    x = pad.operands[0];
  }
  const Instruction& cat = c.instructions[size_t(x)];
  if (cat.opcode != "concatenate" || !one_dim(cat.shape) || only_user(u, x) != (views.empty() ? i : views[0])) return;
  views.push_back(x);
  for (int piece : cat.operands) {
    const Instruction& r = c.instructions[size_t(piece)];
    if (r.opcode == "reshape" && only_user(u, piece) == x) {
      views.push_back(piece);
      f.tensors.push_back(r.operands.at(0));
    } else if (one_dim(r.shape)) {
      f.tensors.push_back(piece);
    } else {
      return;
    }
  }
  for (int v : views) out.uses[v] = {FlatRole::kScatterView, i, -1};
  out.uses[i] = {FlatRole::kScatter, i, -1};
  if (f.done >= 0) out.uses[f.done] = {FlatRole::kScatterDone, i, -1};
  out.scatters[i] = std::move(f);
}

}  // namespace

FlatPatterns find_flat_patterns(const Module& m, const Computation& c) {
  FlatPatterns out;
  const Users u = users_of(c);
  for (size_t i = 0; i < c.instructions.size(); ++i) {
    const std::string_view op = c.instructions[i].opcode;
    if (op == "all-gather" || op == "all-gather-start") find_gather(m, c, u, int(i), out);
    if (op == "reduce-scatter" || op == "async-start") find_scatter(m, c, u, int(i), out);
  }
  return out;
}

}  // namespace tpusim::hlo
