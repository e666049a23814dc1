#include "compiler/hlo/hlo_loop_bounds.h"

#include <cctype>
#include <cmath>
#include <string>

#include "compiler/hlo/hlo_attrs.h"

namespace tpusim::hlo {
namespace {

// The integer value of a scalar constant instruction.
std::optional<int64_t> constant_value(const Computation& c, int i) {
  const Instruction& in = c.instructions.at(i);
  if (in.opcode != "constant" || !in.literal || !in.literal->scalar || !in.shape.dims.empty()) return std::nullopt;
  const double v = *in.literal->scalar;
  if (!std::isfinite(v) || v != std::floor(v) || std::fabs(v) > 9e15) return std::nullopt;
  return int64_t(v);
}

// The tuple index of `get-tuple-element(parameter(0)), index=k`.
std::optional<int64_t> carried_index(const Module& m, const Computation& c, int i) {
  const Instruction& in = c.instructions.at(i);
  if (in.opcode != "get-tuple-element" || in.operands.size() != 1) return std::nullopt;
  const Instruction& p = c.instructions.at(in.operands[0]);
  if (p.opcode != "parameter" || p.parameter_number != 0) return std::nullopt;
  return int_attr(m, in, "index");
}

int64_t ceil_div(int64_t a, int64_t b) { return a / b + ((a % b != 0) && ((a < 0) == (b < 0))); }

}  // namespace

std::optional<int64_t> loop_trip_count(const Module& m, const Computation& caller, const Instruction& w, int cond, int body) {
  // The condition: compare(counter, N) (or N against the counter, the direction mirrored).
  const Computation& cc = m.computations.at(cond);
  const Instruction& cmp = cc.root_instruction();
  if (cmp.opcode != "compare" || cmp.operands.size() != 2) return std::nullopt;
  std::string dir = direction_attr(m, cmp).value_or("");
  std::optional<int64_t> k = carried_index(m, cc, cmp.operands[0]);
  std::optional<int64_t> limit = constant_value(cc, cmp.operands[1]);
  if (!k) {
    k = carried_index(m, cc, cmp.operands[1]);
    limit = constant_value(cc, cmp.operands[0]);
    dir = dir == "LT" ? "GT" : dir == "GT" ? "LT" : dir == "LE" ? "GE" : dir == "GE" ? "LE" : dir;
  }
  if (!k || !limit || *k < 0) return std::nullopt;
  // The start: the counter's element of the while's operand tuple.
  if (w.operands.size() != 1) return std::nullopt;
  const Instruction& init = caller.instructions.at(w.operands[0]);
  if (init.opcode != "tuple" || *k >= int64_t(init.operands.size())) return std::nullopt;
  const std::optional<int64_t> start = constant_value(caller, init.operands[size_t(*k)]);
  // The step: the body's result tuple holds counter + s (either order) or counter - s.
  const Computation& bc = m.computations.at(body);
  const Instruction& out = bc.root_instruction();
  if (!start || out.opcode != "tuple" || *k >= int64_t(out.operands.size())) return std::nullopt;
  const Instruction& next = bc.instructions.at(out.operands[size_t(*k)]);
  if (next.operands.size() != 2 || (next.opcode != "add" && next.opcode != "subtract")) return std::nullopt;
  std::optional<int64_t> step;
  if (carried_index(m, bc, next.operands[0]) == k) step = constant_value(bc, next.operands[1]);
  else if (next.opcode == "add" && carried_index(m, bc, next.operands[1]) == k) step = constant_value(bc, next.operands[0]);
  if (!step || *step == 0) return std::nullopt;
  const int64_t s = next.opcode == "subtract" ? -*step : *step, n = *limit, i0 = *start;
  // Iterations while `i dir n` holds, i = i0, i0 + s, ...
  if (dir == "LT" && s > 0) return std::max<int64_t>(0, ceil_div(n - i0, s));
  if (dir == "LE" && s > 0) return n < i0 ? 0 : (n - i0) / s + 1;
  if (dir == "GT" && s < 0) return std::max<int64_t>(0, ceil_div(i0 - n, -s));
  if (dir == "GE" && s < 0) return n > i0 ? 0 : (i0 - n) / -s + 1;
  if (dir == "NE" && (n - i0) % s == 0 && (n - i0) / s >= 0) return (n - i0) / s;
  return std::nullopt;
}

std::optional<int64_t> annotated_trip_count(const Instruction& w) {
  const Attribute* a = w.attr("backend_config");
  if (!a) return std::nullopt;
  const std::string& v = a->value;
  const size_t key = v.find("\"known_trip_count\"");
  if (key == std::string::npos) return std::nullopt;
  const size_t end = v.find('}', key);
  size_t p = v.find("\"n\"", key);
  if (p == std::string::npos || p > end) return std::nullopt;
  p = v.find_first_of("0123456789", p);
  if (p == std::string::npos || p > end) return std::nullopt;
  int64_t n = 0;
  for (; p < end && std::isdigit(static_cast<unsigned char>(v[p])); ++p) {
    n = n * 10 + (v[p] - '0');
    if (n > (int64_t(1) << 40)) return std::nullopt;
  }
  return n;
}

}  // namespace tpusim::hlo
