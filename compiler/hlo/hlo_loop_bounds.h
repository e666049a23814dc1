// The trip count of an HLO `while` read from the module's text (the import simulates the body that
// many times; docs/hlo.md, "Import").
#pragma once
#include <cstdint>
#include <optional>

#include "compiler/hlo/hlo_ast.h"

namespace tpusim::hlo {

// From the loop's own bounds: the condition (computation `cond`) compares one element of the carried
// tuple (a counter) against a constant; the while's operand is a tuple whose counter element is a
// constant; the body (computation `body`) returns the counter plus (or minus) a constant. Directions
// LT, LE, GT, GE and NE; nullopt when the loop has any other form or never ends.
std::optional<int64_t> loop_trip_count(const Module& m, const Computation& caller, const Instruction& w, int cond, int body);

// XLA's own annotation on a while: backend_config={"known_trip_count":{"n":"10"}}.
std::optional<int64_t> annotated_trip_count(const Instruction& w);

}  // namespace tpusim::hlo
