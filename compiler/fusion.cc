#include "compiler/fusion.h"
#include "compiler/fusion_groups.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>

#include <boost/graph/topological_sort.hpp>

namespace tpusim::compiler {

using models::OpKind;

namespace {

bool is_view(const models::Node& n) { return n.kind == OpKind::kReshape; }
bool is_vector_op(const models::Node& n) {
  return n.kind == OpKind::kElementwise || n.kind == OpKind::kBroadcast || n.kind == OpKind::kConvert ||
         n.kind == OpKind::kTranspose || n.kind == OpKind::kReshape || n.kind == OpKind::kIota ||
         n.kind == OpKind::kGather || n.kind == OpKind::kScatterAdd || n.kind == OpKind::kSlice ||
         n.kind == OpKind::kConcatenate;
}

bool reduce_fits_producer(const models::Graph& g, const Fusion& p, const models::Node& red) {
  return p.kind == FusionKind::kLoop || fusion_groups::reduce_fits_dot(g, p.dot, red);
}

// An asynchronous collective reads its operands until it ends: until its done, or until the next
// asynchronous collective starts (they run one at a time on the background queues), whichever comes
// first. That kernel lists them as inputs too, so that the memory plan keeps them live until then.
void async_operands_live_until_done(const models::Graph& g, FusionPlan& plan) {
  std::map<int, size_t> writer;
  for (size_t k = 0; k < plan.fusions.size(); ++k)
    for (int x : kernel_outputs(plan.fusions[k])) writer[x] = k;
  auto is_async = [&](const Fusion& f) {
    return f.kind == FusionKind::kCollective && g.node(f.root).collective.async;
  };
  std::vector<std::vector<int>> operands;  // each kernel's own inputs, before any is added below
  for (const Fusion& f : plan.fusions) operands.push_back(f.inputs);
  for (size_t k = 0; k < plan.fusions.size(); ++k) {
    if (!is_async(plan.fusions[k])) continue;
    size_t end = plan.fusions.size();
    for (size_t j = k + 1; j < plan.fusions.size() && end == plan.fusions.size(); ++j) {
      const Fusion& f = plan.fusions[j];
      if (is_async(f)) end = j;
      if (f.kind == FusionKind::kCollectiveDone)
        for (int x : f.inputs)
          if (auto w = writer.find(x); w != writer.end() && w->second == k) end = j;
    }
    if (end == plan.fusions.size()) continue;
    Fusion& e = plan.fusions[end];
    std::set<int> in(e.inputs.begin(), e.inputs.end());
    for (int x : operands[k])
      if (in.insert(x).second) e.inputs.push_back(x);
  }
}

}  // namespace

FusionPlan plan_fusions(const models::Graph& g) {
  const auto& nodes = g.nodes();
  const int n = int(nodes.size());
  HloGraph hlo(n);
  for (const auto& node : nodes)
    for (int in : node.inputs) boost::add_edge(in, node.id, hlo);

  std::vector<int> topo(size_t(n), 0);
  if (g.scheduled()) {
    for (int i = 0; i < n; ++i) topo[size_t(i)] = i;  // node ids are a topological order, and the schedule
  } else {
    std::vector<HloGraph::vertex_descriptor> rev;
    boost::topological_sort(hlo, std::back_inserter(rev));
    topo.assign(rev.rbegin(), rev.rend());
  }

  FusionPlan plan;
  plan.users.assign(n, {});
  for (int v = 0; v < n; ++v)
    for (auto [e, end] = boost::out_edges(v, hlo); e != end; ++e) plan.users[v].push_back(int(boost::target(*e, hlo)));

  std::set<int> outputs(g.outputs().begin(), g.outputs().end());
  // Users seen through views/transposes (a reshape or transpose of x feeding a dot makes x a dot operand).
  std::function<void(int, std::vector<int>&)> effective_users = [&](int v, std::vector<int>& out) {
    for (int u : plan.users[v]) {
      const auto& un = nodes[u];
      if ((un.kind == OpKind::kReshape || un.kind == OpKind::kTranspose) && !outputs.count(u))
        effective_users(u, out);
      else
        out.push_back(u);
    }
  };

  // An already-fused graph: each group not split is one kernel (fusion.h).
  const bool grouped = std::any_of(nodes.begin(), nodes.end(), [](const models::Node& x) { return x.group >= 0; });
  std::vector<int> group;
  std::vector<bool> split;
  if (grouped) {
    group = fusion_groups::planning_groups(g);
    split.assign(size_t(*std::max_element(group.begin(), group.end())) + 1, false);
    for (const GroupSplit& s : split_groups(g)) split[size_t(s.group)] = true;
  }

  auto& mat = plan.materialized;
  mat.assign(n, false);
  std::vector<bool> cone_dot(n, false);  // the value's kernel (so far) contains a dot
  // A collective reads materialized operands (seen through views).
  auto materialize_operands = [&](const models::Node& node) {
    for (int in : node.inputs) {
      int src = in;
      while (is_view(nodes[src])) src = nodes[src].inputs[0];
      if (nodes[src].kind != OpKind::kConstant) mat[src] = true;
    }
  };
  for (int v : topo) {
    const auto& node = nodes[v];
    const int grp = grouped ? group[size_t(v)] : -1;
    if (grouped && grp < 0 && is_view(node) && outputs.count(v)) {
      // An output that is a view of a kernel's result (XLA's ENTRY bitcast): that result's buffer,
      // which used_outside materializes; no copy kernel (the memory plan keeps it to the end).
      mat[v] = false;
      continue;
    }
    if (grp >= 0 && !split[size_t(grp)]) {
      // A kept group: what leaves it is written, the rest computed inside its one kernel.
      if (node.kind == OpKind::kCollective) materialize_operands(node);
      mat[v] = node.kind != OpKind::kConstant &&
               (node.kind == OpKind::kParameter || node.kind == OpKind::kCollective ||
                node.kind == OpKind::kCollectiveDone || outputs.count(v) ||
                (!is_view(node) && fusion_groups::used_outside(g, group, plan.users, v)));
      bool has_dot = node.kind == OpKind::kDot;
      for (int in : node.inputs) has_dot = has_dot || (!mat[in] && cone_dot[in]);
      cone_dot[v] = !mat[v] && has_dot;
      continue;
    }
    std::vector<int> eu;
    effective_users(v, eu);
    switch (node.kind) {
      case OpKind::kParameter: mat[v] = true; break;
      case OpKind::kConstant: break;
      case OpKind::kReduce: mat[v] = true; break;
      case OpKind::kCollective:
      case OpKind::kCollectiveDone:
      case OpKind::kGather:
      case OpKind::kScatterAdd:
        // Indexed row moves and collectives are their own kernels, reading materialized operands
        // (seen through views).
        mat[v] = true;
        materialize_operands(node);
        break;
      case OpKind::kDot: {
        bool epilogue = eu.size() == 1 && nodes[eu[0]].kind == OpKind::kElementwise && !outputs.count(v);
        mat[v] = !epilogue;
        cone_dot[v] = !mat[v];
        break;
      }
      default: {
        // Two dots must not meet in one kernel: materialize the second operand's value.
        int dots_in = 0;
        for (int in : node.inputs)
          if (!mat[in] && cone_dot[in] && ++dots_in > 1) mat[in] = true;
        bool has_dot = false;
        for (int in : node.inputs) has_dot = has_dot || (!mat[in] && cone_dot[in]);
        bool feeds_dot = false, feeds_reduce = false;
        for (int u : eu) {
          feeds_dot = feeds_dot || nodes[u].kind == OpKind::kDot;
          feeds_reduce = feeds_reduce || nodes[u].kind == OpKind::kReduce;
        }
        if (outputs.count(v) || node.materialize) {
          mat[v] = true;
        } else if (is_view(node)) {
          mat[v] = false;
        } else if (has_dot && (eu.size() != 1 || feeds_dot || feeds_reduce)) {
          mat[v] = true;
        } else if (feeds_dot && eu.size() > 1) {
          mat[v] = true;
        }
        cone_dot[v] = !mat[v] && has_dot;
        break;
      }
    }
    // A split group's values read by other kernels are written (it is planned by the rules above
    // within itself).
    if (grp >= 0 && !is_view(node) && node.kind != OpKind::kConstant && !mat[v] &&
        fusion_groups::used_outside(g, group, plan.users, v)) {
      mat[v] = true;
      cone_dot[v] = false;
    }
  }

  // One kernel per materialized non-parameter value: its cone of non-materialized producers.
  std::vector<int> order(n);
  for (int i = 0; i < n; ++i) order[topo[i]] = i;
  for (int v : topo) {
    if (!mat[v] || nodes[v].kind == OpKind::kParameter) continue;
    Fusion f;
    f.root = v;
    f.name = nodes[v].name;
    std::set<int> cone, inputs;
    std::function<void(int)> visit = [&](int x) {
      if (cone.count(x)) return;
      cone.insert(x);
      for (int in : nodes[x].inputs) {
        if (nodes[in].kind == OpKind::kConstant) continue;
        if (mat[in])
          inputs.insert(in);
        else
          visit(in);
      }
    };
    visit(v);
    f.nodes.assign(cone.begin(), cone.end());
    std::sort(f.nodes.begin(), f.nodes.end(), [&](int a, int b) { return order[a] < order[b]; });
    f.inputs.assign(inputs.begin(), inputs.end());
    std::sort(f.inputs.begin(), f.inputs.end(), [&](int a, int b) { return order[a] < order[b]; });
    plan.fusions.push_back(std::move(f));
  }
  if (grouped) {
    fusion_groups::merge_group_kernels(g, group, split, g.groups(), order, plan);
  } else {
    // A combined collective's parts are one kernel (models::CollectiveAttrs::combine).
    std::map<std::pair<int64_t, bool>, int> combined;  // (combine id, done) -> part
    std::vector<int> part(n, -1);
    for (const auto& x : nodes)
      if ((x.kind == OpKind::kCollective || x.kind == OpKind::kCollectiveDone) && x.collective.combine >= 0)
        part[size_t(x.id)] = combined.emplace(std::pair(x.collective.combine, x.kind == OpKind::kCollectiveDone),
                                              int(combined.size())).first->second;
    if (!combined.empty())
      fusion_groups::merge_group_kernels(g, part, std::vector<bool>(combined.size(), false), {}, order, plan);
  }
  for (auto& f : plan.fusions) {
    int dots = 0;
    for (int x : f.nodes)
      if (nodes[x].kind == OpKind::kDot) {
        f.dot = x;
        ++dots;
      }
    const int v = f.root;
    if (dots > 1) throw std::logic_error("fusion: two dots in one kernel at " + f.name);
    if (nodes[v].kind == OpKind::kCollective)
      f.kind = FusionKind::kCollective;
    else if (nodes[v].kind == OpKind::kCollectiveDone)
      f.kind = FusionKind::kCollectiveDone;
    else if (nodes[v].kind == OpKind::kReduce)
      f.kind = FusionKind::kReduce;
    else if (f.dot >= 0)
      f.kind = FusionKind::kDot;
    else
      f.kind = FusionKind::kLoop;
    if (f.kind == FusionKind::kReduce && f.dot >= 0) throw std::logic_error("fusion: reduction of a dot in one kernel");
    if (f.kind == FusionKind::kLoop && !is_vector_op(nodes[v]))
      throw std::logic_error("fusion: unexpected root kind at " + f.name);
  }

  // Multi-output fusion of reductions into the kernel producing their only operand.
  std::vector<Fusion> merged;
  for (auto& f : plan.fusions) {
    if (f.kind == FusionKind::kReduce && f.nodes.size() == 1 && f.inputs.size() == 1) {
      const int x = f.inputs[0];
      auto producer = std::find_if(merged.begin(), merged.end(), [&](const Fusion& p) { return p.root == x; });
      // An already-fused graph's kernels are its groups: a reduction joins its producer only
      // within a split group.
      const bool same_group = !grouped || (producer != merged.end() && group[size_t(x)] >= 0 &&
                                           group[size_t(x)] == group[size_t(f.root)]);
      if (producer != merged.end() && same_group && producer->kind != FusionKind::kReduce && producer->kind != FusionKind::kCollective &&
          producer->kind != FusionKind::kCollectiveDone &&
          reduce_fits_producer(g, *producer, nodes[f.root])) {
        producer->merged_reduces.push_back(f.root);
        continue;
      }
    }
    merged.push_back(std::move(f));
  }
  plan.fusions = std::move(merged);
  async_operands_live_until_done(g, plan);
  // Kernel names are unique within a program (they label trace events and reports), like XLA's
  // "fusion.N": the root's name, suffixed when it repeats.
  std::map<std::string, int> seen_names;
  for (auto& f : plan.fusions) {
    int k = seen_names[f.name]++;
    if (k > 0) f.name.append(".").append(std::to_string(k));
  }
  return plan;
}

}  // namespace tpusim::compiler
