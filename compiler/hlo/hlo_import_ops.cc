#include "compiler/hlo/hlo_import_ops.h"

#include <algorithm>
#include <bit>
#include <map>

#include "compiler/hlo/hlo_attrs.h"
#include "compiler/hlo/hlo_error.h"

namespace tpusim::hlo::import_ops {
namespace {

using models::DType;
using models::Dims;
using models::EwOp;
using models::Graph;
using models::Node;
using models::OpKind;
using models::ReduceOp;

std::string dims_str(const Dims& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) {
    if (i) s += ',';  // appended apart: GCC 12 warns (-Wrestrict, falsely) on "," + std::to_string(...)
    s += std::to_string(d[i]);
  }
  return s + "]";
}

// By value: a reference into the graph dangles once a node is added.
Dims shape_of(const OpArgs& a, size_t i) { return a.g.node(a.ops[i]).shape; }

// Operand i must have the result's dimensions (HLO's element-wise ops take no implicit broadcast).
void require_result_shape(const OpArgs& a, size_t i) {
  if (shape_of(a, i) != a.in.shape.dims)
    shape_error(a.m, a.in, dims_str(shape_of(a, i)),
                "is the shape of operand " + std::to_string(i) + " '" + a.in.operand_names.at(i) +
                    "' of this element-wise " + a.in.opcode + "; expected the result's dimensions " +
                    dims_str(a.in.shape.dims));
}

bool is_scalar_constant(const Graph& g, int n) { return g.node(n).kind == OpKind::kConstant; }
// A broadcast of a scalar constant (`broadcast(constant(c)), dimensions={}`): its constant, else -1.
int splat_constant(const Graph& g, int n) {
  const Node& x = g.node(n);
  if (x.kind == OpKind::kBroadcast && x.broadcast_dims.empty() && is_scalar_constant(g, x.inputs[0])) return x.inputs[0];
  return -1;
}
// A second operand as the graph's element-wise ops read it: a broadcast scalar constant is the
// constant (folded into the VPU op, as XLA fuses it) and a convert is its operand read in its own
// type (XLA fuses the convert into the consumer; the bytes read are the unconverted operand's).
int folded(const Graph& g, int n) {
  if (const int c = splat_constant(g, n); c >= 0) return c;
  if (g.node(n).kind == OpKind::kConvert) return g.node(n).inputs[0];
  return n;
}

// Element-wise opcodes: the graph op, its arity, and, when it is not exact, why the stand-in costs
// the same (docs/hlo.md lists the table).
struct EwMap {
  EwOp op;
  int arity;
  const char* approx;  // nullptr: exact
};
const std::map<std::string_view, EwMap>& ew_table() {
  static const std::map<std::string_view, EwMap> t = {
      {"add", {EwOp::kAdd, 2, nullptr}},
      {"subtract", {EwOp::kSub, 2, nullptr}},
      {"multiply", {EwOp::kMul, 2, nullptr}},
      {"divide", {EwOp::kDiv, 2, nullptr}},
      {"maximum", {EwOp::kMax, 2, nullptr}},
      {"exponential", {EwOp::kExp, 1, nullptr}},
      {"log", {EwOp::kLog, 1, nullptr}},
      {"sqrt", {EwOp::kSqrt, 1, nullptr}},
      {"rsqrt", {EwOp::kRsqrt, 1, nullptr}},
      {"negate", {EwOp::kNeg, 1, nullptr}},
      {"tanh", {EwOp::kTanh, 1, nullptr}},
      {"erf", {EwOp::kErf, 1, nullptr}},
      {"minimum", {EwOp::kMax, 2, "as maximum (one VPU ALU op either way)"}},
      {"and", {EwOp::kMax, 2, "as maximum (one VPU ALU op)"}},
      {"or", {EwOp::kMax, 2, "as maximum (one VPU ALU op)"}},
      {"xor", {EwOp::kMax, 2, "as maximum (one VPU ALU op)"}},
      {"shift-left", {EwOp::kMax, 2, "as maximum (one VPU ALU op)"}},
      {"shift-right-arithmetic", {EwOp::kMax, 2, "as maximum (one VPU ALU op)"}},
      {"shift-right-logical", {EwOp::kMax, 2, "as maximum (one VPU ALU op)"}},
      {"remainder", {EwOp::kDiv, 2, "as divide (a division on the VPU)"}},
      {"atan2", {EwOp::kDiv, 2, "as divide (a division on the VPU; the arctangent's EUP op not counted)"}},
      {"abs", {EwOp::kNeg, 1, "as negate (one VPU ALU op)"}},
      {"sign", {EwOp::kNeg, 1, "as negate (one VPU ALU op)"}},
      {"not", {EwOp::kNeg, 1, "as negate (one VPU ALU op)"}},
      {"floor", {EwOp::kNeg, 1, "as negate (one VPU ALU op)"}},
      {"ceil", {EwOp::kNeg, 1, "as negate (one VPU ALU op)"}},
      {"round-nearest-afz", {EwOp::kNeg, 1, "as negate (one VPU ALU op)"}},
      {"round-nearest-even", {EwOp::kNeg, 1, "as negate (one VPU ALU op)"}},
      {"is-finite", {EwOp::kNeg, 1, "as negate (one VPU ALU op)"}},
      {"popcnt", {EwOp::kNeg, 1, "as negate (one VPU ALU op)"}},
      {"count-leading-zeros", {EwOp::kNeg, 1, "as negate (one VPU ALU op)"}},
      {"real", {EwOp::kNeg, 1, "as negate (one VPU ALU op)"}},
      {"imag", {EwOp::kNeg, 1, "as negate (one VPU ALU op)"}},
      {"exponential-minus-one", {EwOp::kExp, 1, "as exponential (one EUP op)"}},
      {"log-plus-one", {EwOp::kLog, 1, "as log (one EUP op)"}},
      {"logistic", {EwOp::kTanh, 1, "as tanh (one EUP op)"}},
      {"sine", {EwOp::kTanh, 1, "as tanh (one EUP transcendental)"}},
      {"cosine", {EwOp::kTanh, 1, "as tanh (one EUP transcendental)"}},
      {"tan", {EwOp::kTanh, 1, "as tanh (one EUP transcendental)"}},
      {"cbrt", {EwOp::kTanh, 1, "as tanh (one EUP transcendental)"}},
      {"erf-inv", {EwOp::kTanh, 1, "as tanh (one EUP transcendental)"}},
  };
  return t;
}

// `x` cut or zero-extended, dimension by dimension, to `shape` (same rank): the part of the operand a
// windowed op reads at its output's positions (a strided window reads less than XLA's, a padded one
// writes zeros).
int fit(Graph& g, int x, const Dims& shape) {
  for (size_t d = 0; d < shape.size(); ++d) {
    const Dims cur = g.node(x).shape;
    if (cur[d] > shape[d]) {
      x = g.slice(x, int(d), 0, shape[d]);
    } else if (cur[d] < shape[d]) {
      Dims pad = cur;
      pad[d] = shape[d] - cur[d];
      x = g.concatenate({x, g.full(0, pad, g.node(x).dtype)}, int(d));
    }
  }
  return x;
}

std::vector<int> iota_dims(size_t n) {
  std::vector<int> r(n);
  for (size_t i = 0; i < n; ++i) r[i] = int(i);
  return r;
}

// `w` VPU ops per element of `x`: a chain of w element-wise ops over x, one loop kernel that reads x
// once and writes x's shape. Past 64 (a window as large as a global pooling) x is broadcast along a
// new major dimension of w and reduced over it instead, so that the graph stays small.
int passes(Graph& g, int x, int64_t w, ReduceOp op) {
  if (w <= 1) return x;
  const EwOp e = op == ReduceOp::kMax ? EwOp::kMax : EwOp::kAdd;
  if (w <= 64) {
    int cur = g.ew(e, x, x);
    for (int64_t i = 1; i < w; ++i) cur = g.ew(e, cur, x);
    return cur;
  }
  Dims s = g.node(x).shape;
  s.insert(s.begin(), w);
  std::vector<int> dims(s.size() - 1);
  for (size_t i = 0; i < dims.size(); ++i) dims[i] = int(i + 1);
  return g.reduce(g.broadcast(x, s, dims), 0, op);
}

// The combiner of reduce/scatter/reduce-window: the root of `to_apply` over its two parameters.
std::optional<std::pair<ReduceOp, const char*>> combiner(const Module& m, const Instruction& in) {
  if (in.called.empty()) return std::nullopt;
  const Computation& f = m.computations.at(in.called[0]);
  const Instruction& r = f.root_instruction();
  if (r.operands.size() != 2 || f.instructions.at(r.operands[0]).opcode != "parameter" ||
      f.instructions.at(r.operands[1]).opcode != "parameter")
    return std::nullopt;
  if (r.opcode == "add") return std::pair{ReduceOp::kSum, nullptr};
  if (r.opcode == "maximum") return std::pair{ReduceOp::kMax, nullptr};
  if (r.opcode == "minimum") return std::pair{ReduceOp::kMax, "minimum as maximum (same VPU and cross-lane work)"};
  if (r.opcode == "multiply" || r.opcode == "and" || r.opcode == "or")
    return std::pair{ReduceOp::kSum, "as a sum (one VPU op per element either way)"};
  return std::nullopt;
}

// Positions of a convolution's labels: the batch, the spatial dimensions in order, the feature
// (`b`, `0`.., `f` for the input and output; `i`, `0`.., `o` for the kernel with b=i, f=o).
struct LabelPos {
  int b = -1, f = -1;
  std::vector<int> spatial;
};
std::optional<LabelPos> label_positions(const std::string& l, char b, char f) {
  LabelPos p;
  for (int i = 0; i < int(l.size()); ++i) {
    const char c = l[i];
    if (c == b || c == f) {
      int& slot = c == b ? p.b : p.f;
      if (slot >= 0) return std::nullopt;
      slot = i;
      continue;
    }
    const int k = c - '0';
    if (k < 0 || k >= int(l.size())) return std::nullopt;
    if (int(p.spatial.size()) <= k) p.spatial.resize(size_t(k) + 1, -1);
    if (p.spatial[size_t(k)] >= 0) return std::nullopt;
    p.spatial[size_t(k)] = i;
  }
  if (p.b < 0 || p.f < 0) return std::nullopt;
  for (int s : p.spatial)
    if (s < 0) return std::nullopt;
  return p;
}

}  // namespace

void shape_error(const Module& m, const Instruction& in, std::string value, std::string rule) {
  throw_hlo_error(SourcePos{&m.file, in.line, in.column, in.name}, std::move(value), std::move(rule));
}

bool is_elementwise(std::string_view op) { return ew_table().count(op) > 0; }

std::optional<int> build_elementwise(const OpArgs& a) {
  Graph& g = a.g;
  const std::string& op = a.in.opcode;
  const std::string& name = a.in.name;
  const std::vector<int>& ops = a.ops;
  if (auto it = ew_table().find(op); it != ew_table().end()) {
    const EwMap& e = it->second;
    if (int(ops.size()) != e.arity) return std::nullopt;
    for (size_t i = 0; i < ops.size(); ++i) require_result_shape(a, i);
    // max(x, 0): the graph's relu, as the export writes it.
    if (e.op == EwOp::kMax && !e.approx) {
      const int c = splat_constant(g, ops[1]);
      if (c >= 0 && g.node(c).constant == 0) return g.ew(EwOp::kRelu, ops[0], -1, name);
    }
    if (e.approx) a.approx = e.approx;
    return g.ew(e.op, ops[0], e.arity == 2 ? folded(g, ops[1]) : -1, name);
  }
  if (op == "power" && ops.size() == 2) {
    for (size_t i = 0; i < 2; ++i) require_result_shape(a, i);
    a.approx = "as exp(y * log x), XLA's own expansion on the VPU";
    return g.ew(EwOp::kExp, g.ew(EwOp::kMul, g.ew(EwOp::kLog, ops[0], -1, name + ".log"), folded(g, ops[1]), name + ".mul"), -1,
                name);
  }
  if (op == "compare" && ops.size() == 2) {
    for (size_t i = 0; i < 2; ++i) require_result_shape(a, i);
    const std::string dir = direction_attr(a.m, a.in).value_or("");
    if (dir == "EQ") return g.ew(EwOp::kCmpEq, ops[0], folded(g, ops[1]), name);
    if (dir == "GT") return g.ew(EwOp::kCmpGt, ops[0], folded(g, ops[1]), name);
    if (dir == "LT") return g.ew(EwOp::kCmpGt, ops[1], folded(g, ops[0]), name);
    a.approx = "compare " + dir + " as " + (dir == "NE" ? "EQ" : "GT") + " (one VPU compare)";
    return g.ew(dir == "NE" ? EwOp::kCmpEq : EwOp::kCmpGt, ops[0], folded(g, ops[1]), name);
  }
  if (op == "select" && ops.size() == 3) {
    for (size_t i = 0; i < 3; ++i) require_result_shape(a, i);
    // A dropout mask as the export writes it: select(rng(0, 1) > rate, 1/(1-rate), x * 0).
    const Node& p = g.node(ops[0]);
    if (p.kind == OpKind::kElementwise && p.ew == EwOp::kCmpGt && p.inputs.size() == 2) {
      const Node& u = g.node(p.inputs[0]);
      const Node& r = g.node(p.inputs[1]);
      const int on = splat_constant(g, ops[1]);
      // The zero branch: a broadcast 0, or x * 0 (the export's, naming the operand the mask reads).
      const Node& z = g.node(ops[2]);
      const bool times_zero = z.kind == OpKind::kElementwise && z.ew == EwOp::kMul && z.inputs.size() == 2 &&
                              is_scalar_constant(g, z.inputs[1]) && g.node(z.inputs[1]).constant == 0;
      const int off = splat_constant(g, ops[2]);
      if (u.kind == OpKind::kElementwise && u.ew == EwOp::kDropoutMask && u.rate == 0 && r.kind == OpKind::kConstant &&
          r.constant >= 0 && r.constant < 1 && on >= 0 && (times_zero || (off >= 0 && g.node(off).constant == 0)))
        return g.dropout_mask(times_zero ? z.inputs[0] : u.inputs[0], r.constant, name);
    }
    a.approx = "as max(on_true * pred, on_false): its three operands read (pred as s32, 4 bytes for 1), two VPU "
               "ops for its one";
    return g.ew(EwOp::kMax, g.ew(EwOp::kMul, ops[1], ops[0], name + ".pick"), folded(g, ops[2]), name);
  }
  if (op == "clamp" && ops.size() == 3) {
    require_result_shape(a, 1);
    const Dims& x = shape_of(a, 1);
    auto fit_bound = [&](size_t i) {
      const int b = ops[i];
      if (g.node(b).shape.empty() && !x.empty()) return g.broadcast(b, x, {});
      if (g.node(b).shape != x)
        shape_error(a.m, a.in, dims_str(g.node(b).shape),
                    "is the shape of clamp bound '" + a.in.operand_names.at(i) + "'; expected a scalar or " + dims_str(x));
      return b;
    };
    a.approx = "as two maximum ops (one VPU ALU op each)";
    const int lo = fit_bound(0), hi = fit_bound(2);
    return g.ew(EwOp::kMax, g.ew(EwOp::kMax, ops[1], folded(g, lo), name + ".lo"), folded(g, hi), name);
  }
  return std::nullopt;
}

// reduce(x, init), dimensions={...}, to_apply=add|maximum (of its two parameters): one graph reduce
// per dimension, highest first so the lower indices stay valid. The init value is taken to be the
// op's identity (0, -inf), as every framework writes it.
std::optional<int> build_reduce(const OpArgs& a) {
  if (a.ops.size() != 2) return std::nullopt;
  if (!shape_of(a, 1).empty())
    shape_error(a.m, a.in, dims_str(shape_of(a, 1)), "is the shape of the init value '" + a.in.operand_names[1] +
                                                         "'; expected a scalar");
  const auto comb = combiner(a.m, a.in);
  if (!comb) return std::nullopt;
  if (comb->second) a.approx = std::string("reduce ") + comb->second;
  std::vector<int64_t> dims = int_list_attr(a.m, a.in, "dimensions").value_or(std::vector<int64_t>{});
  std::sort(dims.rbegin(), dims.rend());
  const int64_t rank = int64_t(shape_of(a, 0).size());
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] < 0 || dims[i] >= rank || (i && dims[i] == dims[i - 1]))
      shape_error(a.m, a.in, std::to_string(dims[i]),
                  "is a reduced dimension of an operand of rank " + std::to_string(rank) +
                      "; expected distinct dimensions in [0, rank)");
  int cur = a.ops[0];
  for (int64_t d : dims) cur = a.g.reduce(cur, int(d), comb->first);
  return cur;
}

// Embedding lookups: whole rows of a table [R, ...] picked by ids (offset_dims the trailing dims,
// collapsed_slice_dims={0}, start_index_map={0}, slice_sizes={1, the rest of the table}).
std::optional<int> build_gather(const OpArgs& a) {
  if (a.ops.size() != 2) return std::nullopt;
  const Dims& table = shape_of(a, 0);
  Dims ids = shape_of(a, 1);
  const auto list = [&](const char* n) { return int_list_attr(a.m, a.in, n).value_or(std::vector<int64_t>{-1}); };
  const std::vector<int64_t> collapsed = list("collapsed_slice_dims"), start_map = list("start_index_map"),
                             sizes = list("slice_sizes"), offset = list("offset_dims");
  const int64_t ivd = int_attr(a.m, a.in, "index_vector_dim").value_or(int64_t(ids.size()));
  if (table.empty() || collapsed != std::vector<int64_t>{0} || start_map != std::vector<int64_t>{0}) return std::nullopt;
  if (sizes.size() != table.size() || sizes[0] != 1 || !std::equal(sizes.begin() + 1, sizes.end(), table.begin() + 1))
    return std::nullopt;
  int id_node = a.ops[1];
  if (ivd != int64_t(ids.size())) {  // an explicit index vector of one component: the last dim
    if (ivd != int64_t(ids.size()) - 1 || ids.back() != 1) return std::nullopt;
    ids.pop_back();
    id_node = a.g.reshape(a.ops[1], ids);
  }
  for (size_t i = 0; i < offset.size(); ++i)
    if (offset[i] != int64_t(ids.size() + i)) return std::nullopt;
  if (offset.size() != table.size() - 1 || a.g.node(id_node).dtype != DType::kS32) return std::nullopt;
  return a.g.gather(a.ops[0], id_node, a.in.name);
}

// scatter(operand, ids, updates): whole rows added at ids (the gather's transpose, as the export
// writes it) is the graph's scatter-add, added to the operand unless the operand is zeros; any other
// form is an element-wise update of the operand (reads operand and updates, writes the result).
std::optional<int> build_scatter(const OpArgs& a) {
  if (a.ops.size() != 3) return std::nullopt;
  Graph& g = a.g;
  const Dims& operand = shape_of(a, 0);
  Dims ids = shape_of(a, 1);
  const Dims& upd = shape_of(a, 2);
  const auto list = [&](const char* n) { return int_list_attr(a.m, a.in, n).value_or(std::vector<int64_t>{-1}); };
  const std::vector<int64_t> inserted = list("inserted_window_dims"), to_operand = list("scatter_dims_to_operand_dims"),
                             window = list("update_window_dims");
  const int64_t ivd = int_attr(a.m, a.in, "index_vector_dim").value_or(int64_t(ids.size()));
  const auto comb = combiner(a.m, a.in);
  bool rows = !operand.empty() && inserted == std::vector<int64_t>{0} && to_operand == std::vector<int64_t>{0} &&
              g.node(a.ops[1]).dtype == DType::kS32;
  int id_node = a.ops[1];
  if (rows && ivd != int64_t(ids.size())) {
    rows = ivd == int64_t(ids.size()) - 1 && ids.back() == 1;
    if (rows) {
      ids.pop_back();
      id_node = g.reshape(a.ops[1], ids);
    }
  }
  if (rows) {
    Dims want = ids;
    want.insert(want.end(), operand.begin() + 1, operand.end());
    rows = upd == want && window.size() == operand.size() - 1;
    for (size_t i = 0; rows && i < window.size(); ++i) rows = window[i] == int64_t(ids.size() + i);
  }
  if (!rows) {
    a.approx = "as an element-wise update of the operand (operand and updates read, the result written)";
    return touch(g, {a.ops[0], a.ops[2]}, a.in.shape.dims, a.dtype, a.in.name);
  }
  if (!comb || comb->first != ReduceOp::kSum || comb->second)
    a.approx = "a row scatter with another combiner as scatter-add (same rows read and written)";
  const int sa = g.scatter_add(a.ops[2], id_node, operand[0], a.in.name);
  const int z = splat_constant(g, a.ops[0]);
  if (z >= 0 && g.node(z).constant == 0) return sa;
  return g.ew(EwOp::kAdd, a.ops[0], sa, a.in.name + ".into");
}

std::optional<int> build_movement(const OpArgs& a) {
  Graph& g = a.g;
  const std::string& op = a.in.opcode;
  const Dims& out = a.in.shape.dims;
  if (a.ops.empty()) return std::nullopt;
  const Dims& x = shape_of(a, 0);
  const std::string& name = a.in.name;
  if (op == "pad" && a.ops.size() == 2) {
    const std::vector<PadDim> p = padding_attr(a.m, a.in).value_or(std::vector<PadDim>{});
    if (p.size() != x.size() || !shape_of(a, 1).empty())
      shape_error(a.m, a.in, std::to_string(p.size()) + " padding dimensions",
                  "do not fit an operand of rank " + std::to_string(x.size()) + " and a scalar pad value; expected one "
                  "low_high[_interior] per dimension");
    bool interior = false;
    for (size_t d = 0; d < x.size(); ++d) {
      interior |= p[d].interior > 0;
      if (p[d].interior < 0 || x[d] + p[d].low + p[d].high + p[d].interior * (x[d] - 1) != out[d])
        shape_error(a.m, a.in, dims_str(out), "is not the operand " + dims_str(x) + " padded by the padding attribute "
                                              "along dimension " + std::to_string(d) + "; expected size + low + high + "
                                              "interior x (size - 1)");
    }
    if (interior) {
      a.approx = "interior padding as a pass that reads the operand and writes the result";
      return touch(g, {a.ops[0]}, out, a.dtype, name);
    }
    int cur = a.ops[0];
    for (size_t d = 0; d < x.size(); ++d) {
      const int64_t lo = p[d].low, hi = p[d].high, n = g.node(cur).shape[d];
      if (lo < 0 || hi < 0) cur = g.slice(cur, int(d), std::max<int64_t>(0, -lo), n - std::max<int64_t>(0, -hi), name);
      std::vector<int> parts;
      Dims s = g.node(cur).shape;
      if (lo > 0) s[d] = lo, parts.push_back(g.broadcast(a.ops[1], s, {}));
      parts.push_back(cur);
      if (hi > 0) s[d] = hi, parts.push_back(g.broadcast(a.ops[1], s, {}));
      if (parts.size() > 1) cur = g.concatenate(parts, int(d), name);
    }
    return cur;
  }
  if (op == "reverse" && a.ops.size() == 1) {
    if (int_list_attr(a.m, a.in, "dimensions").value_or(std::vector<int64_t>{}).empty()) return a.ops[0];
    a.approx = "as an element-wise pass (negate): each element read and written once; the permutation inside a "
               "vector register not counted";
    return g.ew(EwOp::kNeg, a.ops[0], -1, name);
  }
  if (op == "dynamic-slice") {
    // The start indices only place the window: the same bytes move as for a static slice at 0.
    const std::vector<int64_t> sizes = int_list_attr(a.m, a.in, "dynamic_slice_sizes").value_or(std::vector<int64_t>{});
    if (sizes.size() != x.size() || Dims(sizes.begin(), sizes.end()) != out)
      shape_error(a.m, a.in, dims_str(Dims(sizes.begin(), sizes.end())),
                  "is the dynamic_slice_sizes of an operand " + dims_str(x) + " and a result " + dims_str(out) +
                      "; expected one size per operand dimension, equal to the result's");
    int cur = a.ops[0];
    for (size_t d = 0; d < x.size(); ++d) {
      if (sizes[d] > x[d] || sizes[d] <= 0)
        shape_error(a.m, a.in, std::to_string(sizes[d]), "is the slice size of dimension " + std::to_string(d) +
                                                             " of " + dims_str(x) + "; expected at most its size");
      if (sizes[d] != x[d]) cur = g.slice(cur, int(d), 0, sizes[d], name);
    }
    return cur;
  }
  if (op == "dynamic-update-slice" && a.ops.size() >= 2) {
    const Dims& u = shape_of(a, 1);
    bool fits = u.size() == x.size() && out == x;
    std::vector<size_t> differ;
    for (size_t d = 0; fits && d < x.size(); ++d) {
      fits = u[d] <= x[d];
      if (u[d] != x[d]) differ.push_back(d);
    }
    if (!fits)
      shape_error(a.m, a.in, dims_str(u), "is the update of an operand " + dims_str(x) + " with result " + dims_str(out) +
                                              "; expected an update of the operand's rank within its sizes, the "
                                              "result of the operand's shape");
    if (differ.empty()) return a.ops[1];  // the update replaces the whole operand
    a.approx = "as the update joined to the rest of the operand: the operand's other part is copied (XLA updates "
               "in place when the operand's buffer can be reused)";
    if (differ.size() == 1) {
      const int d = int(differ[0]);
      return g.concatenate({a.ops[1], g.slice(a.ops[0], d, u[d], x[d], name + ".rest")}, d, name);
    }
    return touch(g, {a.ops[0], a.ops[1]}, out, a.dtype, name);
  }
  return std::nullopt;
}

// convolution(input, kernel): a dot of the convolution's flops over an im2col view of the input
// (docs/hlo.md): rows batch x output positions, contracting kernel positions x input features per
// group. The input, in [b, spatial..., f] order, is read once at the output's positions (cut or
// zero-extended: a strided or valid convolution reads less of it than XLA's, a padded one more);
// its broadcast over the kernel positions is the dot's operand (a view in the dot's kernel). The
// kernel reads [spatial..., i, o]; transposes to those orders and to the output's are the layout
// cost a non-default dim_labels order has.
std::optional<int> build_convolution(const OpArgs& a) {
  if (a.ops.size() != 2) return std::nullopt;
  Graph& g = a.g;
  const std::optional<DimLabels> labels = dim_labels_attr(a.m, a.in);
  if (!labels) return std::nullopt;
  const Dims& x = shape_of(a, 0);
  const Dims& w = shape_of(a, 1);
  const Dims& out = a.in.shape.dims;
  const auto lp = label_positions(labels->lhs, 'b', 'f'), rp = label_positions(labels->rhs, 'i', 'o'),
             op = label_positions(labels->out, 'b', 'f');
  if (!lp || !rp || !op || labels->lhs.size() != x.size() || labels->rhs.size() != w.size() ||
      labels->out.size() != out.size() || lp->spatial.size() != rp->spatial.size() ||
      lp->spatial.size() != op->spatial.size())
    shape_error(a.m, a.in, labels->lhs + "_" + labels->rhs + "->" + labels->out,
                "does not label input " + dims_str(x) + ", kernel " + dims_str(w) + " and result " + dims_str(out) +
                    "; expected one b/i and f/o and the spatial digits 0..n-1 once each per shape");
  const int64_t groups = int_attr(a.m, a.in, "feature_group_count").value_or(1);
  if (int_attr(a.m, a.in, "batch_group_count").value_or(1) != 1 || groups < 1) return std::nullopt;
  const int64_t batch = x[lp->b], cin = x[lp->f], ci = w[rp->b], co = w[rp->f];
  if (ci * groups != cin || out[op->b] != batch || out[op->f] != co)
    shape_error(a.m, a.in, dims_str(w), "is the kernel of input " + dims_str(x) + " and result " + dims_str(out) +
                                            " (feature_group_count " + std::to_string(groups) +
                                            "); expected kernel input features x groups = the input's features, the "
                                            "result's batch the input's and its features the kernel's outputs");
  int64_t s_in = 1, s_out = 1, ks = 1;
  std::vector<int> lperm{lp->b}, rperm, operm;
  Dims out_dims{batch};
  for (size_t k = 0; k < lp->spatial.size(); ++k) {
    s_in *= x[lp->spatial[k]], s_out *= out[op->spatial[k]], ks *= w[rp->spatial[k]];
    lperm.push_back(lp->spatial[k]), rperm.push_back(rp->spatial[k]);
    out_dims.push_back(out[op->spatial[k]]);
  }
  lperm.push_back(lp->f), rperm.push_back(rp->b), rperm.push_back(rp->f);
  out_dims.push_back(co);
  const std::string& name = a.in.name;
  auto ordered = [&](int n, const std::vector<int>& perm) {
    return perm == iota_dims(perm.size()) ? n : g.transpose(n, perm);
  };
  int lhs = g.reshape(ordered(a.ops[0], lperm), {batch, s_in, cin});
  if (groups > 1) lhs = g.slice(lhs, 2, 0, ci, name + ".group");
  lhs = fit(g, lhs, {batch, s_out, ci});
  lhs = g.reshape(lhs, {batch * s_out, ci});
  lhs = g.broadcast(lhs, {batch * s_out, ks, ci}, {0, 2});
  // The im2col matrix: a view of the broadcast, read in the dot's blocks (its source stays whole in
  // VMEM when it fits, else each block reads its share: compiler/lower/dot_tiling.cc).
  lhs = g.reshape(lhs, {batch * s_out, ks * ci});
  const int rhs = g.reshape(ordered(a.ops[1], rperm), {ks * ci, co});
  const int d = g.dot(lhs, rhs, models::DotDims{{}, {}, {1}, {0}}, models::DotPrecision::kDefault, name);
  // The output in [b, spatial..., f] order, then the result's label order.
  std::vector<int> back(out.size());
  back[op->b] = 0;
  for (size_t k = 0; k < op->spatial.size(); ++k) back[op->spatial[k]] = int(k + 1);
  back[op->f] = int(out.size() - 1);
  a.approx = "as a dot of its flops over an im2col view of the input read once at the output's positions";
  return ordered(g.reshape(d, out_dims), back);
}

std::optional<int> build_window(const OpArgs& a) {
  Graph& g = a.g;
  const Dims& out = a.in.shape.dims;
  const std::optional<std::vector<WindowDim>> win = window_attr(a.m, a.in);
  if (!win || a.ops.size() < 2) return std::nullopt;
  const Dims& x = shape_of(a, 0);
  if (win->size() != x.size())
    shape_error(a.m, a.in, std::to_string(win->size()) + " window dimensions",
                "do not fit an operand of rank " + std::to_string(x.size()) + "; expected one per dimension");
  int64_t w = 1;
  for (const WindowDim& d : *win) w *= std::max<int64_t>(d.size, 1);
  if (a.in.opcode == "reduce-window" && a.ops.size() == 2) {
    if (out.size() != x.size())
      shape_error(a.m, a.in, dims_str(out), "is the result of a reduce-window over " + dims_str(x) +
                                                "; expected the operand's rank");
    const auto comb = combiner(a.m, a.in);
    if (!comb) return std::nullopt;
    a.approx = "as " + std::to_string(w) + " VPU ops per output element (the window) over the operand read once";
    return passes(g, fit(g, a.ops[0], out), w, comb->first);
  }
  if (a.in.opcode == "select-and-scatter" && a.ops.size() == 3) {
    const Dims& src = shape_of(a, 1);
    if (out != x || src.size() != x.size())
      shape_error(a.m, a.in, dims_str(src), "is the source of a select-and-scatter over " + dims_str(x) +
                                                "; expected a source of the operand's rank and a result of its shape");
    a.approx = "as " + std::to_string(w) + " compares per source element (the window's select) and the source "
               "added into a result of the operand's shape";
    const int sel = passes(g, fit(g, a.ops[0], src), w, ReduceOp::kMax);
    return fit(g, g.ew(EwOp::kAdd, sel, a.ops[1], a.in.name + ".scatter"), out);
  }
  return std::nullopt;
}

int random_draw(Graph& g, const Dims& shape, DType dtype, const std::string& name) {
  return g.dropout_mask(g.full(0, shape, dtype), 0, name);
}

// A sorting network does log2(n)(log2(n)+1)/2 compare-exchange passes; the n log2 n compares of a
// merge sort are log2(n) VPU ops per element, the lower bound taken here.
int sort_cost(Graph& g, int x, int dim, const std::string& name) {
  const int64_t n = g.node(x).shape.at(size_t(dim));
  const int64_t lg = n <= 1 ? 1 : int64_t(std::bit_width(uint64_t(n - 1)));
  const int r = passes(g, x, lg, ReduceOp::kMax);
  if (r == x) return g.ew(EwOp::kNeg, x, -1, name);
  g.set_name(r, name);
  return r;
}

int map_cost(Graph& g, const std::vector<int>& ops, int64_t body_ops, const std::string& name) {
  int x = ops.at(0);
  for (int64_t k = 0; k < std::max<int64_t>(body_ops, 1); ++k)
    x = ops.size() > 1 ? g.ew(EwOp::kMax, x, ops[size_t(k + 1) % ops.size()], name) : g.ew(EwOp::kNeg, x, -1, name);
  return x;
}

int touch(Graph& g, const std::vector<int>& ops, const Dims& shape, DType dtype, const std::string& name) {
  std::vector<int> terms;
  for (int o : ops) {
    const Node& x = g.node(o);
    if (x.kind == OpKind::kConstant) continue;  // a scalar literal: nothing read
    if (x.shape == shape) {
      terms.push_back(o);
    } else if (models::num_elements(x.shape) == models::num_elements(shape)) {
      terms.push_back(g.reshape(o, shape));
    } else {
      const int sum = g.reduce(g.reshape(o, {models::num_elements(x.shape)}), 0, ReduceOp::kSum);
      terms.push_back(g.broadcast(sum, shape, {}));
    }
  }
  if (terms.empty()) terms.push_back(g.full(0, shape, dtype));
  int r = g.ew(EwOp::kNeg, terms[0], -1, name);
  for (size_t i = 1; i < terms.size(); ++i) r = g.ew(EwOp::kAdd, r, terms[i], name);
  if (g.node(r).dtype != dtype) r = g.convert(r, dtype);
  g.set_materialize(r);  // the op's own kernel writes its result
  return r;
}

}  // namespace tpusim::hlo::import_ops
