// What the HLO importer and its statistics share (internal to compiler/hlo): saturating sums of
// text-given sizes, a shape's bytes, an operand's shape, and the flops of a dot or convolution as the
// module's text gives them (HloStats, docs/hlo.md "Statistics").
#pragma once
#include <cstddef>
#include <cstdint>

#include "compiler/hlo/hlo_ast.h"

namespace tpusim::hlo {

// Products of text-given sizes can exceed 64 bits (a fuzzed 2^48-element dot): saturate.
uint64_t sat(unsigned __int128 x);
uint64_t sat_add(uint64_t a, uint64_t b);
// Packed sub-byte types round up to whole bytes per array; tuples sum their leaves.
uint64_t shape_bytes(const Shape& s);
const Shape& operand_shape(const Computation& c, const Instruction& in, size_t i);
// 2 x output elements x contracted size (models::dot_flops' rule), from the text's shapes.
uint64_t dot_flops_of(const Module& m, const Computation& c, const Instruction& in);
// 2 x output elements x kernel spatial size x input features / feature_group_count.
uint64_t convolution_flops_of(const Module& m, const Computation& c, const Instruction& in);

}  // namespace tpusim::hlo
