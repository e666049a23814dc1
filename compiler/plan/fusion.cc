// plan_fusions as a sequence of passes over the graph in topological order (fusion.h has the
// rules): which values are materialized, one kernel per materialized value, the kernels of fusion
// groups and combined collectives merged, each kernel's kind, reductions merged into their
// producers, asynchronous collectives' operands kept live until they end, unique names.
#include "compiler/plan/fusion.h"
#include "compiler/plan/fusion_groups.h"

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

// What every pass reads: the graph in topological order, its outputs and, for an already-fused
// graph, the group each node is planned in and which groups are split.
struct PlanningGraph {
  const models::Graph& g;
  const std::vector<models::Node>& nodes;
  std::vector<int> topo;   // node ids in topological order (a scheduled graph's: its node order)
  std::vector<int> order;  // each node's position in topo
  std::set<int> outputs;
  bool grouped = false;
  std::vector<int> group;   // grouped: fusion_groups::planning_groups
  std::vector<bool> split;  // grouped: per group, split_groups lists it

  explicit PlanningGraph(const models::Graph& graph) : g(graph), nodes(graph.nodes()) {}
};

// The topological order (through the Boost graph) and the users of every node.
PlanningGraph planning_graph(const models::Graph& g, FusionPlan& plan) {
  PlanningGraph pg(g);
  const int n = int(pg.nodes.size());
  HloGraph hlo(n);
  for (const auto& node : pg.nodes)
    for (int in : node.inputs) boost::add_edge(in, node.id, hlo);
  if (g.scheduled()) {
    pg.topo.resize(size_t(n));
    for (int i = 0; i < n; ++i) pg.topo[size_t(i)] = i;  // node ids are a topological order, and the schedule
  } else {
    std::vector<HloGraph::vertex_descriptor> rev;
    boost::topological_sort(hlo, std::back_inserter(rev));
    pg.topo.assign(rev.rbegin(), rev.rend());
  }
  pg.order.assign(n, 0);
  for (int i = 0; i < n; ++i) pg.order[pg.topo[i]] = i;
  plan.users.assign(n, {});
  for (int v = 0; v < n; ++v)
    for (auto [e, end] = boost::out_edges(v, hlo); e != end; ++e) plan.users[v].push_back(int(boost::target(*e, hlo)));
  pg.outputs.insert(g.outputs().begin(), g.outputs().end());
  // An already-fused graph: each group not split is one kernel (fusion.h).
  pg.grouped = std::any_of(pg.nodes.begin(), pg.nodes.end(), [](const models::Node& x) { return x.group >= 0; });
  if (pg.grouped) {
    pg.group = fusion_groups::planning_groups(g);
    pg.split.assign(size_t(*std::max_element(pg.group.begin(), pg.group.end())) + 1, false);
    for (const GroupSplit& s : split_groups(g)) pg.split[size_t(s.group)] = true;
  }
  return pg;
}

// Pass 1: which values are materialized (plan.materialized), visiting the nodes in topological
// order; a value is decided before its users.
class Materialize {
 public:
  Materialize(const PlanningGraph& pg, FusionPlan& plan)
      : pg_(pg), nodes_(pg.nodes), users_(plan.users), mat_(plan.materialized), cone_dot_(pg.nodes.size(), false) {
    mat_.assign(pg.nodes.size(), false);
  }

  void run() {
    for (int v : pg_.topo) {
      const int grp = pg_.grouped ? pg_.group[size_t(v)] : -1;
      if (pg_.grouped && grp < 0 && is_view(nodes_[v]) && pg_.outputs.count(v)) {
        // An output that is a view of a kernel's result (XLA's ENTRY bitcast): that result's buffer,
        // which used_outside materializes; no copy kernel (the memory plan keeps it to the end).
        mat_[v] = false;
        continue;
      }
      if (grp >= 0 && !pg_.split[size_t(grp)]) {
        in_kept_group(v);
        continue;
      }
      by_rules(v);
      // A split group's values read by other kernels are written (it is planned by the rules
      // above within itself).
      if (grp >= 0 && !is_view(nodes_[v]) && nodes_[v].kind != OpKind::kConstant && !mat_[v] &&
          fusion_groups::used_outside(pg_.g, pg_.group, users_, v)) {
        mat_[v] = true;
        cone_dot_[v] = false;
      }
    }
  }

 private:
  // Users seen through views/transposes (a reshape or transpose of x feeding a dot makes x a dot operand).
  void effective_users(int v, std::vector<int>& out) const {
    for (int u : users_[v]) {
      const auto& un = nodes_[u];
      if ((un.kind == OpKind::kReshape || un.kind == OpKind::kTranspose) && !pg_.outputs.count(u))
        effective_users(u, out);
      else
        out.push_back(u);
    }
  }

  // A collective reads materialized operands (seen through views).
  void materialize_operands(const models::Node& node) {
    for (int in : node.inputs) {
      int src = in;
      while (is_view(nodes_[src])) src = nodes_[src].inputs[0];
      if (nodes_[src].kind != OpKind::kConstant) mat_[src] = true;
    }
  }

  // Whether an input of `node` brings a dot into its kernel.
  bool has_dot_input(const models::Node& node) const {
    bool has_dot = false;
    for (int in : node.inputs) has_dot = has_dot || (!mat_[in] && cone_dot_[in]);
    return has_dot;
  }

  // A kept group: what leaves it is written, the rest computed inside its one kernel.
  void in_kept_group(int v) {
    const auto& node = nodes_[v];
    if (node.kind == OpKind::kCollective) materialize_operands(node);
    mat_[v] = node.kind != OpKind::kConstant &&
              (node.kind == OpKind::kParameter || node.kind == OpKind::kCollective ||
               node.kind == OpKind::kCollectiveDone || pg_.outputs.count(v) ||
               (!is_view(node) && fusion_groups::used_outside(pg_.g, pg_.group, users_, v)));
    cone_dot_[v] = !mat_[v] && (node.kind == OpKind::kDot || has_dot_input(node));
  }

  // fusion.h's rules, by the op's kind.
  void by_rules(int v) {
    const auto& node = nodes_[v];
    std::vector<int> eu;
    effective_users(v, eu);
    switch (node.kind) {
      case OpKind::kParameter: mat_[v] = true; break;
      case OpKind::kConstant: break;
      case OpKind::kReduce: mat_[v] = true; break;
      case OpKind::kCollective:
      case OpKind::kCollectiveDone:
      case OpKind::kHostOffload:
      case OpKind::kHostReload:
      case OpKind::kGather:
      case OpKind::kScatterAdd:
      case OpKind::kAttention:
        // Indexed row moves, collectives and attention kernels are their own kernels, reading
        // materialized operands (seen through views).
        mat_[v] = true;
        materialize_operands(node);
        break;
      case OpKind::kDot: {
        bool epilogue = eu.size() == 1 && nodes_[eu[0]].kind == OpKind::kElementwise && !pg_.outputs.count(v);
        mat_[v] = !epilogue || node.materialize;
        cone_dot_[v] = !mat_[v];
        break;
      }
      default: vector_value(v, eu); break;
    }
  }

  // An element-wise (or other vector) value: recomputed in its users' kernels unless a rule
  // materializes it.
  void vector_value(int v, const std::vector<int>& eu) {
    const auto& node = nodes_[v];
    // Two dots must not meet in one kernel: materialize the second operand's value.
    int dots_in = 0;
    for (int in : node.inputs)
      if (!mat_[in] && cone_dot_[in] && ++dots_in > 1) mat_[in] = true;
    const bool has_dot = has_dot_input(node);
    bool feeds_dot = false, feeds_reduce = false;
    for (int u : eu) {
      feeds_dot = feeds_dot || nodes_[u].kind == OpKind::kDot;
      feeds_reduce = feeds_reduce || nodes_[u].kind == OpKind::kReduce;
    }
    if (pg_.outputs.count(v) || node.materialize) {
      mat_[v] = true;
    } else if (is_view(node)) {
      mat_[v] = false;
    } else if (has_dot && (eu.size() != 1 || feeds_dot || feeds_reduce)) {
      mat_[v] = true;
    } else if (feeds_dot && eu.size() > 1) {
      mat_[v] = true;
    }
    cone_dot_[v] = !mat_[v] && has_dot;
  }

  const PlanningGraph& pg_;
  const std::vector<models::Node>& nodes_;
  const std::vector<std::vector<int>>& users_;
  std::vector<bool>& mat_;
  std::vector<bool> cone_dot_;  // the value's kernel (so far) contains a dot
};

// Pass 2: one kernel per materialized non-parameter value: its cone of non-materialized producers.
void form_kernels(const PlanningGraph& pg, FusionPlan& plan) {
  const auto& nodes = pg.nodes;
  const auto& mat = plan.materialized;
  auto by_order = [&](int a, int b) { return pg.order[a] < pg.order[b]; };
  for (int v : pg.topo) {
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
    std::sort(f.nodes.begin(), f.nodes.end(), by_order);
    f.inputs.assign(inputs.begin(), inputs.end());
    std::sort(f.inputs.begin(), f.inputs.end(), by_order);
    plan.fusions.push_back(std::move(f));
  }
}

// Pass 3: the kernels of each kept fusion group, or of each combined collective's parts
// (models::CollectiveAttrs::combine), merged into one.
void merge_groups(const PlanningGraph& pg, FusionPlan& plan) {
  if (pg.grouped) {
    fusion_groups::merge_group_kernels(pg.g, pg.group, pg.split, pg.g.groups(), pg.order, plan);
    return;
  }
  // (id, what) -> part: what 0 a combined collective, 1 its done, 2 an attention call's parts.
  std::map<std::pair<int64_t, int>, int> combined;
  std::vector<int> part(pg.nodes.size(), -1);
  for (const auto& x : pg.nodes) {
    std::pair<int64_t, int> key{-1, 0};
    if ((x.kind == OpKind::kCollective || x.kind == OpKind::kCollectiveDone) && x.collective.combine >= 0)
      key = {x.collective.combine, x.kind == OpKind::kCollectiveDone ? 1 : 0};
    else if (x.kind == OpKind::kAttention)
      key = {x.attention.call, 2};
    if (key.first >= 0) part[size_t(x.id)] = combined.emplace(key, int(combined.size())).first->second;
  }
  if (!combined.empty())
    fusion_groups::merge_group_kernels(pg.g, part, std::vector<bool>(combined.size(), false), {}, pg.order, plan);
}

// Pass 4: each kernel's kind (and dot), checking what the lowering can run.
void classify_kernels(const PlanningGraph& pg, FusionPlan& plan) {
  const auto& nodes = pg.nodes;
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
    else if (nodes[v].kind == OpKind::kAttention)
      f.kind = FusionKind::kAttention;
    else if (nodes[v].kind == OpKind::kCollectiveDone)
      f.kind = FusionKind::kCollectiveDone;
    else if (nodes[v].kind == OpKind::kHostOffload || nodes[v].kind == OpKind::kHostReload)
      f.kind = FusionKind::kHostCopy;
    else if (nodes[v].kind == OpKind::kReduce)
      f.kind = FusionKind::kReduce;
    else if (f.dot >= 0)
      f.kind = FusionKind::kDot;
    else
      f.kind = FusionKind::kLoop;
    if (f.kind == FusionKind::kAttention) {  // named and rooted by its output (forward) or dq (backward)
      for (int& x : f.extra_outputs) {
        const models::AttentionPart p = nodes[size_t(x)].attention.part;
        if (p == models::AttentionPart::kOut || p == models::AttentionPart::kDq) std::swap(x, f.root);
      }
      f.name = nodes[size_t(f.root)].name;
    }
    if (f.kind == FusionKind::kReduce && f.dot >= 0) throw std::logic_error("fusion: reduction of a dot in one kernel");
    if (f.kind == FusionKind::kLoop && !is_vector_op(nodes[v]))
      throw std::logic_error("fusion: unexpected root kind at " + f.name);
  }
}

// Pass 5: multi-output fusion of reductions into the kernel producing their only operand.
void merge_reductions(const PlanningGraph& pg, FusionPlan& plan) {
  std::vector<Fusion> merged;
  for (auto& f : plan.fusions) {
    if (f.kind == FusionKind::kReduce && f.nodes.size() == 1 && f.inputs.size() == 1) {
      const int x = f.inputs[0];
      auto producer = std::find_if(merged.begin(), merged.end(), [&](const Fusion& p) { return p.root == x; });
      // An already-fused graph's kernels are its groups: a reduction joins its producer only
      // within a split group.
      const bool same_group = !pg.grouped || (producer != merged.end() && pg.group[size_t(x)] >= 0 &&
                                              pg.group[size_t(x)] == pg.group[size_t(f.root)]);
      if (producer != merged.end() && same_group && producer->kind != FusionKind::kReduce &&
          producer->kind != FusionKind::kCollective && producer->kind != FusionKind::kCollectiveDone &&
          producer->kind != FusionKind::kAttention && producer->kind != FusionKind::kHostCopy &&
          reduce_fits_producer(pg.g, *producer, pg.nodes[f.root])) {
        producer->merged_reduces.push_back(f.root);
        continue;
      }
    }
    merged.push_back(std::move(f));
  }
  plan.fusions = std::move(merged);
}

// Pass 6: an asynchronous collective reads its operands until it ends: until its done, or until
// the next asynchronous collective starts (they run one at a time on the background queues),
// whichever comes first. A host offload reads its operand until its done (the copies are not
// serialized with the collectives: they take the PCIe link). That kernel lists them as inputs
// too, so that the memory plan keeps them live until then.
void async_operands_live_until_done(const models::Graph& g, FusionPlan& plan) {
  std::map<int, size_t> writer;
  for (size_t k = 0; k < plan.fusions.size(); ++k)
    for (int x : kernel_outputs(plan.fusions[k])) writer[x] = k;
  auto is_async = [&](const Fusion& f) {
    return f.kind == FusionKind::kCollective && g.node(f.root).collective.async;
  };
  auto is_offload = [&](const Fusion& f) {
    return f.kind == FusionKind::kHostCopy && g.node(f.root).kind == OpKind::kHostOffload;
  };
  std::vector<std::vector<int>> operands;  // each kernel's own inputs, before any is added below
  for (const Fusion& f : plan.fusions) operands.push_back(f.inputs);
  for (size_t k = 0; k < plan.fusions.size(); ++k) {
    const bool offload = is_offload(plan.fusions[k]);
    if (!is_async(plan.fusions[k]) && !offload) continue;
    size_t end = plan.fusions.size();
    for (size_t j = k + 1; j < plan.fusions.size() && end == plan.fusions.size(); ++j) {
      const Fusion& f = plan.fusions[j];
      if (is_async(f) && !offload) end = j;
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

// Pass 7: kernel names are unique within a program (they label trace events and reports), like
// XLA's "fusion.N": the root's name, suffixed when it repeats.
void name_kernels(FusionPlan& plan) {
  std::map<std::string, int> seen_names;
  for (auto& f : plan.fusions) {
    int k = seen_names[f.name]++;
    if (k > 0) f.name.append(".").append(std::to_string(k));
  }
}

}  // namespace

FusionPlan plan_fusions(const models::Graph& g) {
  FusionPlan plan;
  const PlanningGraph pg = planning_graph(g, plan);
  Materialize(pg, plan).run();
  form_kernels(pg, plan);
  merge_groups(pg, plan);
  classify_kernels(pg, plan);
  merge_reductions(pg, plan);
  async_operands_live_until_done(g, plan);
  name_kernels(plan);
  return plan;
}

}  // namespace tpusim::compiler
