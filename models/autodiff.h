// Reverse-mode differentiation of the op graph (the backward pass a framework's autograd records).
//
// build_backward appends, to the same graph, the vector-Jacobian products of every op on a path
// from the given parameters to the loss, walking nodes in reverse topological order (node ids are
// topological: inputs always precede their users). Coverage:
//   * dot: two dots with swapped roles (DotGeneral VJP), each followed by a transpose when its
//     natural output order differs from the operand's layout;
//   * element-wise add/sub/mul/div/max/neg/relu/exp/log/sqrt/rsqrt/tanh/erf; compares and dropout
//     masks are piecewise constant (no gradient flows through them);
//   * broadcast -> reduce-sum over the new dims; reduce-sum -> broadcast; reduce-max -> the
//     gradient routed to the arg-max through an equality mask;
//   * reshape, transpose (inverse permutation), convert (back to the operand's dtype);
//   * gather -> scatter-add into the table; scatter-add -> gather.
// Constants, iotas, integer tensors and values marked stop_gradient get no gradient. A value used
// several times accumulates its gradient contributions with adds.
#pragma once
#include <vector>

#include "models/graph.h"

namespace tpusim::models {

struct Gradients {
  std::vector<int> params;  // as passed to build_backward
  std::vector<int> grads;   // grads[i]: d loss / d params[i], same shape and dtype as params[i]
  // The gradient node of `param`; throws std::invalid_argument if it was not differentiated.
  int of(int param) const;
};

// `loss` is any float node (usually a scalar); its seed gradient is ones. A parameter the loss
// does not depend on gets a zero gradient. Backward nodes are named after the forward node they
// differentiate ("<name>.grad_lhs" / ".grad_rhs" for the two dots of a dot's VJP), so reports can
// attribute backward work to the layer that caused it.
Gradients build_backward(Graph& g, int loss, const std::vector<int>& params);

}  // namespace tpusim::models
