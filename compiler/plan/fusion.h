// Fusion: which values are materialized in HBM, and which ops are computed inside whose kernel.
//
// Rules (after XLA's instruction fusion on TPU):
//  * Parameters, reductions, graph outputs and values marked `materialize` (results of ops XLA
//    computes with their own emitter) are materialized (a reduction ends its fusion).
//  * A dot is materialized unless its single user is element-wise and it is not marked
//    `materialize`: then that user joins the dot's kernel as an output ("epilogue") fusion (bias
//    add, scale, ReLU, residual add).
//  * An element-wise value whose kernel contains a dot is materialized when it has more than one
//    user or its user is a reduction or another dot.
//  * An element-wise value that feeds a dot operand and has other users is materialized.
//  * Every other element-wise value is not materialized: it is recomputed inside each consumer's
//    kernel (producer-into-consumer fusion, duplicating cheap ops). Single-use element-wise
//    producers of a dot operand become that dot's operand ("prologue") fusion.
//  * Reshapes are views; transposes feeding a dot are absorbed into its dimension numbers.
//  * Producer-consumer multi-output fusion: a reduction that reads nothing but the value another
//    kernel produces is computed in that kernel as a second output, saving a pass over HBM
//    (for a dot producer, the reduced extent must fit one output tile).
//  * A collective (models::OpKind::kCollective) is a kernel of its own (FusionKind::kCollective):
//    its operand (seen through reshapes) and its result are materialized in HBM, where the
//    transfers between cores read and write them; nothing fuses into it or it into anything.
//    The parts of a combined collective (models::CollectiveAttrs::combine) are one such kernel, its
//    other parts extra_outputs, placed where all its operands are ready.
//  * A flash attention call (models::OpKind::kAttention: its parts, one call) is a kernel of its own
//    (FusionKind::kAttention), its operands and outputs materialized, its other parts extra_outputs.
//  * A collective's done (models::OpKind::kCollectiveDone) is a kernel of its own without work
//    (FusionKind::kCollectiveDone): the point where the core waits for the collective; the dones of
//    a combined collective's parts are one.
//  * A host copy (models::OpKind::kHostOffload, kHostReload) is a kernel of its own
//    (FusionKind::kHostCopy): one transfer over PCIe, its operand and result materialized (an
//    offload's result in host memory: compiler/plan/memory_plan.h).
//
// Kernel order: a topological order of the graph; a scheduled graph's (models::Graph::scheduled)
// is its node order (the kernels ordered by their roots' ids).
//
// An already-fused graph (nodes in fusion groups, models::Node::group: an XLA after-optimizations
// module's `fusion` instructions and unfused instructions) keeps its kernels instead: each group is
// one kernel named after it, computing all its nodes and writing every value that leaves it (one
// root; reductions as merged_reduces, other values as extra_outputs). Only what is used outside its
// group, a graph output or a parameter is materialized; views (reshapes) stay views. A group one
// kernel cannot hold (split_groups) is planned by the rules above within it, its kernels all named
// after it (fusion_groups.cc).
#pragma once
#include <string>
#include <vector>

#include <boost/graph/adjacency_list.hpp>

#include "models/graph.h"

namespace tpusim::compiler {

// The HLO-like module: the op graph as a Boost graph (edge u->v: v reads u).
using HloGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS>;

enum class FusionKind { kLoop, kReduce, kDot, kCollective, kCollectiveDone, kAttention, kHostCopy };

struct Fusion {
  FusionKind kind = FusionKind::kLoop;
  std::string name;
  int root = -1;            // the materialized value this kernel produces
  int dot = -1;             // kDot: the dot node
  std::vector<int> nodes;   // ops computed in this kernel (topological order), root last
  std::vector<int> inputs;  // materialized values it reads (parameters or other kernels' roots)
  std::vector<int> merged_reduces;  // reductions of `root` computed here as extra outputs
  // Other values this kernel writes to HBM beside `root` (an already-fused group's multi-output
  // fusion: the elements of XLA's tuple root), each of the iteration space's size or less.
  std::vector<int> extra_outputs;
};

// Every value a kernel writes: its root, merged reductions and extra outputs.
inline std::vector<int> kernel_outputs(const Fusion& f) {
  std::vector<int> out = {f.root};
  out.insert(out.end(), f.merged_reduces.begin(), f.merged_reduces.end());
  out.insert(out.end(), f.extra_outputs.begin(), f.extra_outputs.end());
  return out;
}

struct FusionPlan {
  std::vector<Fusion> fusions;       // in execution (topological) order
  std::vector<bool> materialized;    // per graph node
  std::vector<std::vector<int>> users;
};

FusionPlan plan_fusions(const models::Graph& g);

// A fusion group of an already-fused graph that one kernel cannot hold, and why (the lowering's
// kernel kinds: one dot, a reduction only at the end, ...): plan_fusions splits it, and the HLO
// import lists it as not modelled exactly.
struct GroupSplit {
  int group = -1;
  std::string reason;
};
std::vector<GroupSplit> split_groups(const models::Graph& g);

}  // namespace tpusim::compiler
