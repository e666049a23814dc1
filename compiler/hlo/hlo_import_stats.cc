#include "compiler/hlo/hlo_import_stats.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <optional>

#include "compiler/hlo/hlo_attrs.h"
#include "compiler/hlo/hlo_import.h"

namespace tpusim::hlo {

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

}  // namespace tpusim::hlo
