#include "compiler/plan/fusion_groups.h"

#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <set>
#include <stdexcept>

namespace tpusim::compiler {

using models::OpKind;

namespace fusion_groups {

namespace {

bool is_view(const models::Node& n) { return n.kind == OpKind::kReshape; }
bool is_value(const models::Node& n) { return n.kind == OpKind::kParameter || n.kind == OpKind::kConstant; }

std::vector<std::vector<int>> users_of(const models::Graph& g) {
  std::vector<std::vector<int>> users(g.nodes().size());
  for (const auto& n : g.nodes())
    for (int in : n.inputs) users[size_t(in)].push_back(n.id);
  return users;
}

// The first user of `v` inside its group that computes on it (seen through the group's views):
// -1 when its in-group users are only views leading out of the group.
int in_group_user(const models::Graph& g, const std::vector<int>& group, const std::vector<std::vector<int>>& users,
                  int v, int grp) {
  for (int u : users[size_t(v)]) {
    if (group[size_t(u)] != grp) continue;
    if (!is_view(g.node(u))) return u;
    if (int w = in_group_user(g, group, users, u, grp); w >= 0) return w;
  }
  return -1;
}

// Kernels in an order where each comes after the kernels writing what it reads (a merged kernel
// reads all its parts read), otherwise as planned: Kahn's algorithm taking the earliest first,
// but collectives as soon as they can start and the readers of an asynchronous collective's
// result as late as they can (XLA's latency-hiding scheduler; a data-parallel step's all-reduces
// overlap the rest of the backward pass so, compiler/step/data_parallel.h).
// A scheduled graph (models::Graph::scheduled) keeps its own order: its node order.
std::vector<Fusion> order_kernels(const models::Graph& g, std::vector<Fusion> out) {
  const auto& nodes = g.nodes();
  auto rank = [&](const Fusion& f) {
    if (g.scheduled()) return 1;
    if (nodes[size_t(f.root)].kind == OpKind::kCollective) return 0;
    for (int in : f.inputs)
      if (nodes[size_t(in)].kind == OpKind::kCollective && nodes[size_t(in)].collective.async) return 2;
    return 1;
  };
  std::map<int, size_t> writer;
  for (size_t k = 0; k < out.size(); ++k)
    for (int v : kernel_outputs(out[k])) writer[v] = k;
  std::vector<std::vector<size_t>> next(out.size());
  std::vector<int> waiting(out.size(), 0);
  for (size_t k = 0; k < out.size(); ++k) {
    std::set<size_t> from;
    for (int in : out[k].inputs)
      if (auto w = writer.find(in); w != writer.end() && w->second != k) from.insert(w->second);
    for (size_t w : from) next[w].push_back(k), ++waiting[k];
  }
  // Otherwise in the order of the graph's nodes (the module's text: an optimized module's schedule).
  std::vector<std::pair<int, int>> ranks;
  for (const Fusion& f : out) ranks.push_back({rank(f), f.root});
  using Item = std::pair<std::pair<int, int>, size_t>;
  std::priority_queue<Item, std::vector<Item>, std::greater<>> ready;
  for (size_t k = 0; k < out.size(); ++k)
    if (waiting[k] == 0) ready.push({ranks[k], k});
  std::vector<Fusion> sorted;
  while (!ready.empty()) {
    const size_t k = ready.top().second;
    ready.pop();
    sorted.push_back(std::move(out[k]));
    for (size_t u : next[k])
      if (--waiting[u] == 0) ready.push({ranks[u], u});
  }
  if (sorted.size() != out.size()) throw std::logic_error("fusion: the fusion groups' kernels form a cycle");
  return sorted;
}

}  // namespace

bool reduce_fits_dot(const models::Graph& g, int dot_id, const models::Node& red) {
  const auto& dot = g.node(dot_id);
  const auto& ls = g.node(dot.inputs[0]).shape;
  const int nb = int(dot.dot.lhs_batch.size());
  const int n_lhs_free = int(ls.size() - dot.dot.lhs_batch.size() - dot.dot.lhs_contract.size());
  if (red.reduce_dim < nb) return true;
  int64_t extent = 1;
  if (red.reduce_dim < nb + n_lhs_free) {
    for (int d = nb; d < nb + n_lhs_free; ++d) extent *= dot.shape[d];
  } else {
    for (int d = nb + n_lhs_free; d < int(dot.shape.size()); ++d) extent *= dot.shape[d];
  }
  return extent <= 2048;
}

std::vector<int> planning_groups(const models::Graph& g) {
  const int named = int(g.groups().size());
  std::vector<int> group(g.nodes().size(), -1);
  for (const auto& n : g.nodes()) {
    if (n.group >= 0)
      group[size_t(n.id)] = n.group;
    else if (!is_value(n) && !is_view(n))
      group[size_t(n.id)] = named + n.id;
  }
  return group;
}

bool used_outside(const models::Graph& g, const std::vector<int>& group, const std::vector<std::vector<int>>& users,
                  int v) {
  const std::set<int> outputs(g.outputs().begin(), g.outputs().end());
  std::function<bool(int)> outside = [&](int x) {
    for (int u : users[size_t(x)]) {
      if (is_view(g.node(u)) && !outputs.count(u)) {
        if (outside(u)) return true;
      } else if (group[size_t(u)] != group[size_t(v)]) {
        return true;
      }
    }
    return false;
  };
  return outside(v);
}

void merge_group_kernels(const models::Graph& g, const std::vector<int>& group, const std::vector<bool>& split,
                         const std::vector<std::string>& names, const std::vector<int>& order, FusionPlan& plan) {
  const auto& nodes = g.nodes();
  const int named = int(names.size());
  std::map<int, std::vector<size_t>> parts;  // group -> its kernels
  for (size_t k = 0; k < plan.fusions.size(); ++k)
    if (int grp = group[size_t(plan.fusions[k].root)]; grp >= 0) parts[grp].push_back(k);
  auto by_order = [&](int a, int b) { return order[size_t(a)] < order[size_t(b)]; };

  std::vector<Fusion> out;
  std::vector<bool> done(plan.fusions.size(), false);
  for (size_t k = 0; k < plan.fusions.size(); ++k) {
    if (done[k]) continue;
    const int grp = group[size_t(plan.fusions[k].root)];
    if (grp < 0 || split[size_t(grp)] || parts[grp].size() == 1) {
      done[k] = true;
      out.push_back(std::move(plan.fusions[k]));
      if (grp >= 0 && grp < named) out.back().name = names[size_t(grp)];
      continue;
    }
    // The root: the value the dot's output reaches (a dot kernel's output), else the last value that
    // is not a reduction (a loop kernel's), else the last reduction; the others are written beside it.
    const std::vector<size_t>& ks = parts[grp];
    auto has_dot = [&](const Fusion& f) {
      return std::any_of(f.nodes.begin(), f.nodes.end(), [&](int x) { return nodes[size_t(x)].kind == OpKind::kDot; });
    };
    auto is_reduce = [&](const Fusion& f) { return nodes[size_t(f.root)].kind == OpKind::kReduce; };
    size_t primary = ks.back();
    bool found = false;
    for (size_t i = ks.size(); i-- > 0 && !found;)
      if (has_dot(plan.fusions[ks[i]]) && !is_reduce(plan.fusions[ks[i]])) primary = ks[i], found = true;
    for (size_t i = ks.size(); i-- > 0 && !found;)
      if (!is_reduce(plan.fusions[ks[i]])) primary = ks[i], found = true;

    Fusion m;
    m.root = plan.fusions[primary].root;
    m.name = grp < named ? names[size_t(grp)] : nodes[size_t(m.root)].name;
    std::set<int> cone, inputs, written;
    for (size_t p : ks) {
      const Fusion& f = plan.fusions[p];
      done[p] = true;
      written.insert(f.root);
      const bool reduction = p != primary && is_reduce(f);
      if (p != primary) (reduction ? m.merged_reduces : m.extra_outputs).push_back(f.root);
      for (int x : f.nodes)
        if (!(reduction && x == f.root)) cone.insert(x);
      inputs.insert(f.inputs.begin(), f.inputs.end());
    }
    for (int w : written) inputs.erase(w);
    m.nodes.assign(cone.begin(), cone.end());
    std::sort(m.nodes.begin(), m.nodes.end(), by_order);
    m.inputs.assign(inputs.begin(), inputs.end());
    std::sort(m.inputs.begin(), m.inputs.end(), by_order);
    out.push_back(std::move(m));
  }

  plan.fusions = order_kernels(g, std::move(out));
}

}  // namespace fusion_groups

std::vector<GroupSplit> split_groups(const models::Graph& g) {
  using namespace fusion_groups;
  const auto& nodes = g.nodes();
  if (std::none_of(nodes.begin(), nodes.end(), [](const models::Node& n) { return n.group >= 0; })) return {};
  const std::vector<int> group = planning_groups(g);
  const auto users = users_of(g);
  std::map<int, std::vector<int>> members;
  for (const auto& n : nodes)
    if (group[size_t(n.id)] >= 0 && !is_value(n)) members[group[size_t(n.id)]].push_back(n.id);

  std::vector<GroupSplit> out;
  for (const auto& [grp, ms] : members) {
    std::vector<int> dots, reduces, indexed;
    int collectives = 0, compute = 0;
    std::string why;
    for (int v : ms) {
      const auto& n = nodes[size_t(v)];
      compute += !is_view(n);
      if (n.kind == OpKind::kDot) dots.push_back(v);
      if (n.kind == OpKind::kReduce) reduces.push_back(v);
      if (n.kind == OpKind::kCollective) ++collectives;
      if (n.kind == OpKind::kGather || n.kind == OpKind::kScatterAdd) indexed.push_back(v);
      if (why.empty() && (n.kind == OpKind::kReduce || n.materialize)) {
        if (int u = in_group_user(g, group, users, v, grp); u >= 0)
          why = n.kind == OpKind::kReduce
                    ? "reduction '" + n.name + "' is computed on within the fusion (by '" + nodes[size_t(u)].name +
                          "'); a kernel's reductions are its outputs"
                    : "'" + n.name + "' is materialized in HBM by the import; a kernel's materialized values are its outputs";
      }
    }
    if (collectives > 0 && compute > collectives)
      why = "a collective with other ops; a collective is a kernel of its own";
    else if (dots.size() > 1)
      why = std::to_string(dots.size()) + " dots; a kernel holds one (with its operand and output fusions)";
    else if (why.empty() && dots.size() == 1 && !indexed.empty())
      why = "a gather or scatter beside a dot; a dot kernel reads its operands whole";
    else if (why.empty() && dots.size() == 1 && !reduces.empty()) {
      const auto& dot = nodes[size_t(dots[0])];
      for (int r : reduces) {
        const auto& red = nodes[size_t(r)];
        if (nodes[size_t(red.inputs[0])].shape != dot.shape || !reduce_fits_dot(g, dots[0], red)) {
          why = "reduction '" + red.name + "' is not of the dot's output within one output tile; a dot kernel reduces "
                "only its output, over at most 2048 rows or columns";
          break;
        }
      }
      const bool writes_output = std::any_of(ms.begin(), ms.end(), [&](int v) {
        const auto& n = nodes[size_t(v)];
        return n.kind != OpKind::kReduce && !is_view(n) &&
               (std::find(g.outputs().begin(), g.outputs().end(), v) != g.outputs().end() || used_outside(g, group, users, v));
      });
      if (why.empty() && !writes_output) why = "the dot's output is only reduced; a dot kernel writes its output";
    }
    if (!why.empty()) out.push_back({grp, std::move(why)});
  }
  return out;
}

}  // namespace tpusim::compiler
