// The key of lowering one fusion into a core's stream (compiler/lower/kernel_cache.h): everything
// lower_dot_kernel and lower_vector_kernel read, without names and node ids.
//
// The fusion's nodes (its ops, inputs, merged reductions, extra outputs, root and dot), the nodes
// they read, and those nodes' operands as leaves are numbered in that order; each is keyed by
// every field of models::Node that describes its value (kind, dtype, shape, operands by number,
// op attributes, role, whether its buffer is in CMEM), with the rank of its id among them (sets
// of nodes are ordered by id) and the first node of the same name (a label names a node: equal
// names share one label). With them: the fusion's lists, the VMEM the kernel may use, the
// background flag, whether kernels are rerolled, the hardware, and the distances of the kernel's
// entry deps from its first instruction.
#pragma once
#include <optional>
#include <vector>

#include "compiler/lower/kernel_cache.h"
#include "compiler/lower/lowering.h"

namespace tpusim::compiler {

struct KernelShape {
  KernelKey key;
  std::vector<int> nodes;  // graph node ids in key order (a record's LabelUse::node indexes them)
};

// The key of lowering `f` next on `cx.pb`; none when the kernel is not to be cached (a node named
// like one of lowering's own labels, TPUSIM_DEBUG_TILING set).
std::optional<KernelShape> kernel_shape(const LowerContext& cx, const Fusion& f);

}  // namespace tpusim::compiler
