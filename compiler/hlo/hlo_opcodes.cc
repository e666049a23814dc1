#include "compiler/hlo/hlo_opcodes.h"

#include <set>
#include <string_view>

#include "compiler/hlo/hlo_import_ops.h"

namespace tpusim::hlo {

using models::DType;

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

std::string no_op_reason(const Module& m, const Instruction& in) {
  const std::string& op = in.opcode;
  static const std::set<std::string_view> collectives = {
      "all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute", "all-reduce-start",
      "all-reduce-done", "all-gather-start", "all-gather-done", "collective-permute-start",
      "collective-permute-done", "collective-broadcast"};
  std::string why;
  if (op == "convolution")
    why = "the graph has no convolution op (its flops are in convolution_flops)";
  else if (collectives.count(op))
    why = "this collective is not modelled (all-reduce, all-gather, reduce-scatter, all-to-all and collective-permute are)";
  else
    why = "the graph has no op for '" + op + "'";
  return why + "; an input of its result shape stands in";
}

std::string form_reason(const std::string& op) {
  std::string why = "this form of " + op + " is not modelled";
  if (op == "reduce") why += " (one operand and a to_apply of add, maximum or minimum are)";
  if (op == "slice") why += " (strides of 1 are)";
  if (op == "gather") why += " (whole rows of a table picked by ids, an embedding lookup, are)";
  if (op == "dot") why += " (dimension numbers within the operands' ranks are)";
  if (op == "convolution") why += " (dim_labels and batch_group_count=1 are; its flops are in convolution_flops)";
  if (op == "scatter") why += " (one operand, indices and updates are)";
  return why + "; an input of its result shape stands in";
}

bool is_built(const std::string& op) {
  static const std::set<std::string_view> ops = {
      "constant", "power", "compare", "select", "clamp", "convert", "copy", "bitcast-convert", "broadcast",
      "reshape", "bitcast", "transpose", "dot", "reduce", "iota", "slice", "concatenate", "gather",
      "scatter", "pad", "reverse", "dynamic-slice", "dynamic-update-slice", "convolution", "reduce-window",
      "select-and-scatter", "rng"};
  return ops.count(op) || import_ops::is_elementwise(op);
}

bool is_hlo_opcode(const std::string& op) {
  static const std::set<std::string_view> ops = {
      "abs", "add", "add-dependency", "after-all", "all-gather", "all-gather-done", "all-gather-start", "all-reduce",
      "all-reduce-done", "all-reduce-start", "all-to-all", "and", "async-done", "async-start", "async-update", "atan2",
      "batch-norm-grad", "batch-norm-inference", "batch-norm-training", "bitcast", "bitcast-convert", "broadcast",
      "call", "cbrt", "ceil", "cholesky", "clamp", "collective-broadcast", "collective-permute",
      "collective-permute-done", "collective-permute-start", "compare", "complex", "concatenate", "conditional",
      "constant", "convert", "convolution", "copy", "copy-done", "copy-start", "cosine", "count-leading-zeros",
      "custom-call", "divide", "domain", "dot", "dynamic-reshape", "dynamic-slice", "dynamic-update-slice", "erf",
      "erf-inv", "exponential", "exponential-minus-one", "fft", "floor", "fusion", "gather", "get-dimension-size",
      "get-tuple-element", "imag", "infeed", "iota", "is-finite", "log", "log-plus-one", "logistic", "map", "maximum",
      "minimum", "multiply", "negate", "not", "opt-barrier", "or", "outfeed", "pad", "parameter", "partition-id",
      "popcnt", "power", "ragged-all-to-all", "real", "recv", "recv-done", "reduce", "reduce-precision",
      "reduce-scatter", "reduce-window", "remainder", "replica-id", "reshape", "reverse", "rng", "rng-bit-generator",
      "rng-get-and-update-state", "round-nearest-afz", "round-nearest-even", "rsqrt", "scatter", "select",
      "select-and-scatter", "send", "send-done", "set-dimension-size", "shift-left", "shift-right-arithmetic",
      "shift-right-logical", "sign", "sine", "slice", "sort", "sqrt", "stochastic-convert", "subtract", "tan", "tanh",
      "topk", "transpose", "triangular-solve", "tuple", "while", "xor"};
  return ops.count(op) > 0;
}

bool is_sharding_marker(const std::string& target) {
  return target == "Sharding" || target == "SPMDFullToShardShape" || target == "SPMDShardToFullShape";
}

}  // namespace tpusim::hlo
