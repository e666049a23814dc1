// The kernels of an already-fused graph (fusion groups, models::Node::group): the parts of
// plan_fusions (compiler/plan/fusion.h) that keep an XLA after-optimizations module's fusions as kernels.
// Internal to the fusion pass.
#pragma once
#include <string>
#include <vector>

#include "compiler/plan/fusion.h"
#include "models/graph.h"

namespace tpusim::compiler::fusion_groups {

// A dot kernel can reduce its output over a dimension only if one output tile spans it: the
// tiling caps tiles at 2048 streamed rows, so the reduced extent (all of M or N) must be <= that.
bool reduce_fits_dot(const models::Graph& g, int dot, const models::Node& red);

// The group each node is planned in: its own, or for a compute node without one (an op the import
// made outside any instruction's group) a group of its own numbered after the graph's; -1 for
// parameters, constants and views (reshapes) without a group.
std::vector<int> planning_groups(const models::Graph& g);

// Whether `v` is read outside group `group[v]` (seen through views, which are never materialized
// but as outputs), given the graph's users.
bool used_outside(const models::Graph& g, const std::vector<int>& group, const std::vector<std::vector<int>>& users,
                  int v);

// Merges the kernels of each group not split into one (fusion.h's rules for the root, merged
// reductions and extra outputs), names every kernel of a group below names.size() after it, and
// orders the kernels topologically again (a merged kernel reads what each of its parts read).
// `order`: each node's position in a topological order. Also used for combined collectives
// (models::CollectiveAttrs::combine), each combined one a group.
void merge_group_kernels(const models::Graph& g, const std::vector<int>& group, const std::vector<bool>& split,
                         const std::vector<std::string>& names, const std::vector<int>& order, FusionPlan& plan);

}  // namespace tpusim::compiler::fusion_groups
