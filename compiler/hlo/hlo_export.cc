#include "compiler/hlo/hlo_export.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

namespace tpusim::hlo {
namespace {

using models::DType;
using models::EwOp;
using models::Node;
using models::OpKind;

std::string shape_str(const models::Dims& dims, const char* type) {
  // Default (row-major) layout: minor_to_major {n-1, ..., 0}; XLA prints none for a scalar.
  std::string s = fmt::format("{}[{}]", type, fmt::join(dims, ","));
  if (dims.empty()) return s;
  s += '{';
  for (size_t i = dims.size(); i-- > 0;) s += fmt::format("{}{}", i + 1 == dims.size() ? "" : ",", i);
  return s + '}';
}
std::string shape_str(const models::Dims& dims, DType t) { return shape_str(dims, models::dtype_name(t)); }

std::string sanitize(const std::string& name) {
  std::string s;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
    s += ok ? c : '_';
  }
  if (s.empty() || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') || s[0] == '_')) s.insert(0, 1, '_');
  return s;
}

// A quoted HLO string: the name as given, quotes, backslashes and control bytes escaped.
std::string quoted(const std::string& s) {
  std::string q = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') q += {'\\', char(c)};
    else if (c < 0x20 || c == 0x7f) q += fmt::format("\\x{:02x}", c);
    else q += char(c);
  }
  return q + '"';
}

// A scalar literal as XLA prints one: integers for s32, shortest round-trip decimals, inf/nan.
std::string literal(double v, DType t) {
  if (t == DType::kS32) return fmt::format("{}", int64_t(v));
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{}", v);
}

std::string ints(const std::vector<int>& v) { return fmt::format("{{{}}}", fmt::join(v, ",")); }
std::vector<int> range(int from, int to) {
  std::vector<int> r;
  for (int i = from; i < to; ++i) r.push_back(i);
  return r;
}

const char* ew_opcode(EwOp op) {
  switch (op) {
    case EwOp::kAdd: return "add";
    case EwOp::kSub: return "subtract";
    case EwOp::kMul: return "multiply";
    case EwOp::kDiv: return "divide";
    case EwOp::kMax: return "maximum";
    case EwOp::kExp: return "exponential";
    case EwOp::kRsqrt: return "rsqrt";
    case EwOp::kNeg: return "negate";
    case EwOp::kTanh: return "tanh";
    case EwOp::kErf: return "erf";
    case EwOp::kLog: return "log";
    case EwOp::kSqrt: return "sqrt";
    case EwOp::kRelu: return "maximum";  // max(x, 0)
    case EwOp::kCmpEq: case EwOp::kCmpGt: return "convert";  // compare, then the 0/1 convert
    case EwOp::kDropoutMask: return "select";  // rng, compare, select
  }
  throw std::logic_error("hlo export: unknown element-wise op");
}

// One computation's instructions from one graph.
class ComputationWriter {
 public:
  ComputationWriter(const models::Graph& g, std::set<std::string>& reducers, std::vector<std::string>& wrapped)
      : g_(g), reducers_(reducers), wrapped_(wrapped) {}

  // `header`: "ENTRY %main" or "%name".
  std::string write(const std::string& header) {
    std::vector<std::string> params, outs;
    for (const Node& n : g_.nodes()) {
      if (n.kind == OpKind::kParameter) params.push_back(fmt::format("{}: {}", name(n), shape_str(n.shape, n.dtype)));
      if ((n.kind == OpKind::kCollective || n.kind == OpKind::kCollectiveDone) && n.collective.combine >= 0) {
        // A combined collective (or its done) at its first part; its parts are consecutive nodes
        // (the builders' rule: compiler/step/data_parallel.cc and the import), so its operands are
        // all defined above.
        if (n.id > 0 && combined_with(g_.node(n.id - 1), n)) continue;
        std::vector<const Node*> parts = {&n};
        for (int k = n.id + 1; k < int(g_.nodes().size()) && combined_with(g_.node(k), n); ++k) parts.push_back(&g_.node(k));
        n.kind == OpKind::kCollective ? emit_collective(parts) : emit_done(parts);
        continue;
      }
      emit(n);
      // A value the compiler materializes without a rule of its own (models' `materialize`, e.g.
      // batch-norm intermediates): an optimization barrier, across which XLA fuses nothing; the
      // importer materializes what passes one. Users read the barrier.
      if (barrier(n)) line(n, helper(n, "mat"), shape_str(n.shape, n.dtype), "opt-barrier", {name(n)});
    }
    std::vector<std::string> out_shapes;
    for (int o : g_.outputs()) {
      outs.push_back(fmt::format("%{}", name(g_.node(o))));
      out_shapes.push_back(shape_str(g_.node(o).shape, g_.node(o).dtype));
    }
    const std::string tuple_shape = fmt::format("({})", fmt::join(out_shapes, ", "));
    body_ += fmt::format("  ROOT %output_tuple = {} tuple({})\n", tuple_shape, fmt::join(outs, ", "));
    return fmt::format("{} ({}) -> {} {{\n{}}}\n", header, fmt::join(params, ", "), tuple_shape, body_);
  }

 private:
  static std::string name(const Node& n) { return hlo_instruction_name(n); }
  static bool combined_with(const Node& x, const Node& n) {
    return x.kind == n.kind && x.collective.combine == n.collective.combine;
  }
  // An async collective awaited by a done node of the graph: written as its -start alone (the
  // done node writes the -done where the graph awaits it).
  bool awaited_later(const Node& n) const {
    if (!n.collective.async) return false;
    for (int k = n.id + 1; k < int(g_.nodes().size()); ++k)
      if (g_.node(k).kind == OpKind::kCollectiveDone && g_.node(k).inputs[0] == n.id) return true;
    return false;
  }
  static bool barrier(const Node& n) {
    return n.materialize && n.kind != OpKind::kParameter && n.kind != OpKind::kConstant;
  }
  // The instruction a user of `n` reads: its barrier when it has one.
  std::string use(const Node& n) { return barrier(n) ? helper(n, "mat") : name(n); }

  // One instruction line: `%inst = shape opcode(operands)[, attrs], metadata={op_name=...}`.
  void line(const Node& n, const std::string& inst, const std::string& shape, const std::string& opcode,
            const std::vector<std::string>& operands, const std::string& attrs = "") {
    std::vector<std::string> ops;
    for (const std::string& o : operands) ops.push_back(fmt::format("%{}", o));
    // parameter(N) and constant(V) come with their parenthesis.
    const std::string call = opcode.back() == ')' ? opcode : fmt::format("{}({})", opcode, fmt::join(ops, ", "));
    body_ += fmt::format("  %{} = {} {}{}{}, metadata={{op_name={}}}\n", inst, shape, call, attrs.empty() ? "" : ", ",
                         attrs, quoted(n.name));
  }
  // A helper instruction of node n: `<name>.<id>.<suffix>`.
  std::string helper(const Node& n, const std::string& suffix) { return name(n) + "." + suffix; }
  std::string scalar(const Node& n, const std::string& suffix, double v, DType t) {
    const std::string h = helper(n, suffix);
    line(n, h, shape_str({}, t), fmt::format("constant({})", literal(v, t)), {});
    return h;
  }
  std::string splat(const Node& n, const std::string& suffix, const std::string& scalar_inst, DType t) {
    const std::string h = helper(n, suffix);
    line(n, h, shape_str(n.shape, t), "broadcast", {scalar_inst}, "dimensions={}");
    return h;
  }
  // The element-wise node's operand j in the node's shape and in `t`: a scalar constant broadcast,
  // an operand of another type converted (HLO's element-wise ops take one shape and one type).
  std::string ew_operand(const Node& n, size_t j, DType t) {
    const Node& in = g_.node(n.inputs[j]);
    std::string src = use(in);
    if (in.kind == OpKind::kConstant) {
      if (in.dtype != t) src = scalar(n, fmt::format("c{}", j), in.constant, t);
      return splat(n, fmt::format("b{}", j), src, t);
    }
    if (in.dtype != t) {
      const std::string h = helper(n, fmt::format("cv{}", j));
      line(n, h, shape_str(n.shape, t), "convert", {src});
      return h;
    }
    return src;
  }
  std::string reducer(bool max, DType t) {
    const std::string r = fmt::format("{}.{}", max ? "max" : "add", models::dtype_name(t));
    reducers_.insert(r);
    return r;
  }

  void emit(const Node& n) {
    const std::string me = name(n), sh = shape_str(n.shape, n.dtype);
    auto in = [&](size_t j) { return use(g_.node(n.inputs.at(j))); };
    switch (n.kind) {
      case OpKind::kParameter:
        line(n, me, sh, fmt::format("parameter({})", param_++), {});
        return;
      case OpKind::kConstant:
        line(n, me, sh, fmt::format("constant({})", literal(n.constant, n.dtype)), {});
        return;
      case OpKind::kDot: {
        std::string attrs;
        auto dims = [&](const char* key, const std::vector<int>& v) {
          if (v.empty()) return;  // XLA prints the non-empty dimension lists only
          attrs += fmt::format("{}{}={}", attrs.empty() ? "" : ", ", key, ints(v));
        };
        dims("lhs_batch_dims", n.dot.lhs_batch);
        dims("lhs_contracting_dims", n.dot.lhs_contract);
        dims("rhs_batch_dims", n.dot.rhs_batch);
        dims("rhs_contracting_dims", n.dot.rhs_contract);
        if (models::is_quantized(n.precision))
          throw std::invalid_argument("dot '" + n.name + "' is a quantized (" + models::dot_precision_name(n.precision) +
                                      ") matmul: AQT's int8/fp8 converts are not written as HLO yet");
        if (n.precision != models::DotPrecision::kDefault) {
          const char* p = models::dot_precision_name(n.precision);
          attrs += fmt::format("{}operand_precision={{{},{}}}", attrs.empty() ? "" : ", ", p, p);
        }
        line(n, me, sh, "dot", {in(0), in(1)}, attrs);
        return;
      }
      case OpKind::kElementwise:
        emit_elementwise(n);
        return;
      case OpKind::kBroadcast:
        line(n, me, sh, "broadcast", {in(0)}, "dimensions=" + ints(n.broadcast_dims));
        return;
      case OpKind::kReduce: {
        const bool max = n.reduce == models::ReduceOp::kMax;
        // The identity of the reduction: 0 for a sum, -inf (the smallest s32) for a max.
        const double init = !max ? 0 : n.dtype == DType::kS32 ? -2147483648.0 : -INFINITY;
        const std::string i = scalar(n, "init", init, n.dtype);
        line(n, me, sh, "reduce", {in(0), i}, fmt::format("dimensions={{{}}}, to_apply=%{}", n.reduce_dim, reducer(max, n.dtype)));
        return;
      }
      case OpKind::kReshape:
        line(n, me, sh, "reshape", {in(0)});
        return;
      case OpKind::kTranspose:
        line(n, me, sh, "transpose", {in(0)}, "dimensions=" + ints(n.permutation));
        return;
      case OpKind::kConvert:
        line(n, me, sh, "convert", {in(0)});
        return;
      case OpKind::kIota:
        line(n, me, sh, "iota", {}, fmt::format("iota_dimension={}", n.iota_dim));
        return;
      case OpKind::kGather: {
        // Rows of table [R, rest...] at ids (rank k, an implicit trailing index vector of one):
        // out = ids.shape ++ rest, one row per id.
        const Node& table = g_.node(n.inputs[0]);
        const int k = int(g_.node(n.inputs[1]).shape.size()), rest = int(table.shape.size()) - 1;
        std::vector<int64_t> sizes = table.shape;
        sizes[0] = 1;
        line(n, me, sh, "gather", {in(0), in(1)},
             fmt::format("offset_dims={}, collapsed_slice_dims={{0}}, start_index_map={{0}}, index_vector_dim={}, "
                         "slice_sizes={{{}}}",
                         ints(range(k, k + rest)), k, fmt::join(sizes, ",")));
        return;
      }
      case OpKind::kScatterAdd: {
        // zeros [rows, rest...]; row ids[i...] += updates[i..., rest...] (the gather's transpose).
        const int k = int(g_.node(n.inputs[1]).shape.size()), rest = int(n.shape.size()) - 1;
        const std::string z = splat(n, "zeros", scalar(n, "zero", 0, n.dtype), n.dtype);
        line(n, me, sh, "scatter", {z, in(1), in(0)},
             fmt::format("update_window_dims={}, inserted_window_dims={{0}}, scatter_dims_to_operand_dims={{0}}, "
                         "index_vector_dim={}, to_apply=%{}",
                         ints(range(k, k + rest)), k, reducer(false, n.dtype)));
        return;
      }
      case OpKind::kSlice: {
        const models::Dims& src = g_.node(n.inputs[0]).shape;
        std::vector<std::string> ranges;
        for (size_t d = 0; d < src.size(); ++d)
          ranges.push_back(int(d) == n.axis ? fmt::format("[{}:{}]", n.start, n.start + n.shape[d]) : fmt::format("[0:{}]", src[d]));
        line(n, me, sh, "slice", {in(0)}, fmt::format("slice={{{}}}", fmt::join(ranges, ", ")));
        return;
      }
      case OpKind::kConcatenate: {
        std::vector<std::string> ops;
        for (size_t j = 0; j < n.inputs.size(); ++j) ops.push_back(in(j));
        line(n, me, sh, "concatenate", ops, fmt::format("dimensions={{{}}}", n.axis));
        return;
      }
      case OpKind::kCollective:
        emit_collective({&n});
        return;
      case OpKind::kCollectiveDone:
        emit_done({&n});
        return;
      case OpKind::kAttention:
        emit_attention(n);
        return;
      case OpKind::kHostOffload:
      case OpKind::kHostReload:
        throw std::invalid_argument("hlo export: host offload (" + n.name +
                                    ") is not exported; export the step with remat_tensors device or remat");
    }
    throw std::logic_error("hlo export: unknown op kind");
  }

  // A flash attention call as XLA holds a Pallas kernel: one custom-call to "tpu_custom_call" whose
  // tuple result is the call's parts (forward: out, lse; backward: dq, dk, dv), each part a
  // get-tuple-element of it. The kernel's body (Mosaic, serialized in backend_config by JAX) is
  // not text tpusim can read; tpusim writes the call's attributes there instead, as JSON under
  // "tpusim_attention", which its import reads back (hlo_import.cc).
  void emit_attention(const Node& n) {
    const models::AttentionAttrs& a = n.attention;
    const bool backward = a.part >= models::AttentionPart::kDq;
    const std::string call = fmt::format("attention_call.{}", a.call);
    if (attention_calls_.insert(a.call).second) {
      std::vector<std::string> shapes, ops;
      const Node& q = g_.node(n.inputs[0]);
      if (backward) {
        for (size_t j = 0; j < 3; ++j) shapes.push_back(shape_str(g_.node(n.inputs[j]).shape, g_.node(n.inputs[j]).dtype));
      } else {
        shapes = {shape_str(q.shape, q.dtype), shape_str({q.shape[0], q.shape[1], q.shape[2]}, DType::kF32)};
      }
      for (int in : n.inputs) ops.push_back(use(g_.node(in)));
      const std::string config = fmt::format(
          "{{\"name\": \"{}\", \"tpusim_attention\": {{\"causal\": {}, \"window\": {}, \"block_q\": {}, "
          "\"block_kv\": {}, \"scale\": {}, \"q_offset\": {}}}}}",
          backward ? "flash_attention_bwd" : "flash_attention_fwd", a.causal ? "true" : "false", a.window, a.block_q,
          a.block_kv, a.scale, a.q_offset);
      line(n, call, fmt::format("({})", fmt::join(shapes, ", ")), "custom-call", ops,
           fmt::format("custom_call_target=\"tpu_custom_call\", backend_config={}", quoted(config)));
    }
    const int index = int(a.part) - (backward ? int(models::AttentionPart::kDq) : 0);
    line(n, name(n), shape_str(n.shape, n.dtype), "get-tuple-element", {call}, fmt::format("index={}", index));
  }

  // XLA's asynchronous forms: all-reduce-start's value is its result; all-gather-start's and
  // collective-permute-start's a tuple (operand, result). The others run synchronously.
  static bool has_async_form(models::CollectiveOp op) {
    return op == models::CollectiveOp::kAllReduce || op == models::CollectiveOp::kAllGather ||
           op == models::CollectiveOp::kCollectivePermute;
  }
  // The -start's shape of a collective of `parts` whose result shape is `result`.
  std::string start_shape(const std::vector<const Node*>& parts, const std::string& result) {
    if (parts.front()->collective.op == models::CollectiveOp::kAllReduce) return result;
    std::vector<std::string> operands;
    for (const Node* p : parts) operands.push_back(shape_str(g_.node(p->inputs[0]).shape, p->dtype));
    const std::string o = parts.size() > 1 ? fmt::format("({})", fmt::join(operands, ", ")) : operands[0];
    return fmt::format("({}, {})", o, result);
  }

  // A collective's attributes: its replica groups (or pairs), dimension and reduction.
  std::string collective_attrs(const Node& n) {
    const models::CollectiveAttrs& c = n.collective;
    std::vector<std::string> attrs;
    if (c.op == models::CollectiveOp::kCollectivePermute) {
      std::vector<std::string> p;
      for (const auto& [s, t] : c.pairs) p.push_back(fmt::format("{{{},{}}}", s, t));
      attrs.push_back(fmt::format("source_target_pairs={{{}}}", fmt::join(p, ",")));
    } else {
      std::vector<std::string> gs;
      for (const auto& grp : c.groups) gs.push_back(fmt::format("{{{}}}", fmt::join(grp, ",")));
      attrs.push_back(fmt::format("replica_groups={{{}}}", fmt::join(gs, ",")));
    }
    if (c.dim >= 0) attrs.push_back(fmt::format("dimensions={{{}}}", c.dim));
    if (c.op == models::CollectiveOp::kAllReduce || c.op == models::CollectiveOp::kReduceScatter)
      attrs.push_back("to_apply=%" + reducer(c.reduce == models::ReduceOp::kMax, n.dtype));
    return fmt::format("{}", fmt::join(attrs, ", "));
  }

  // torch_xla FSDP's flat buffers (CollectiveAttrs::flat) as XLA writes them: a unit's shard
  // all-gathered into one 1-D buffer of group x shard elements, then cut into its tensors (slice,
  // reshape); its gradients flattened (reshape, concatenate, pad to the group's buffer) and
  // reduce-scattered, asynchronously as XLA's async-start of a wrapped reduce-scatter. The import
  // folds both back into flat collectives (hlo_import_flat.h).
  std::string flat_buffer_shape(const Node& n, int64_t shard_elements) const {
    return shape_str({n.collective.group_size() * shard_elements}, n.dtype);
  }
  void emit_flat_gather(const std::vector<const Node*>& parts) {
    const Node& n = *parts.front();
    const Node& shard = g_.node(n.inputs[0]);
    const std::string buffer = flat_buffer_shape(n, shard.shape.at(0)), attrs = collective_attrs(n);
    const std::string start = fmt::format("({}, {})", shape_str(shard.shape, n.dtype), buffer);
    if (n.collective.async && awaited_later(n)) {
      line(n, name(n), start, "all-gather-start", {use(shard)}, attrs);  // read by the done
      return;
    }
    if (n.collective.async) {
      line(n, helper(n, "start"), start, "all-gather-start", {use(shard)}, attrs);
      line(n, helper(n, "flat"), buffer, "all-gather-done", {helper(n, "start")});
    } else {
      line(n, helper(n, "flat"), buffer, "all-gather", {use(shard)}, attrs);
    }
    emit_cuts(parts, helper(n, "flat"));
  }
  // The tensors `parts` (a flat all-gather's parts, or their dones) cut from `buffer`, in order.
  void emit_cuts(const std::vector<const Node*>& parts, const std::string& buffer) {
    int64_t at = 0;
    for (const Node* p : parts) {
      const int64_t k = models::num_elements(p->shape);
      const bool one_dim = p->shape.size() == 1;
      const std::string cut = one_dim ? name(*p) : helper(*p, "cut");
      line(*p, cut, shape_str({k}, p->dtype), "slice", {buffer}, fmt::format("slice={{[{}:{}]}}", at, at + k));
      if (!one_dim) line(*p, name(*p), shape_str(p->shape, p->dtype), "reshape", {cut});
      at += k;
    }
  }
  void emit_flat_scatter(const Node& n) {
    std::vector<std::string> flat;
    int64_t elements = 0;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const Node& x = g_.node(n.inputs[i]);
      const int64_t k = models::num_elements(x.shape);
      flat.push_back(helper(n, fmt::format("flat{}", i)));
      line(n, flat.back(), shape_str({k}, n.dtype), "reshape", {use(x)});
      elements += k;
    }
    const int64_t whole = n.collective.group_size() * n.shape.at(0);
    std::string buffer = helper(n, "flat");
    line(n, buffer, shape_str({elements}, n.dtype), "concatenate", flat, "dimensions={0}");
    if (elements < whole) {
      const std::string zero = scalar(n, "zero", 0.0, n.dtype);
      line(n, helper(n, "padded"), shape_str({whole}, n.dtype), "pad", {buffer, zero}, fmt::format("padding=0_{}", whole - elements));
      buffer = helper(n, "padded");
    }
    const std::string attrs = collective_attrs(n), result = shape_str(n.shape, n.dtype);
    if (!n.collective.async) {
      line(n, name(n), result, "reduce-scatter", {buffer}, attrs);
      return;
    }
    // XLA's async form of a collective without -start/-done opcodes: async-start calls a
    // computation that holds it; its value is ((operands), result).
    const std::string w = helper(n, "wrapped"), operand = shape_str({whole}, n.dtype);
    wrapped_.push_back(fmt::format("%{0} ({0}.p: {1}) -> {2} {{\n  %{0}.p = {1} parameter(0)\n"
                                   "  ROOT %{0}.rs = {2} reduce-scatter(%{0}.p), {3}\n}}\n",
                                   w, operand, result, attrs));
    const std::string start = fmt::format("(({}), {})", operand, result);
    if (awaited_later(n)) {
      line(n, name(n), start, "async-start", {buffer}, "calls=%" + w);  // read by the done
      return;
    }
    line(n, helper(n, "start"), start, "async-start", {buffer}, "calls=%" + w);
    line(n, name(n), result, "async-done", {helper(n, "start")});
  }

  // A collective in the form hlo_import_collectives.cc reads back; the parts of a combined one
  // (CollectiveAttrs::combine) as XLA's combiner writes them: one tuple-shaped instruction of all
  // their operands, each part a get-tuple-element of it. An asynchronous one (has_async_form) is a
  // -start, with its -done right after it unless the graph awaits it later (a done node: emit_done).
  void emit_collective(const std::vector<const Node*>& parts) {
    const Node& n = *parts.front();
    const models::CollectiveAttrs& c = n.collective;
    if (c.flat) {
      c.op == models::CollectiveOp::kAllGather ? emit_flat_gather(parts) : emit_flat_scatter(n);
      return;
    }
    std::vector<std::string> ops, shapes;
    for (const Node* p : parts) {
      ops.push_back(use(g_.node(p->inputs.at(0))));
      shapes.push_back(shape_str(p->shape, p->dtype));
    }
    const bool combined = parts.size() > 1;
    const std::string sh = combined ? fmt::format("({})", fmt::join(shapes, ", ")) : shapes[0];
    std::string value = combined ? helper(n, "combined") : name(n);
    const std::string op = models::collective_op_name(c.op), attr_text = collective_attrs(n);
    if (c.async && has_async_form(c.op) && awaited_later(n)) {
      line(n, name(n), start_shape(parts, sh), op + "-start", ops, attr_text);  // read by the done
      return;
    }
    if (c.async && has_async_form(c.op)) {
      line(n, helper(n, "start"), start_shape(parts, sh), op + "-start", ops, attr_text);
      line(n, value, sh, op + "-done", {helper(n, "start")});
    } else {
      line(n, value, sh, op, ops, attr_text);
    }
    if (combined)
      for (size_t i = 0; i < parts.size(); ++i)
        line(*parts[i], name(*parts[i]), shapes[i], "get-tuple-element", {value}, fmt::format("index={}", i));
  }

  // The -done of an async collective (its parts' dones, when combined) where the graph awaits it.
  void emit_done(const std::vector<const Node*>& parts) {
    const Node& n = *parts.front();
    const Node& start = g_.node(n.inputs[0]);
    std::vector<std::string> shapes;
    for (const Node* p : parts) shapes.push_back(shape_str(p->shape, p->dtype));
    const bool combined = parts.size() > 1;
    const std::string sh = combined ? fmt::format("({})", fmt::join(shapes, ", ")) : shapes[0];
    if (start.collective.flat && start.collective.op == models::CollectiveOp::kAllGather) {
      line(n, helper(n, "flat"), flat_buffer_shape(n, g_.node(start.inputs[0]).shape.at(0)), "all-gather-done", {name(start)});
      emit_cuts(parts, helper(n, "flat"));
      return;
    }
    const std::string value = combined ? helper(n, "combined") : name(n);
    const std::string done = has_async_form(start.collective.op) ? std::string(models::collective_op_name(start.collective.op)) + "-done" : "async-done";
    line(n, value, sh, done, {name(start)});
    if (combined)
      for (size_t i = 0; i < parts.size(); ++i)
        line(*parts[i], name(*parts[i]), shapes[i], "get-tuple-element", {value}, fmt::format("index={}", i));
  }

  void emit_elementwise(const Node& n) {
    const std::string me = name(n), sh = shape_str(n.shape, n.dtype);
    switch (n.ew) {
      case EwOp::kRelu: {
        const std::string z = splat(n, "zeros", scalar(n, "zero", 0, n.dtype), n.dtype);
        line(n, me, sh, "maximum", {ew_operand(n, 0, n.dtype), z});
        return;
      }
      case EwOp::kCmpEq:
      case EwOp::kCmpGt: {
        // The graph's compare is XLA's pred compare followed by the convert to a 0/1 mask.
        const std::string a = ew_operand(n, 0, n.dtype), b = ew_operand(n, 1, n.dtype), c = helper(n, "cmp");
        line(n, c, shape_str(n.shape, "pred"), "compare", {a, b},
             fmt::format("direction={}", n.ew == EwOp::kCmpEq ? "EQ" : "GT"));
        line(n, me, sh, "convert", {c});
        return;
      }
      case EwOp::kDropoutMask: {
        // keep = uniform[0, 1) > rate (GT, which the importer maps exactly; u == rate has measure 0);
        // mask = keep ? 1/(1-rate) : 0 * x. The graph's operand x gives the mask its shape and is read
        // by the mask's kernel (not its values): the zero branch multiplies it by 0 so that the text
        // says so and the importer gives the mask the same operand.
        const std::string lo = scalar(n, "lo", 0, n.dtype), hi = scalar(n, "hi", 1, n.dtype);
        const std::string u = helper(n, "uniform");
        line(n, u, sh, "rng", {lo, hi}, "distribution=rng_uniform");
        const std::string rate = splat(n, "rateb", scalar(n, "rate", n.rate, n.dtype), n.dtype);
        const std::string keep = helper(n, "keep");
        line(n, keep, shape_str(n.shape, "pred"), "compare", {u, rate}, "direction=GT");
        const std::string scale = splat(n, "scaleb", scalar(n, "scale", 1 / (1 - n.rate), n.dtype), n.dtype);
        const std::string zero = helper(n, "zero");
        line(n, zero, sh, "multiply", {ew_operand(n, 0, n.dtype), splat(n, "zeros", lo, n.dtype)});
        line(n, me, sh, "select", {keep, scale, zero});
        return;
      }
      default: {
        std::vector<std::string> ops;
        for (size_t j = 0; j < n.inputs.size(); ++j) ops.push_back(ew_operand(n, j, n.dtype));
        line(n, me, sh, ew_opcode(n.ew), ops);
        return;
      }
    }
  }

  const models::Graph& g_;
  std::set<std::string>& reducers_;
  std::set<int64_t> attention_calls_;  // flash attention calls whose custom-call is written
  std::vector<std::string>& wrapped_;  // computations async-starts call, in order
  std::string body_;
  int param_ = 0;
};

// `%add.f32 (add.f32.x: f32[], add.f32.y: f32[]) -> f32[] { ... }`: the to_apply of reduce/scatter.
std::string reducer_computation(const std::string& r) {
  const std::string type = r.substr(r.find('.') + 1), op = r.rfind("max", 0) == 0 ? "maximum" : "add";
  return fmt::format(
      "%{0} ({0}.x: {1}[], {0}.y: {1}[]) -> {1}[] {{\n"
      "  %{0}.x = {1}[] parameter(0)\n"
      "  %{0}.y = {1}[] parameter(1)\n"
      "  ROOT %{0}.r = {1}[] {2}(%{0}.x, %{0}.y)\n"
      "}}\n",
      r, type, op);
}

// `, input_output_alias={ {i}: (p, {}, may-alias), ... }` of the donated outputs: output index i
// (its place in the ROOT tuple) over ENTRY parameter p (parameters are numbered in graph order).
std::string input_output_alias(const models::Graph& g, const std::map<int, int>& donated) {
  if (donated.empty()) return "";
  std::map<int, int> param_number;
  for (const Node& n : g.nodes())
    if (n.kind == OpKind::kParameter) param_number.emplace(n.id, int(param_number.size()));
  std::vector<std::string> entries;
  for (size_t i = 0; i < g.outputs().size(); ++i)
    if (auto d = donated.find(g.outputs()[i]); d != donated.end() && param_number.count(d->second))
      entries.push_back(fmt::format("{{{}}}: ({}, {{}}, may-alias)", i, param_number[d->second]));
  return entries.empty() ? "" : fmt::format(", input_output_alias={{ {} }}", fmt::join(entries, ", "));
}

}  // namespace

std::string hlo_instruction_name(const models::Node& n) { return fmt::format("{}.{}", sanitize(n.name), n.id); }

std::string export_hlo(const models::Graph& g, const HloExportOptions& options) {
  std::set<std::string> reducers;  // sorted: deterministic order
  std::vector<std::string> extra, wrapped;
  for (const ExtraComputation& e : options.extra)
    extra.push_back(ComputationWriter(*e.graph, reducers, wrapped).write(fmt::format("%{}", sanitize(e.name))));
  const std::string entry = ComputationWriter(g, reducers, wrapped).write("ENTRY %main");
  std::string out;
  for (const std::string& c : options.comment) {
    std::string line = c;  // one comment line per line of the text
    for (size_t p = line.find('\n'); p != std::string::npos; p = line.find('\n', p + 4)) line.replace(p, 1, "\n// ");
    out += fmt::format("// {}\n", line);
  }
  // The replicas of the graph's collectives (their ids), so that the import reads them back.
  int64_t replicas = 1;
  for (const models::Node& n : g.nodes())
    if (n.kind == OpKind::kCollective) replicas = std::max(replicas, n.collective.replicas);
  out += "HloModule " + sanitize(options.module_name) + (g.scheduled() ? ", is_scheduled=true" : "") +
         (replicas > 1 ? fmt::format(", replica_count={}", replicas) : "") + input_output_alias(g, options.donated) +
         "\n\n";
  for (const std::string& r : reducers) out += reducer_computation(r) + "\n";
  for (const std::string& w : wrapped) out += w + "\n";
  for (const std::string& e : extra) out += e + "\n";
  return out + entry;
}

}  // namespace tpusim::hlo
