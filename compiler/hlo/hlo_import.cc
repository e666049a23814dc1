#include "compiler/hlo/hlo_import.h"

#include <algorithm>
#include <cctype>
#include <exception>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <string_view>

#include "compiler/hlo/hlo_attrs.h"
#include "compiler/hlo/hlo_error.h"
#include "compiler/hlo/hlo_import_collectives.h"

namespace tpusim::hlo {
namespace {

using models::DotPrecision;
using models::DType;
using models::EwOp;
using models::Graph;
using models::ReduceOp;

// Products of text-given sizes can exceed 64 bits (a fuzzed 2^48-element dot): saturate.
uint64_t sat(unsigned __int128 x) {
  return x > std::numeric_limits<uint64_t>::max() ? std::numeric_limits<uint64_t>::max() : uint64_t(x);
}
uint64_t sat_add(uint64_t a, uint64_t b) { return sat((unsigned __int128)a + b); }

uint64_t shape_bytes(const Shape& s) {
  if (s.is_tuple()) {
    uint64_t b = 0;
    for (const Shape& e : s.tuple) b = sat_add(b, shape_bytes(e));
    return b;
  }
  // Packed sub-byte types round up to whole bytes per array.
  return sat(((unsigned __int128)uint64_t(std::max<int64_t>(s.elements(), 0)) * element_type_bits(s.type) + 7) / 8);
}

const Shape& operand_shape(const Computation& c, const Instruction& in, size_t i) {
  if (i < in.operand_shapes.size() && in.operand_shapes[i]) return *in.operand_shapes[i];
  return c.instructions.at(in.operands.at(i)).shape;
}

// The element types the graph holds (models::DType). f32 and bf16 are exact; s32, u32, s64 and u64
// are held as s32 and pred as s32 too (pred is 1 byte in HBM, s32 4: masks are overstated 4x, 8-byte
// integers understated 2x; both are index/mask tensors whose traffic is small next to activations).
// Other types are approximated by the closest of the same kind and listed as unmodelled.
struct TypeMap {
  DType dtype = DType::kF32;
  bool exact = true;
};
std::optional<TypeMap> map_type(ElementType t) {
  switch (t) {
    case ElementType::kF32: return TypeMap{DType::kF32, true};
    case ElementType::kBF16: return TypeMap{DType::kBF16, true};
    case ElementType::kPred: case ElementType::kS32: case ElementType::kU32: case ElementType::kS64:
    case ElementType::kU64:
      return TypeMap{DType::kS32, true};
    case ElementType::kF64: return TypeMap{DType::kF32, false};
    case ElementType::kC64: case ElementType::kC128: case ElementType::kToken: case ElementType::kOpaque:
    case ElementType::kTuple:
      return std::nullopt;
    case ElementType::kS2: case ElementType::kS4: case ElementType::kS8: case ElementType::kS16:
    case ElementType::kU2: case ElementType::kU4: case ElementType::kU8: case ElementType::kU16:
      return TypeMap{DType::kS32, false};
    default: return TypeMap{DType::kBF16, false};  // f16 and the f8/f4 types: 2 bytes or fewer
  }
}

// Element-wise opcodes: the graph op, its arity, and, when it is not exact, why the stand-in costs the
// same (docs/hlo.md lists the table). Compare and select are handled apart.
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

// Why an opcode with no graph counterpart is not modelled (the default names the opcode).
std::string no_op_reason(const Module& m, const Instruction& in) {
  const std::string& op = in.opcode;
  static const std::set<std::string_view> collectives = {
      "all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute", "all-reduce-start",
      "all-reduce-done", "all-gather-start", "all-gather-done", "collective-permute-start",
      "collective-permute-done", "collective-broadcast"};
  std::string why;
  if (op == "while" || op == "conditional")
    why = "control flow is not simulated yet";
  else if (collectives.count(op))
    why = "this collective is not modelled (all-reduce, all-gather, reduce-scatter, all-to-all and collective-permute are)";
  else if (op == "convolution")
    why = "the graph has no convolution op (its flops are in convolution_flops)";
  else if (op == "custom-call")
    why = "custom-call target '" + string_attr(m, in, "custom_call_target").value_or("") + "' is not known";
  else
    why = "the graph has no op for '" + op + "'";
  return why + "; an input of its result shape stands in";
}

// Why build() declined an opcode it knows: the instruction's form is outside what the graph holds.
std::string form_reason(const std::string& op) {
  std::string why = "this form of " + op + " is not modelled";
  if (op == "reduce") why += " (one operand and a to_apply of add, maximum or minimum are)";
  if (op == "slice") why += " (strides of 1 are)";
  if (op == "gather") why += " (whole rows of a table picked by ids, an embedding lookup, are)";
  if (op == "dot") why += " (dimension numbers within the operands' ranks are)";
  return why + "; an input of its result shape stands in";
}

// The opcodes build() maps (besides the element-wise table).
bool is_built(const std::string& op) {
  static const std::set<std::string_view> ops = {
      "constant", "power", "compare", "select", "clamp", "convert", "copy", "bitcast-convert", "broadcast",
      "reshape", "bitcast", "transpose", "dot", "reduce", "iota", "slice", "concatenate", "gather"};
  return ops.count(op) || ew_table().count(op);
}

// A value of the HLO program: a graph node, a tuple of values, or nothing (token, zero-size).
// Tuple elements are shared, not copied: `t2 = tuple(t1, t1)` nested would double per level.
struct Value {
  int node = -1;
  bool tuple = false;
  std::shared_ptr<std::vector<Value>> elems;
  size_t size() const { return elems ? elems->size() : 0; }
  const Value& at(size_t i) const { return elems->at(i); }
};
Value make_tuple() { return Value{-1, true, std::make_shared<std::vector<Value>>()}; }

constexpr int kMaxInlineDepth = 64;

class Importer {
 public:
  Importer(const Module& m, Graph& g, HloStats& st, size_t max_imported, int64_t replicas)
      : m_(m), g_(g), st_(st), max_imported_(max_imported), replicas_(replicas) {
    for (const InputOutputAlias& a : m.input_output_alias) aliased_.insert({a.parameter, a.parameter_index});
  }

  void run() {
    const Value root = import_computation(m_.entry, nullptr, 0);
    std::set<int> marked;
    mark_outputs(root, marked);
  }

 private:
  void mark_outputs(const Value& v, std::set<int>& marked) {
    if (v.tuple) {
      if (!v.elems || !seen_tuples_.insert(v.elems.get()).second) return;  // each shared tuple once
      for (const Value& e : *v.elems) mark_outputs(e, marked);
    } else if (v.node >= 0 && g_.node(v.node).kind != models::OpKind::kConstant && marked.insert(v.node).second) {
      g_.mark_output(v.node);
    }
  }

  void note(const Instruction& in, std::string reason) {
    st_.unmodelled.push_back({in.name, in.opcode, in.line, std::move(reason)});
  }

  // Graph inputs of `s` (a tuple: one per leaf). `path` is the tuple index for the alias lookup;
  // `entry_param` the ENTRY parameter number (-1: a stand-in, never aliased).
  Value inputs_of(const Shape& s, const std::string& name, int64_t entry_param, std::vector<int64_t>& path) {
    Value v;
    if (s.is_tuple()) {
      v = make_tuple();
      for (size_t i = 0; i < s.tuple.size(); ++i) {
        path.push_back(int64_t(i));
        v.elems->push_back(inputs_of(s.tuple[i], name + "." + std::to_string(i), entry_param, path));
        path.pop_back();
      }
      return v;
    }
    const std::optional<TypeMap> t = map_type(s.type);
    if (!t || !array_ok(s)) return v;
    // Parameters the module aliases to an output are updated in place every step: the persistent
    // weights and optimizer state of a training step (held as kTrainable).
    const bool persistent = entry_param >= 0 && aliased_.count({entry_param, path});
    v.node = g_.parameter(name, s.dims, t->dtype, persistent ? models::ParamRole::kTrainable : models::ParamRole::kInput);
    return v;
  }

  static bool array_ok(const Shape& s) {
    for (int64_t d : s.dims)
      if (d <= 0) return false;
    return true;
  }

  Value stand_in(const Instruction& in, std::string reason) {
    note(in, std::move(reason));
    std::vector<int64_t> path;
    return inputs_of(in.shape, in.name, -1, path);
  }

  Value import_computation(int ci, const std::vector<Value>* args, int depth) {
    const Computation& c = m_.computations.at(ci);
    if (c.root < 0) return {};
    // Only what the root reaches (HLO is printed in post-order: operands come first); once per
    // computation however often it is inlined.
    std::vector<char>& live = live_[ci];
    if (live.empty()) {
      live.assign(c.instructions.size(), 0);
      live[c.root] = 1;
      for (size_t i = c.instructions.size(); i-- > 0;)
        if (live[i])
          for (int o : c.instructions[i].operands) live.at(o) = 1;
    }
    std::vector<Value> vals(c.instructions.size());
    for (size_t i = 0; i < c.instructions.size(); ++i)
      if (live[i]) ++imported_, vals[i] = import_instruction(c, c.instructions[i], vals, args, depth);
    return vals[c.root];
  }

  Value import_instruction(const Computation& c, const Instruction& in, const std::vector<Value>& vals,
                           const std::vector<Value>* args, int depth) {
    if (in.opcode == "parameter") {
      const int64_t n = in.parameter_number.value_or(-1);
      if (args) {
        if (n >= 0 && n < int64_t(args->size())) return (*args)[n];
        return stand_in(in, "parameter number outside the call's operands; an input stands in");
      }
      std::vector<int64_t> path;
      return inputs_of(in.shape, in.name, n, path);
    }
    if (in.opcode == "tuple") {
      Value v = make_tuple();
      for (int o : in.operands) v.elems->push_back(vals[o]);
      return v;
    }
    if (in.opcode == "get-tuple-element") {
      const std::optional<int64_t> idx = int_attr(m_, in, "index");
      if (in.operands.size() == 1 && idx && vals[in.operands[0]].tuple && *idx >= 0 &&
          *idx < int64_t(vals[in.operands[0]].size()))
        return vals[in.operands[0]].at(size_t(*idx));
      return stand_in(in, "get-tuple-element of a value that is not such a tuple; an input stands in");
    }
    // Ordering and identity ops: no data, no cost.
    if (in.opcode == "after-all" || in.opcode == "partition-id" || in.opcode == "replica-id") return {};
    if ((in.opcode == "opt-barrier" || in.opcode == "add-dependency" || in.opcode == "domain") && !in.operands.empty())
      return vals[in.operands[0]];
    if (in.opcode == "call" || in.opcode == "fusion") {
      if (in.called.empty()) return stand_in(in, "a call without a computation; an input stands in");
      if (depth >= kMaxInlineDepth || imported_ >= max_imported_)
        return stand_in(in, "inlining limit reached (call depth 64 or " + std::to_string(max_imported_) +
                                " instructions imported); an input stands in");
      std::vector<Value> call_args;
      for (int o : in.operands) call_args.push_back(vals[o]);
      Value v = import_computation(in.called[0], &call_args, depth + 1);
      if (!matches(v, in.shape))
        return stand_in(in, "the called computation's result does not have the declared shape " +
                                in.shape.to_string() + "; an input stands in");
      return v;
    }
    // Sharding annotations: on one core the value itself.
    if (in.opcode == "custom-call" && string_attr(m_, in, "custom_call_target").value_or("") == "Sharding" &&
        in.operands.size() == 1 && matches(vals[in.operands[0]], in.shape))
      return vals[in.operands[0]];
    if (is_collective_opcode(in.opcode)) return collective(in, vals);
    if (!is_built(in.opcode)) return stand_in(in, no_op_reason(m_, in));

    const bool tuple_result = in.shape.is_tuple();
    const std::optional<TypeMap> t = tuple_result ? std::nullopt : map_type(in.shape.type);
    if (!tuple_result && (!t || !array_ok(in.shape))) {
      note(in, "shape " + in.shape.to_string() + " has no graph value (element type, zero or unbounded size); its "
               "consumers stand in");
      return {};
    }
    if (t && !t->exact)
      note(in, "element type " + std::string(element_type_name(in.shape.type)) + " held as " +
                   models::dtype_name(t->dtype));
    std::vector<int> ops;  // operand nodes; -1 when the operand has no array node
    for (int o : in.operands) ops.push_back(vals[o].tuple ? -1 : vals[o].node);

    std::string approx;  // set when the op is a stand-in of the same cost class
    std::optional<int> node;
    const int first_new = int(g_.nodes().size());
    try {
      node = build(in, ops, t ? t->dtype : DType::kF32, approx);
    } catch (const HloError&) {
      throw;  // malformed attribute text: the parser's error, with line and column
    } catch (const std::exception& e) {
      return stand_in(in, std::string("operands do not fit (") + e.what() + "); an input stands in");
    }
    if (!node) return stand_in(in, form_reason(in.opcode));
    if (*node < 0) return stand_in(in, "an operand has no graph value; an input stands in");
    if (g_.node(*node).shape != in.shape.dims)
      return stand_in(in, "the imported op's shape differs from the declared " + in.shape.to_string() +
                              "; an input stands in");
    if (!approx.empty()) note(in, approx);
    // A node built for this instruction (not an operand passed through) takes its name, as do the
    // kernels the compiler makes of it.
    if (*node >= first_new && g_.node(*node).kind != models::OpKind::kConstant) g_.set_name(*node, in.name);
    return Value{*node, false, nullptr};
  }

  // Collectives (hlo_import_collectives.cc). A -done passes on its -start's result: the value, or
  // element 1 of (operands, results).
  Value collective(const Instruction& in, const std::vector<Value>& vals) {
    if (is_collective_done(in.opcode)) {
      if (in.operands.size() != 1) return stand_in(in, in.opcode + " without its -start operand; an input stands in");
      const Value& s = vals[in.operands[0]];
      return s.tuple && s.size() >= 2 ? s.at(1) : s;
    }
    std::vector<int> ops;
    for (int o : in.operands) ops.push_back(vals[o].tuple ? -1 : vals[o].node);
    const ImportedCollective r = import_collective(m_, in, ops, replicas_, g_);
    if (!r.not_modelled.empty()) return stand_in(in, r.not_modelled + "; an input stands in");
    for (const std::string& n : r.notes) note(in, n);
    Value v{r.results.front(), false, nullptr};
    if (r.tuple_result) {
      v = make_tuple();
      for (int x : r.results) v.elems->push_back(Value{x, false, nullptr});
    }
    if (!r.start_tuple) return v;
    Value operands = make_tuple();
    for (int o : in.operands) operands.elems->push_back(vals[o]);
    Value t = make_tuple();
    t.elems->push_back(operands.size() == 1 ? operands.at(0) : operands);
    t.elems->push_back(v);
    return t;
  }

  // Whether `v` holds nodes of the dimensions of `s` (leaves without a node match any shape).
  bool matches(const Value& v, const Shape& s) const {
    if (v.tuple != s.is_tuple()) return false;
    if (v.tuple) {
      if (v.size() != s.tuple.size()) return false;
      for (size_t i = 0; i < v.size(); ++i)
        if (!matches(v.at(i), s.tuple[i])) return false;
      return true;
    }
    return v.node < 0 || g_.node(v.node).shape == s.dims;
  }

  static int64_t rank_of(const Graph& g, int n) { return int64_t(g.node(n).shape.size()); }

  // The graph op of `in`: a node id, -1 when an operand has no node, nullopt when no op fits.
  std::optional<int> build(const Instruction& in, const std::vector<int>& ops, DType dtype, std::string& approx) {
    const std::string& op = in.opcode;
    for (int o : ops)
      if (o < 0) return -1;
    const std::string name = in.name;
    if (op == "constant") {
      if (in.literal && in.literal->scalar && in.shape.dims.empty()) return g_.constant(*in.literal->scalar, dtype);
      // An array constant's values live in HBM like an input's.
      return g_.parameter(name, in.shape.dims, dtype, models::ParamRole::kInput);
    }
    if (auto it = ew_table().find(op); it != ew_table().end()) {
      const EwMap& e = it->second;
      if (int(ops.size()) != e.arity) return std::nullopt;
      if (e.approx) approx = e.approx;
      return g_.ew(e.op, ops[0], e.arity == 2 ? ops[1] : -1, name);
    }
    if (op == "power" && ops.size() == 2) {
      approx = "as exp(y * log x), XLA's own expansion on the VPU";
      return g_.ew(EwOp::kExp, g_.ew(EwOp::kMul, g_.ew(EwOp::kLog, ops[0], -1, name + ".log"), ops[1], name + ".mul"), -1,
                   name);
    }
    if (op == "compare" && ops.size() == 2) {
      const std::string dir = direction_attr(m_, in).value_or("");
      if (dir == "EQ") return g_.ew(EwOp::kCmpEq, ops[0], ops[1], name);
      if (dir == "GT") return g_.ew(EwOp::kCmpGt, ops[0], ops[1], name);
      if (dir == "LT") return g_.ew(EwOp::kCmpGt, ops[1], ops[0], name);
      approx = "compare " + dir + " as " + (dir == "NE" ? "EQ" : "GT") + " (one VPU compare)";
      return g_.ew(dir == "NE" ? EwOp::kCmpEq : EwOp::kCmpGt, ops[0], ops[1], name);
    }
    if (op == "select" && ops.size() == 3) {
      approx = "as maximum of the two branches (one VPU op; the predicate's read is not counted)";
      return g_.ew(EwOp::kMax, ops[1], ops[2], name);
    }
    if (op == "clamp" && ops.size() == 3) {
      approx = "as two maximum ops (one VPU ALU op each)";
      const models::Dims& x = g_.node(ops[1]).shape;
      auto fit = [&](int b) { return g_.node(b).shape.empty() && !x.empty() ? g_.broadcast(b, x, {}) : b; };
      return g_.ew(EwOp::kMax, g_.ew(EwOp::kMax, ops[1], fit(ops[0]), name + ".lo"), fit(ops[2]), name);
    }
    if (op == "convert" || op == "copy" || op == "bitcast-convert") {
      if (ops.size() != 1) return std::nullopt;
      if (op == "copy") approx = "as a view: a layout change is the compiler's own (its layout pass)";
      if (op == "bitcast-convert") approx = "as a view: the bits are reinterpreted, nothing moves";
      if (op != "convert" || g_.node(ops[0]).dtype == dtype) return ops[0];
      return g_.convert(ops[0], dtype);
    }
    if (op == "broadcast" && ops.size() == 1) {
      const std::vector<int64_t> d = int_list_attr(m_, in, "dimensions").value_or(std::vector<int64_t>{});
      return g_.broadcast(ops[0], in.shape.dims, to_int(d));
    }
    if ((op == "reshape" || op == "bitcast") && ops.size() == 1) return g_.reshape(ops[0], in.shape.dims);
    if (op == "transpose" && ops.size() == 1) {
      const std::vector<int> p = to_int(int_list_attr(m_, in, "dimensions").value_or(std::vector<int64_t>{}));
      if (!is_permutation(p, rank_of(g_, ops[0]))) return std::nullopt;
      return g_.transpose(ops[0], p);
    }
    if (op == "dot" && ops.size() == 2) {
      const DotDims d = dot_dims(m_, in);
      models::DotDims gd{to_int(d.lhs_batch), to_int(d.rhs_batch), to_int(d.lhs_contracting), to_int(d.rhs_contracting)};
      if (!dims_in_range(gd.lhs_batch, ops[0]) || !dims_in_range(gd.lhs_contract, ops[0]) ||
          !dims_in_range(gd.rhs_batch, ops[1]) || !dims_in_range(gd.rhs_contract, ops[1]))
        return std::nullopt;
      return g_.dot(ops[0], ops[1], std::move(gd), precision(in), name);
    }
    if (op == "reduce") return build_reduce(in, ops, approx);
    if (op == "iota" && ops.empty()) {
      const int64_t d = int_attr(m_, in, "iota_dimension").value_or(-1);
      return g_.iota(in.shape.dims, int(std::clamp<int64_t>(d, -1, 64)), dtype);
    }
    if (op == "slice" && ops.size() == 1) {
      const std::optional<std::vector<SliceDim>> s = slice_attr(m_, in);
      const models::Dims& x = g_.node(ops[0]).shape;
      if (!s || s->size() != x.size()) return std::nullopt;
      int cur = ops[0];
      for (size_t i = 0; i < s->size(); ++i) {
        const SliceDim& sd = (*s)[i];
        if (sd.stride != 1) return std::nullopt;
        if (sd.start != 0 || sd.limit != x[i]) cur = g_.slice(cur, int(i), sd.start, sd.limit, name);
      }
      return cur;
    }
    if (op == "concatenate" && !ops.empty()) {
      const std::vector<int64_t> d = int_list_attr(m_, in, "dimensions").value_or(std::vector<int64_t>{});
      if (d.size() != 1 || d[0] < 0 || d[0] >= rank_of(g_, ops[0])) return std::nullopt;
      return g_.concatenate(ops, int(d[0]), name);
    }
    if (op == "gather" && ops.size() == 2) return build_gather(in, ops);
    return std::nullopt;
  }

  static std::vector<int> to_int(const std::vector<int64_t>& v) {
    std::vector<int> r;
    for (int64_t x : v) r.push_back(int(std::clamp<int64_t>(x, -1, 1 << 20)));
    return r;
  }
  bool dims_in_range(const std::vector<int>& d, int n) const {
    for (int x : d)
      if (x < 0 || x >= rank_of(g_, n)) return false;
    return true;
  }
  static bool is_permutation(const std::vector<int>& p, int64_t rank) {
    if (int64_t(p.size()) != rank) return false;
    std::vector<char> seen(p.size(), 0);
    for (int x : p) {
      if (x < 0 || x >= rank || seen[x]) return false;
      seen[x] = 1;
    }
    return true;
  }

  // operand_precision={highest,highest}: the higher of the two (XLA runs the product at it).
  DotPrecision precision(const Instruction& in) const {
    const Attribute* a = in.attr("operand_precision");
    if (!a) return DotPrecision::kDefault;
    std::string v;
    for (char ch : a->value) v += char(std::tolower(static_cast<unsigned char>(ch)));
    if (v.find("highest") != std::string::npos) return DotPrecision::kHighest;
    if (v.find("high") != std::string::npos) return DotPrecision::kHigh;
    return DotPrecision::kDefault;
  }

  // reduce(x, init), dimensions={...}, to_apply=add|maximum (of its two parameters): one graph
  // reduce per dimension, highest first so the lower indices stay valid. The init value is taken
  // to be the op's identity (0, -inf), as every framework writes it.
  std::optional<int> build_reduce(const Instruction& in, const std::vector<int>& ops, std::string& approx) {
    if (ops.size() != 2 || in.called.empty()) return std::nullopt;
    const Computation& f = m_.computations.at(in.called[0]);
    const Instruction& r = f.root_instruction();
    if (r.operands.size() != 2 || f.instructions.at(r.operands[0]).opcode != "parameter" ||
        f.instructions.at(r.operands[1]).opcode != "parameter")
      return std::nullopt;
    ReduceOp rop;
    if (r.opcode == "add") {
      rop = ReduceOp::kSum;
    } else if (r.opcode == "maximum") {
      rop = ReduceOp::kMax;
    } else if (r.opcode == "minimum") {
      rop = ReduceOp::kMax;
      approx = "reduce-min as reduce-max (same VPU and cross-lane work)";
    } else {
      return std::nullopt;
    }
    std::vector<int64_t> dims = int_list_attr(m_, in, "dimensions").value_or(std::vector<int64_t>{});
    std::sort(dims.rbegin(), dims.rend());
    if (std::adjacent_find(dims.begin(), dims.end()) != dims.end()) return std::nullopt;
    int cur = ops[0];
    for (int64_t d : dims) {
      if (d < 0 || d >= rank_of(g_, cur)) return std::nullopt;
      cur = g_.reduce(cur, int(d), rop);
    }
    return cur;
  }

  // Embedding lookups: whole rows of a table [R, ...] picked by ids (offset_dims the trailing
  // dims, collapsed_slice_dims={0}, start_index_map={0}, slice_sizes={1, the rest of the table}).
  std::optional<int> build_gather(const Instruction& in, const std::vector<int>& ops) {
    const models::Dims& table = g_.node(ops[0]).shape;
    models::Dims ids = g_.node(ops[1]).shape;
    const auto list = [&](const char* n) { return int_list_attr(m_, in, n).value_or(std::vector<int64_t>{-1}); };
    const std::vector<int64_t> collapsed = list("collapsed_slice_dims"), start_map = list("start_index_map"),
                               sizes = list("slice_sizes"), offset = list("offset_dims");
    const int64_t ivd = int_attr(m_, in, "index_vector_dim").value_or(int64_t(ids.size()));
    if (table.empty() || collapsed != std::vector<int64_t>{0} || start_map != std::vector<int64_t>{0}) return std::nullopt;
    if (sizes.size() != table.size() || sizes[0] != 1 || !std::equal(sizes.begin() + 1, sizes.end(), table.begin() + 1))
      return std::nullopt;
    int id_node = ops[1];
    if (ivd != int64_t(ids.size())) {  // an explicit index vector of one component: the last dim
      if (ivd != int64_t(ids.size()) - 1 || ids.back() != 1) return std::nullopt;
      ids.pop_back();
      id_node = g_.reshape(ops[1], ids);
    }
    for (size_t i = 0; i < offset.size(); ++i)
      if (offset[i] != int64_t(ids.size() + i)) return std::nullopt;
    if (offset.size() != table.size() - 1) return std::nullopt;
    return g_.gather(ops[0], id_node, in.name);
  }

  const Module& m_;
  Graph& g_;
  HloStats& st_;
  std::set<std::pair<int64_t, std::vector<int64_t>>> aliased_;
  std::set<const void*> seen_tuples_;
  size_t max_imported_;
  int64_t replicas_;  // the ids of replica_groups and source_target_pairs: 0..replicas_-1
  std::map<int, std::vector<char>> live_;  // per computation: the instructions its root reaches
  size_t imported_ = 0;  // instructions imported, inlined copies included
};

uint64_t dot_flops_of(const Module& m, const Computation& c, const Instruction& in) {
  if (in.operands.empty()) return 0;
  const Shape& lhs = operand_shape(c, in, 0);
  unsigned __int128 k = 1;
  for (int64_t d : dot_dims(m, in).lhs_contracting) {
    if (d < 0 || d >= int64_t(lhs.dims.size())) return 0;
    k = std::min<unsigned __int128>(k * uint64_t(std::max<int64_t>(lhs.dims[d], 0)), std::numeric_limits<uint64_t>::max());
  }
  return sat(2 * (unsigned __int128)uint64_t(std::max<int64_t>(in.shape.elements(), 0)) * k);
}

uint64_t convolution_flops_of(const Module& m, const Computation& c, const Instruction& in) {
  const std::optional<DimLabels> labels = dim_labels_attr(m, in);
  if (!labels || in.operands.size() < 2 || in.shape.is_tuple()) return 0;
  const Shape& lhs = operand_shape(c, in, 0);
  const Shape& rhs = operand_shape(c, in, 1);
  if (labels->lhs.size() != lhs.dims.size() || labels->rhs.size() != rhs.dims.size()) return 0;
  unsigned __int128 spatial = 1;
  for (size_t i = 0; i < rhs.dims.size(); ++i)
    if (std::isdigit(static_cast<unsigned char>(labels->rhs[i])))
      spatial = std::min<unsigned __int128>(spatial * uint64_t(std::max<int64_t>(rhs.dims[i], 0)),
                                            std::numeric_limits<uint64_t>::max());
  const size_t f = labels->lhs.find('f');
  if (f == std::string::npos) return 0;
  const int64_t groups = std::max<int64_t>(int_attr(m, in, "feature_group_count").value_or(1), 1);
  const uint64_t in_features = uint64_t(std::max<int64_t>(lhs.dims[f], 0)) / uint64_t(groups);
  return sat(std::min<unsigned __int128>(2 * (unsigned __int128)uint64_t(std::max<int64_t>(in.shape.elements(), 0)) * spatial,
                                         std::numeric_limits<uint64_t>::max()) *
             in_features);
}

}  // namespace

HloStats hlo_statistics(const Module& m) {
  HloStats st;
  for (const Computation& c : m.computations)
    for (const Instruction& in : c.instructions) {
      ++st.instructions[in.opcode];
      if (in.opcode == "dot") st.dot_flops = sat_add(st.dot_flops, dot_flops_of(m, c, in));
      if (in.opcode == "convolution") st.convolution_flops = sat_add(st.convolution_flops, convolution_flops_of(m, c, in));
    }
  const Computation& e = m.entry_computation();
  for (const Instruction& in : e.instructions)
    if (in.opcode == "parameter") st.parameter_bytes = sat_add(st.parameter_bytes, shape_bytes(in.shape));
  st.output_bytes = shape_bytes(e.root_instruction().shape);
  return st;
}

HloImport import_hlo(const Module& m, const ImportOptions& options) {
  HloImport r;
  r.stats = hlo_statistics(m);
  // Clamped to the graph's limit (a larger count fails every collective's check: stand-ins).
  const auto clamp = [](int64_t x) { return std::clamp<int64_t>(x, 1, models::kMaxReplicas + 1); };
  const int64_t replicas = clamp(options.replicas.value_or(clamp(m.replica_count) * clamp(m.num_partitions)));
  Importer(m, r.graph, r.stats, options.max_instructions, replicas).run();
  return r;
}

}  // namespace tpusim::hlo
