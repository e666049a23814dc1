// The per-op builders of the HLO import (hlo_import.cc dispatches to them; docs/hlo.md, "Import",
// lists how each op is costed). Each returns the graph node of one instruction's array result, or
// nullopt when the instruction's form is outside what it models (the importer then stands in an
// input); it sets `approx` when the node only costs like the instruction (listed as unmodelled), and
// throws HloError when the instruction's shapes are inconsistent (a malformed module).
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/hlo/hlo_ast.h"
#include "models/graph.h"

namespace tpusim::hlo::import_ops {

struct OpArgs {
  const Module& m;
  models::Graph& g;
  const Instruction& in;
  const std::vector<int>& ops;  // the operands' nodes (every one an array node)
  models::DType dtype;          // the result's graph element type
  std::string& approx;          // what stands in, when the node only costs like the instruction
};

// HloError at the instruction: `value` is what was found, `rule` says what is wrong and expected.
[[noreturn]] void shape_error(const Module& m, const Instruction& in, std::string value, std::string rule);

// The element-wise opcodes of the table (add, ..., erf-inv).
bool is_elementwise(std::string_view op);
// Element-wise ops, power, compare, select, clamp.
std::optional<int> build_elementwise(const OpArgs& a);
std::optional<int> build_reduce(const OpArgs& a);
std::optional<int> build_gather(const OpArgs& a);
std::optional<int> build_scatter(const OpArgs& a);
// Data movement: pad, reverse, dynamic-slice, dynamic-update-slice.
std::optional<int> build_movement(const OpArgs& a);
std::optional<int> build_convolution(const OpArgs& a);
// Windowed ops: reduce-window, select-and-scatter.
std::optional<int> build_window(const OpArgs& a);
// rng: a VPU random draw of the result's shape (the graph's dropout mask at rate 0).
int random_draw(models::Graph& g, const models::Dims& shape, models::DType dtype, const std::string& name);
// One operand of a sort along `dim`: log2(n) VPU compare passes over every element.
int sort_cost(models::Graph& g, int x, int dim, const std::string& name);
// map: the to_apply computation's `body_ops` scalar ops per element over the operands.
int map_cost(models::Graph& g, const std::vector<int>& ops, int64_t body_ops, const std::string& name);
// An op that reads every operand once and writes a result of `shape` (unknown custom-calls, forms of
// scatter and dynamic-update-slice the graph has no op for): each operand summed to a scalar (its
// own pass over HBM), the sums broadcast and added into the result.
int touch(models::Graph& g, const std::vector<int>& ops, const models::Dims& shape, models::DType dtype,
          const std::string& name);

}  // namespace tpusim::hlo::import_ops
