#include "compiler/hlo/hlo_import.h"

#include <algorithm>
#include <cctype>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <string_view>

#include "compiler/hlo/hlo_attrs.h"
#include "compiler/hlo/hlo_error.h"
#include "compiler/hlo/hlo_import_attention.h"
#include "compiler/hlo/hlo_import_collectives.h"
#include "compiler/hlo/hlo_import_flat.h"
#include "compiler/hlo/hlo_import_ops.h"
#include "compiler/hlo/hlo_opcodes.h"
#include "compiler/hlo/hlo_import_stats.h"
#include "compiler/hlo/hlo_loop_bounds.h"
#include "compiler/hlo/hlo_validate.h"
#include "compiler/plan/fusion.h"

namespace tpusim::hlo {
namespace {

using models::DotPrecision;
using models::DType;
using models::EwOp;
using models::Graph;
using models::ReduceOp;

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
  Importer(const Module& m, Graph& g, HloStats& st, const ImportOptions& options, int64_t replicas)
      : m_(m), g_(g), st_(st), options_(options), max_imported_(options.max_instructions), replicas_(replicas) {
    for (const InputOutputAlias& a : m.input_output_alias) aliased_.insert({a.parameter, a.parameter_index});
    for (const Computation& c : m.computations)
      for (const Instruction& in : c.instructions) grouped_ = grouped_ || in.opcode == "fusion";
  }
  // The instruction of each fusion group (models::Node::group), by group id.
  std::vector<const Instruction*> group_instructions;

  void run() {
    const Value root = import_computation(m_.entry, nullptr, 0);
    std::set<int> marked;
    mark_outputs(root, marked);
    for (const InputOutputAlias& a : m_.input_output_alias) {
      const Value* out = &root;
      for (int64_t i : a.output_index) out = out->tuple && i >= 0 && size_t(i) < out->size() ? &out->at(size_t(i)) : nullptr;
      const auto p = param_node_.find({a.parameter, a.parameter_index});
      if (out && !out->tuple && out->node >= 0 && p != param_node_.end() && out->node != p->second &&
          g_.node(out->node).shape == g_.node(p->second).shape)
        donated[out->node] = p->second;
    }
  }
  std::map<int, int> donated;  // output node -> parameter node (input_output_alias)

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
    if (entry_param >= 0) param_node_[{entry_param, path}] = v.node;
    return v;
  }

  static bool array_ok(const Shape& s) {
    unsigned __int128 n = 1;
    for (int64_t d : s.dims) {
      if (d <= 0) return false;
      n *= uint64_t(d);
      if (n > uint64_t(models::kMaxTensorElements)) return false;  // beyond any chip's HBM
    }
    return true;
  }

  Value stand_in(const Instruction& in, std::string reason) {
    note(in, std::move(reason));
    std::vector<int64_t> path;
    return inputs_of(in.shape, in.name, -1, path);
  }

  [[noreturn]] void error(const Instruction& in, std::string value, std::string rule) const {
    import_ops::shape_error(m_, in, std::move(value), std::move(rule));
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
    auto fp = flat_.find(ci);
    if (fp == flat_.end()) fp = flat_.emplace(ci, find_flat_patterns(m_, c)).first;
    std::vector<Value> vals(c.instructions.size());
    for (size_t i = 0; i < c.instructions.size(); ++i) {
      if (!live[i]) continue;
      ++imported_;
      const int first = int(g_.nodes().size());
      try {
        const auto u = fp->second.uses.find(int(i));
        vals[i] = u != fp->second.uses.end() ? import_flat(c, fp->second, int(i), u->second, vals)
                                             : import_instruction(c, c.instructions[i], vals, args, depth);
      } catch (const HloError&) {
        throw;
      } catch (const std::exception& e) {
        // A graph builder refused what an op made of its operands (models/graph.h checks shapes):
        // the instruction's shapes do not fit together.
        error(c.instructions[i], c.instructions[i].opcode,
              std::string("has operands that do not fit (") + e.what() + "); expected consistent shapes");
      }
      if (grouped_ && in_fusion_ == 0) group_nodes(c.instructions[i], first);
    }
    return vals[c.root];
  }

  // The called computation of `in` named by attribute `attr` (-1 when absent).
  int called(const Instruction& in, std::string_view attr) const {
    const int k = called_slot(in, attr);
    return k < 0 ? -1 : in.called[size_t(k)];
  }

  bool inline_limit(int depth) const { return depth >= kMaxInlineDepth || imported_ >= max_imported_; }
  std::string limit_reason() const {
    return "inlining limit reached (call depth 64 or " + std::to_string(max_imported_) + " instructions imported)";
  }

  // An after-optimizations module (it has `fusion` instructions) keeps XLA's kernels: the nodes of
  // each fusion, and of each other instruction outside one that computes (not a view, a parameter or
  // a constant), are a group (models::Node::group), which the compiler makes one kernel.
  void group_nodes(const Instruction& in, int first) {
    if (in.opcode == "call" || in.opcode == "while" || in.opcode == "conditional") return;  // grouped inside
    std::vector<int> ns;
    for (int x = first; x < int(g_.nodes().size()); ++x) {
      const models::OpKind k = g_.node(x).kind;
      if (k == models::OpKind::kParameter || k == models::OpKind::kConstant || g_.node(x).group >= 0) continue;
      if (k == models::OpKind::kReshape && in.opcode != "fusion") continue;  // an unfused bitcast: a view
      ns.push_back(x);
    }
    if (ns.empty()) return;
    const int grp = g_.add_group(in.name);
    group_instructions.push_back(&in);
    for (int x : ns) g_.set_group(x, grp);
  }

  // The array leaves of a value, in order.
  static void leaves(const Value& v, std::vector<int>& out, int depth = 0) {
    if (depth > 64) return;
    if (!v.tuple) {
      if (v.node >= 0) out.push_back(v.node);
      return;
    }
    for (size_t i = 0; i < v.size(); ++i) leaves(v.at(i), out, depth + 1);
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
      if (in.operands.size() != 1 || !idx) error(in, in.opcode, "has no single operand and index; expected get-tuple-element(t), index=N");
      const Shape& ts = operand_shape(c, in, 0);
      if (!ts.is_tuple() || *idx < 0 || *idx >= int64_t(ts.tuple.size()))
        error(in, "index=" + std::to_string(*idx),
              "is outside operand '" + in.operand_names[0] + "' of shape " + ts.to_string() + "; expected an index below " +
                  std::to_string(ts.is_tuple() ? ts.tuple.size() : 0) + " of a tuple");
      if (!ts.tuple[size_t(*idx)].same_type_and_dims(in.shape))
        error(in, in.shape.to_string(), "is not element " + std::to_string(*idx) + " of " + ts.to_string() +
                                            "; expected the element's shape");
      const Value& t = vals[in.operands[0]];
      if (t.tuple && *idx < int64_t(t.size())) return t.at(size_t(*idx));
      return stand_in(in, "the tuple has no graph value; an input stands in");
    }
    // Ordering and identity ops: no data, no cost.
    if (in.opcode == "after-all" || in.opcode == "partition-id" || in.opcode == "replica-id") return {};
    if ((in.opcode == "add-dependency" || in.opcode == "domain") && !in.operands.empty()) return vals[in.operands[0]];
    // An optimization barrier: nothing moves across it, so its values are materialized in HBM (the
    // export writes one after each value tpusim materializes; rematerialization pins values so).
    if (in.opcode == "opt-barrier" && !in.operands.empty()) {
      std::vector<int> ls;
      leaves(vals[in.operands[0]], ls);
      for (int n : ls)
        if (g_.node(n).kind != models::OpKind::kParameter && g_.node(n).kind != models::OpKind::kConstant) g_.set_materialize(n);
      return vals[in.operands[0]];
    }
    if (in.opcode == "call" || in.opcode == "fusion") {
      if (in.called.empty()) return stand_in(in, "a call without a computation; an input stands in");
      if (inline_limit(depth)) return stand_in(in, limit_reason() + "; an input stands in");
      std::vector<Value> call_args;
      for (int o : in.operands) call_args.push_back(vals[o]);
      in_fusion_ += in.opcode == "fusion";
      Value v = import_computation(in.called[0], &call_args, depth + 1);
      in_fusion_ -= in.opcode == "fusion";
      if (!matches(v, in.shape))
        return stand_in(in, "the called computation's result does not have the declared shape " +
                                in.shape.to_string() + "; an input stands in");
      return v;
    }
    if (is_collective_opcode(in.opcode)) return collective(in, vals);
    if (in.opcode == "while") return import_while(c, in, vals, depth);
    if (in.opcode == "conditional") return import_conditional(in, vals, depth);
    if (in.opcode == "custom-call") {
      const std::string target = string_attr(m_, in, "custom_call_target").value_or("");
      // Sharding annotations: on one core the value itself.
      if (is_sharding_marker(target) && in.operands.size() == 1 && matches(vals[in.operands[0]], in.shape))
        return vals[in.operands[0]];
      if (target == "tpu_custom_call")
        if (std::optional<Value> v = import_attention(in, vals)) return *v;
      return import_custom_call(in, vals, target);
    }
    if (in.opcode == "rng-bit-generator" || in.opcode == "sort" || in.opcode == "map") return import_multi(c, in, vals);
    if (!is_built(in.opcode)) return stand_in(in, no_op_reason(m_, in));

    const bool tuple_result = in.shape.is_tuple();
    const std::optional<TypeMap> t = tuple_result ? std::nullopt : map_type(in.shape.type);
    if (!tuple_result && (!t || !array_ok(in.shape))) {
      note(in, "shape " + in.shape.to_string() + " has no graph value (element type, zero, unbounded or over 2^40 "
               "elements); its consumers stand in");
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
      throw;  // malformed attribute text or inconsistent shapes, at the instruction
    } catch (const std::exception& e) {
      // The graph's builders check operand shapes (models/graph.h): they do not fit the op.
      error(in, in.opcode, std::string("has operands that do not fit (") + e.what() + "); expected operand shapes "
                                                                                       "consistent with the op and its result " +
                               in.shape.to_string());
    }
    if (!node) return stand_in(in, form_reason(in.opcode));
    if (*node < 0) return stand_in(in, "an operand has no graph value; an input stands in");
    if (g_.node(*node).shape != in.shape.dims) {
      Shape got;
      got.type = in.shape.type;
      got.dims = g_.node(*node).shape;
      got.dynamic.assign(got.dims.size(), false);
      error(in, in.shape.to_string(), "is not the shape the op gives its operands (" + got.to_string() +
                                          "); expected the declared shape to be the op's result");
    }
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
      // all-reduce-start's value is its result (a tuple of results when combined); the others'
      // are (operands, results).
      return awaited(in.opcode == "all-reduce-done" ? s : s.tuple && s.size() >= 2 ? s.at(1) : s, in.name);
    }
    std::vector<int> ops;
    for (int o : in.operands) ops.push_back(vals[o].tuple ? -1 : vals[o].node);
    return collective_value(in, import_collective(m_, in, ops, replicas_, g_), vals);
  }

  // The value of an imported collective: its result (a tuple of the parts of a combined one), or a
  // -start's (operands, results).
  Value collective_value(const Instruction& in, const ImportedCollective& r, const std::vector<Value>& vals) {
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

  // An instruction of a flat collective's pattern (hlo_import_flat.h).
  Value import_flat(const Computation& c, const FlatPatterns& fp, int i, const FlatUse& u, const std::vector<Value>& vals) {
    const Instruction& in = c.instructions[size_t(i)];
    switch (u.role) {
      case FlatRole::kGather: {
        const Value& shard = vals[in.operands[0]];
        if (shard.tuple || shard.node < 0) return stand_in(in, "the shard has no graph value; an input stands in");
        return collective_value(in, import_flat_gather(m_, in, shard.node, fp.gathers.at(i).dims, replicas_, g_), vals);
      }
      case FlatRole::kCut: {
        const Value& b = vals[fp.gathers.at(u.pattern).buffer];
        if (!b.tuple || size_t(u.part) >= b.size()) return stand_in(in, "the gathered buffer has no graph value; an input stands in");
        return b.at(size_t(u.part));
      }
      case FlatRole::kCutReshape: return vals[in.operands[0]];
      case FlatRole::kScatterView: return {};
      case FlatRole::kScatter: {
        std::vector<int> xs;
        for (int t : fp.scatters.at(i).tensors) {
          if (vals[t].tuple || vals[t].node < 0) return stand_in(in, "a flattened tensor has no graph value; an input stands in");
          xs.push_back(vals[t].node);
        }
        const bool async = in.opcode == "async-start";
        const Instruction& rs = async ? m_.computations.at(size_t(in.called[0])).root_instruction() : in;
        const ImportedCollective r = import_flat_scatter(m_, rs, async, xs, replicas_, g_);
        if (!r.results.empty()) g_.set_name(r.results[0], in.name);
        return collective_value(in, r, vals);
      }
      case FlatRole::kScatterDone: {
        const Value& s = vals[in.operands[0]];
        return awaited(s.tuple && s.size() >= 2 ? s.at(1) : s, in.name);
      }
    }
    return {};
  }

  // A -done's value: each asynchronous collective among `v`'s leaves awaited there
  // (models::OpKind::kCollectiveDone), anything else passed on.
  Value awaited(const Value& v, const std::string& name) {
    if (v.tuple) {
      Value t = make_tuple();
      for (size_t i = 0; i < v.size(); ++i) t.elems->push_back(awaited(v.at(i), name));
      return t;
    }
    if (v.node < 0) return v;
    const models::Node& n = g_.node(v.node);
    if (n.kind != models::OpKind::kCollective || !n.collective.async) return v;
    return Value{g_.collective_done(v.node, name), false, nullptr};
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

  // The graph's element-wise ops take a tensor first operand: a scalar constant (a loop counter's
  // arithmetic, a scalar select's branch) becomes a rank-0 broadcast, which a second operand's
  // reader folds back (import_ops::build_elementwise).
  std::vector<int> tensors(std::vector<int> ops) {
    for (int& o : ops)
      if (o >= 0 && g_.node(o).kind == models::OpKind::kConstant) o = g_.broadcast(o, {}, {});
    return ops;
  }

  // The graph op of `in`: a node id, -1 when an operand has no node, nullopt when no op fits.
  std::optional<int> build(const Instruction& in, const std::vector<int>& ops, DType dtype, std::string& approx) {
    const std::string& op = in.opcode;
    for (int o : ops)
      if (o < 0) return -1;
    const std::string name = in.name;
    const import_ops::OpArgs a{m_, g_, in, ops, dtype, approx};
    if (op == "constant") {
      if (in.literal && in.literal->scalar && in.shape.dims.empty()) return g_.constant(*in.literal->scalar, dtype);
      // An array constant's values live in HBM like an input's.
      return g_.parameter(name, in.shape.dims, dtype, models::ParamRole::kInput);
    }
    if (import_ops::is_elementwise(op) || op == "power" || op == "compare" || op == "select" || op == "clamp") {
      const std::vector<int> ew_ops = tensors(ops);
      return import_ops::build_elementwise({m_, g_, in, ew_ops, dtype, approx});
    }
    if (op == "convert" || op == "copy" || op == "bitcast-convert") {
      if (ops.size() != 1) return std::nullopt;
      if (op == "copy" && grouped_ && in_fusion_ == 0) {
        // An unfused copy of an optimized module is XLA's layout-changing copy kernel.
        approx = "a copy kernel (a layout change) costed as an identity transpose";
        std::vector<int> identity(g_.node(ops[0]).shape.size());
        for (size_t d = 0; d < identity.size(); ++d) identity[d] = int(d);
        return g_.transpose(ops[0], identity);
      }
      if (op == "copy") approx = "as a view: a layout change is the compiler's own (its layout pass)";
      if (op == "bitcast-convert") approx = "as a view: the bits are reinterpreted, nothing moves";
      if (op != "convert" || g_.node(ops[0]).dtype == dtype) return ops[0];
      return g_.convert(ops[0], dtype);
    }
    if (op == "broadcast" && ops.size() == 1) {
      const std::vector<int64_t> d = int_list_attr(m_, in, "dimensions").value_or(std::vector<int64_t>{});
      if (!dims_in_range(to_int(d), int64_t(in.shape.dims.size())) || d.size() != g_.node(ops[0]).shape.size())
        error(in, "dimensions", "do not map each operand dimension to one of the result " + in.shape.to_string() +
                                    "; expected one result dimension per operand dimension");
      return g_.broadcast(ops[0], in.shape.dims, to_int(d));
    }
    if ((op == "reshape" || op == "bitcast") && ops.size() == 1) {
      if (models::num_elements(g_.node(ops[0]).shape) != models::num_elements(in.shape.dims))
        error(in, in.shape.to_string(), "has another element count than operand '" + in.operand_names[0] +
                                            "'; expected a " + op + " to keep the element count");
      return g_.reshape(ops[0], in.shape.dims);
    }
    if (op == "transpose" && ops.size() == 1) {
      const std::vector<int> p = to_int(int_list_attr(m_, in, "dimensions").value_or(std::vector<int64_t>{}));
      if (!is_permutation(p, rank_of(g_, ops[0])))
        error(in, "dimensions", "is not a permutation of the operand's " + std::to_string(rank_of(g_, ops[0])) +
                                    " dimensions; expected each dimension once");
      return g_.transpose(ops[0], p);
    }
    if (op == "dot" && ops.size() == 2) {
      const DotDims d = dot_dims(m_, in);
      models::DotDims gd{to_int(d.lhs_batch), to_int(d.rhs_batch), to_int(d.lhs_contracting), to_int(d.rhs_contracting)};
      if (!dims_in_range(gd.lhs_batch, rank_of(g_, ops[0])) || !dims_in_range(gd.lhs_contract, rank_of(g_, ops[0])) ||
          !dims_in_range(gd.rhs_batch, rank_of(g_, ops[1])) || !dims_in_range(gd.rhs_contract, rank_of(g_, ops[1])))
        return std::nullopt;
      for (size_t i = 0; i < gd.lhs_contract.size() && i < gd.rhs_contract.size(); ++i) {
        const int64_t l = g_.node(ops[0]).shape[gd.lhs_contract[i]], r = g_.node(ops[1]).shape[gd.rhs_contract[i]];
        if (l != r)
          error(in, std::to_string(l) + " vs " + std::to_string(r),
                "are the sizes of contracting dimensions " + std::to_string(gd.lhs_contract[i]) + " of '" +
                    in.operand_names[0] + "' and " + std::to_string(gd.rhs_contract[i]) + " of '" + in.operand_names[1] +
                    "'; expected equal contracted sizes");
      }
      return g_.dot(ops[0], ops[1], std::move(gd), precision(in), name);
    }
    if (op == "reduce") return import_ops::build_reduce(a);
    if (op == "iota" && ops.empty()) {
      const int64_t d = int_attr(m_, in, "iota_dimension").value_or(-1);
      return g_.iota(in.shape.dims, int(std::clamp<int64_t>(d, -1, 64)), dtype);
    }
    if (op == "slice" && ops.size() == 1) {
      const std::optional<std::vector<SliceDim>> s = slice_attr(m_, in);
      const models::Dims x = g_.node(ops[0]).shape;
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
    if (op == "gather") return import_ops::build_gather(a);
    if (op == "scatter") return import_ops::build_scatter(a);
    if (op == "pad" || op == "reverse" || op == "dynamic-slice" || op == "dynamic-update-slice")
      return import_ops::build_movement(a);
    if (op == "convolution") return import_ops::build_convolution(a);
    if (op == "reduce-window" || op == "select-and-scatter") return import_ops::build_window(a);
    if (op == "rng") return import_ops::random_draw(g_, in.shape.dims, dtype, name);
    return std::nullopt;
  }

  // while: the body imported once per iteration, the trip count from the loop's own bounds (the
  // condition compares a counter in the carried tuple against a constant; the counter starts at a
  // constant and steps by one), else XLA's known_trip_count annotation, else
  // ImportOptions::while_trip_count, else once (listed). Bounded by the instruction limit.
  Value import_while(const Computation& c, const Instruction& in, const std::vector<Value>& vals, int depth) {
    const int cond = called(in, "condition"), body = called(in, "body");
    if (cond < 0 || body < 0 || in.operands.size() != 1)
      error(in, in.opcode, "has no single operand, condition= and body=; expected while(init), condition=C, body=B");
    std::optional<int64_t> trips = loop_trip_count(m_, c, in, cond, body);
    if (!trips) trips = annotated_trip_count(in);
    if (!trips) trips = options_.while_trip_count;
    if (!trips)
      note(in, "trip count unknown (no counter compared against a constant and stepped by a constant, no "
               "known_trip_count, no while_trip_count given); the body is imported once");
    const int64_t n = std::max<int64_t>(trips.value_or(1), 0);
    Value carried = vals[in.operands[0]];
    for (int64_t i = 0; i < n; ++i) {
      if (inline_limit(depth)) {
        note(in, limit_reason() + ": " + std::to_string(i) + " of " + std::to_string(n) + " iterations imported");
        break;
      }
      const std::vector<Value> args{carried};
      carried = import_computation(body, &args, depth + 1);
    }
    if (!matches(carried, in.shape))
      return stand_in(in, "the body's result does not have the loop's shape " + in.shape.to_string() + "; an input stands in");
    return carried;
  }

  // conditional: the most expensive branch (dot and convolution flops, then bytes its instructions
  // write) stands for the op; which branch runs is data the import does not have.
  Value import_conditional(const Instruction& in, const std::vector<Value>& vals, int depth) {
    std::vector<int> branches = in.called;
    if (const int t = called(in, "true_computation"), f = called(in, "false_computation"); t >= 0 && f >= 0) branches = {t, f};
    if (branches.empty() || in.operands.size() != branches.size() + 1)
      error(in, std::to_string(in.operands.size()) + " operands",
            "are not the predicate or index and one operand per branch (" + std::to_string(branches.size()) +
                " branches); expected one operand per branch after the first");
    size_t pick = 0;
    std::pair<uint64_t, uint64_t> best{0, 0};
    for (size_t j = 0; j < branches.size(); ++j) {
      std::pair<uint64_t, uint64_t> cost{0, 0};
      const Computation& b = m_.computations.at(branches[j]);
      for (const Instruction& i : b.instructions) {
        if (i.opcode == "dot") cost.first = sat_add(cost.first, dot_flops_of(m_, b, i));
        if (i.opcode == "convolution") cost.first = sat_add(cost.first, convolution_flops_of(m_, b, i));
        if (i.opcode != "parameter" && i.opcode != "constant") cost.second = sat_add(cost.second, shape_bytes(i.shape));
      }
      if (j == 0 || cost > best) best = cost, pick = j;
    }
    if (inline_limit(depth)) return stand_in(in, limit_reason() + "; an input stands in");
    if (branches.size() > 1)
      note(in, "branch '" + m_.computations.at(branches[pick]).name + "' imported, the most expensive of " +
                   std::to_string(branches.size()) + " (flops, then bytes written); which branch runs is not known");
    const std::vector<Value> args{vals[in.operands[pick + 1]]};
    Value v = import_computation(branches[pick], &args, depth + 1);
    if (!matches(v, in.shape))
      return stand_in(in, "the branch's result does not have the declared shape " + in.shape.to_string() +
                              "; an input stands in");
    return v;
  }

  // A flash attention call as tpusim exports it (hlo_import_attention.h); nullopt for another
  // Mosaic kernel.
  std::optional<Value> import_attention(const Instruction& in, const std::vector<Value>& vals) {
    std::vector<int> ops;  // -1: not an array
    for (int o : in.operands) ops.push_back(vals[o].tuple ? -1 : vals[o].node);
    const std::optional<std::vector<int>> parts = import_ops::flash_attention(m_, in, g_, ops);
    if (!parts) return std::nullopt;
    Value v = make_tuple();
    for (int x : *parts) v.elems->push_back(Value{x, false, nullptr});
    if (!matches(v, in.shape))
      error(in, in.shape.to_string(), ops.size() == 6 ? "is not the shapes of (dq, dk, dv): q's, k's and v's"
                                                      : "is not the shapes of (out, lse): q's, and [B, heads, S] f32");
    return v;
  }

  // A custom-call the import does not know: an op reading its operands and writing its result
  // (listed, and a warning for the report); a sharding marker whose shapes differ, a copy.
  Value import_custom_call(const Instruction& in, const std::vector<Value>& vals, const std::string& target) {
    std::vector<int> ops;
    for (int o : in.operands) leaves(vals[o], ops);
    if (is_sharding_marker(target)) {
      note(in, "sharding marker '" + target + "' with a result shape other than its operand's: a pass reading the "
               "operand and writing the result");
    } else {
      note(in, "custom-call target '" + target + "' is not known: costed as reading its operands and writing its result");
      st_.warnings.push_back(m_.file + ":" + std::to_string(in.line) + ": custom-call '" + in.name + "' has target '" +
                             target + "', which tpusim does not model: costed as moving its operands' and results' bytes");
    }
    bool first = true;
    std::function<Value(const Shape&, int)> result = [&](const Shape& s, int level) -> Value {
      if (s.is_tuple()) {
        Value v = make_tuple();
        for (const Shape& e : s.tuple) v.elems->push_back(level < 64 ? result(e, level + 1) : Value{});
        return v;
      }
      const std::optional<TypeMap> t = map_type(s.type);
      if (!t || !array_ok(s)) return {};
      const int n = import_ops::touch(g_, first ? ops : std::vector<int>{}, s.dims, t->dtype, in.name);
      first = false;
      return Value{n, false, nullptr};
    };
    return result(in.shape, 0);
  }

  // Ops of several results or a called computation the graph expresses by cost: rng-bit-generator
  // (the state passed through, the bits a random draw), sort (log2 n compare passes per operand),
  // map (the body's ops per element).
  Value import_multi(const Computation& c, const Instruction& in, const std::vector<Value>& vals) {
    std::vector<int> ops;
    for (int o : in.operands) ops.push_back(vals[o].tuple ? -1 : vals[o].node);
    if (std::count(ops.begin(), ops.end(), -1)) return stand_in(in, "an operand has no graph value; an input stands in");
    ops = tensors(ops);
    if (in.opcode == "rng-bit-generator") {
      const std::optional<TypeMap> t = in.shape.tuple.size() == 2 ? map_type(in.shape.tuple[1].type) : std::nullopt;
      if (ops.size() != 1 || !t || !array_ok(in.shape.tuple[1]))
        return stand_in(in, "not (state, bits) of one state operand; an input stands in");
      Value v = make_tuple();
      v.elems->push_back(vals[in.operands[0]]);
      v.elems->push_back(Value{import_ops::random_draw(g_, in.shape.tuple[1].dims, t->dtype, in.name), false, nullptr});
      return v;
    }
    for (size_t i = 0; i < ops.size(); ++i)
      if (g_.node(ops[i]).shape != g_.node(ops[0]).shape)
        error(in, operand_shape(c, in, i).to_string(), "is the shape of operand " + std::to_string(i) + " '" +
                                                        in.operand_names[i] + "'; expected every operand of " +
                                                        in.opcode + " to have the first's dimensions");
    if (ops.empty()) return stand_in(in, in.opcode + " without operands; an input stands in");
    const models::Dims x = g_.node(ops[0]).shape;
    if (in.opcode == "map") {
      if (in.shape.is_tuple() || x != in.shape.dims || in.called.empty())
        error(in, in.shape.to_string(), "is not the operands' shape; expected map's result to have its operands' dimensions");
      int64_t body = 0;
      for (const Instruction& i : m_.computations.at(in.called[0]).instructions) body += i.opcode != "parameter";
      note(in, "as " + std::to_string(std::max<int64_t>(body, 1)) + " VPU ops per element (the body's instructions)");
      return Value{import_ops::map_cost(g_, ops, body, in.name), false, nullptr};
    }
    const std::vector<int64_t> d = int_list_attr(m_, in, "dimensions").value_or(std::vector<int64_t>{});
    if (d.size() != 1 || d[0] < 0 || d[0] >= int64_t(x.size()))
      error(in, "dimensions", "does not name one dimension of the operands' rank " + std::to_string(x.size()) +
                                  "; expected dimensions={d}");
    const bool tuple = in.shape.is_tuple();
    if (tuple ? in.shape.tuple.size() != ops.size() : ops.size() != 1)
      error(in, in.shape.to_string(), "is not one result per operand; expected sort's result to be its operands' shapes");
    note(in, "as log2(n) VPU compare passes over each operand (n log2 n compares per sorted row)");
    Value v = tuple ? make_tuple() : Value{};
    for (size_t i = 0; i < ops.size(); ++i) {
      const int n = import_ops::sort_cost(g_, ops[i], int(d[0]), in.name);
      if (!tuple) return Value{n, false, nullptr};
      v.elems->push_back(Value{n, false, nullptr});
    }
    return v;
  }

  static std::vector<int> to_int(const std::vector<int64_t>& v) {
    std::vector<int> r;
    for (int64_t x : v) r.push_back(int(std::clamp<int64_t>(x, -1, 1 << 20)));
    return r;
  }
  static bool dims_in_range(const std::vector<int>& d, int64_t rank) {
    for (int x : d)
      if (x < 0 || x >= rank) return false;
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

  const Module& m_;
  Graph& g_;
  HloStats& st_;
  std::set<std::pair<int64_t, std::vector<int64_t>>> aliased_;
  std::set<const void*> seen_tuples_;
  const ImportOptions& options_;
  size_t max_imported_;
  int64_t replicas_;  // the ids of replica_groups and source_target_pairs: 0..replicas_-1
  std::map<int, std::vector<char>> live_;  // per computation: the instructions its root reaches
  std::map<int, FlatPatterns> flat_;       // per computation: its flat collectives (hlo_import_flat.h)
  std::map<std::pair<int64_t, std::vector<int64_t>>, int> param_node_;  // (ENTRY parameter, index) -> node
  size_t imported_ = 0;  // instructions imported, inlined copies included
  bool grouped_ = false;  // an after-optimizations module (group_nodes)
  int in_fusion_ = 0;     // inside a fusion's computation: its nodes are the fusion's group
};

// The nodes the outputs use, and every parameter (the module's inputs), in their order: the import
// leaves behind what a matched pattern folded (a dropout mask's draw and compare, the init value of a
// reduce), which no kernel computes but which would count as graph ops.
Graph live_graph(const Graph& g, std::vector<int>* id_of = nullptr) {
  const std::vector<models::Node>& nodes = g.nodes();
  std::vector<char> live(nodes.size(), 0);
  for (int o : g.outputs()) live.at(size_t(o)) = 1;
  for (size_t i = nodes.size(); i-- > 0;) {
    if (nodes[i].kind == models::OpKind::kParameter) live[i] = 1;
    if (live[i])
      for (int in : nodes[i].inputs) live.at(size_t(in)) = 1;
  }
  Graph r;
  for (const std::string& grp : g.groups()) r.add_group(grp);
  std::vector<int> id(nodes.size(), -1);
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!live[i]) continue;
    models::Node n = nodes[i];
    for (int& in : n.inputs) in = id.at(size_t(in));
    id[i] = r.append_copy(std::move(n));
  }
  for (int o : g.outputs()) r.mark_output(id.at(size_t(o)));
  if (id_of) *id_of = std::move(id);
  return r;
}

}  // namespace

HloImport import_hlo(const Module& m, const ImportOptions& options) {
  for (const Computation& c : m.computations)
    for (const Instruction& in : c.instructions)
      if (!is_hlo_opcode(in.opcode))
        throw_hlo_error(SourcePos{&m.file, in.line, in.column, in.name}, in.opcode,
                        "is not an HLO opcode; expected one of XLA's opcodes (docs/hlo.md lists how each is imported)");
  HloImport r;
  r.stats = hlo_statistics(m);
  // Clamped to the graph's limit (a larger count fails every collective's check: stand-ins).
  const auto clamp = [](int64_t x) { return std::clamp<int64_t>(x, 1, models::kMaxReplicas + 1); };
  const int64_t replicas = clamp(options.replicas.value_or(clamp(m.replica_count) * clamp(m.num_partitions)));
  Graph g;
  Importer imp(m, g, r.stats, options, replicas);
  imp.run();
  std::vector<int> id;
  r.graph = live_graph(g, &id);
  r.graph.set_scheduled(m.is_scheduled);
  for (const auto& [out, param] : imp.donated)
    if (id.at(size_t(out)) >= 0 && id.at(size_t(param)) >= 0) r.donated[id[size_t(out)]] = id[size_t(param)];
  // A fusion one kernel cannot hold is split by the compiler (compiler/plan/fusion.h): listed.
  for (const compiler::GroupSplit& s : compiler::split_groups(r.graph)) {
    const Instruction& in = *imp.group_instructions.at(size_t(s.group));
    r.stats.unmodelled.push_back({in.name, in.opcode, in.line, "more than one kernel: " + s.reason});
  }
  return r;
}

}  // namespace tpusim::hlo
