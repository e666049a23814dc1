#include "compiler/lower/kernel_key.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <numeric>
#include <string_view>
#include <unordered_map>

namespace tpusim::compiler {

std::optional<KernelShape> kernel_shape(const LowerContext& cx, const Fusion& f) {
  if (std::getenv("TPUSIM_DEBUG_TILING")) return std::nullopt;  // a replay would not print the tiling
  const models::Graph& g = cx.graph;
  KernelShape s;
  std::vector<uint64_t>& w = s.key.words;
  // Graph node id -> key number (-1: none), reset for the ids numbered before returning: a key is
  // built for every kernel, and a hash map here was most of its cost.
  thread_local std::vector<int> local;
  if (local.size() < g.nodes().size()) local.resize(g.nodes().size(), -1);
  std::vector<int> nodes;  // the numbered ids, in order (s.nodes once done)
  struct Unmark {          // on every way out, exceptions included
    std::vector<int>& nodes;
    ~Unmark() {
      for (int id : nodes) local[size_t(id)] = -1;
    }
  } unmark{nodes};
  auto number = [&](int id) -> int {
    if (id < 0) return -1;
    int& k = local[size_t(id)];
    if (k < 0) {
      k = int(nodes.size());
      nodes.push_back(id);
    }
    return k;
  };
  auto list = [&](const std::vector<int>& ids) {
    w.push_back(ids.size());
    for (int id : ids) w.push_back(uint64_t(int64_t(number(id))));
  };
  auto ints = [&](const auto& v) {
    w.push_back(v.size());
    for (auto x : v) w.push_back(uint64_t(int64_t(x)));
  };
  w.push_back(uint64_t(f.kind));
  list(f.nodes);
  list(f.inputs);
  list(f.merged_reduces);
  list(f.extra_outputs);
  w.push_back(uint64_t(int64_t(number(f.root))));
  w.push_back(uint64_t(int64_t(number(f.dot))));
  // The nodes these read; their own operands are leaves (kind, dtype and shape).
  const size_t fused = nodes.size();
  for (size_t k = 0; k < fused; ++k)
    for (int in : g.node(nodes[k]).inputs) number(in);
  const size_t described = nodes.size();
  for (size_t k = 0; k < described; ++k) {
    const models::Node& n = g.node(nodes[k]);
    w.push_back(uint64_t(n.kind) | uint64_t(n.dtype) << 8 | uint64_t(n.ew) << 16 | uint64_t(n.reduce) << 24 |
                uint64_t(n.precision) << 32 | uint64_t(n.role) << 40 | uint64_t(n.stop_gradient) << 48 |
                uint64_t(n.materialize) << 49 | uint64_t(cx.in_cmem(n.id)) << 50);
    ints(n.shape);
    w.push_back(n.inputs.size());
    for (int in : n.inputs) {
      if (local[size_t(in)] >= 0) {
        w.push_back(uint64_t(local[size_t(in)]));
      } else {  // a leaf
        const models::Node& l = g.node(in);
        w.push_back(~uint64_t(0));
        w.push_back(uint64_t(l.kind) | uint64_t(l.dtype) << 8 | uint64_t(cx.in_cmem(in)) << 16);
        ints(l.shape);
      }
    }
    w.push_back(uint64_t(int64_t(n.reduce_dim)));
    ints(n.dot.lhs_batch);
    ints(n.dot.rhs_batch);
    ints(n.dot.lhs_contract);
    ints(n.dot.rhs_contract);
    ints(n.broadcast_dims);
    ints(n.permutation);
    w.push_back(std::bit_cast<uint64_t>(n.constant));
    w.push_back(uint64_t(int64_t(n.iota_dim)));
    w.push_back(std::bit_cast<uint64_t>(n.rate));
    w.push_back(uint64_t(int64_t(n.axis)));
    w.push_back(uint64_t(n.start));
    if (n.kind == models::OpKind::kAttention) {
      const models::AttentionAttrs& a = n.attention;
      w.push_back(uint64_t(a.part) | uint64_t(a.causal) << 8);
      w.push_back(uint64_t(a.window));
      w.push_back(uint64_t(a.block_q));
      w.push_back(uint64_t(a.block_kv));
      w.push_back(std::bit_cast<uint64_t>(a.scale));
      w.push_back(uint64_t(a.q_offset));
    }
  }
  // Sets of nodes are ordered by id: the order of the ids.
  std::vector<uint32_t> by_id(described);
  std::iota(by_id.begin(), by_id.end(), 0u);
  std::sort(by_id.begin(), by_id.end(), [&](uint32_t a, uint32_t b) { return nodes[a] < nodes[b]; });
  for (uint32_t k : by_id) w.push_back(k);
  // Names: which nodes share one (they share a label), and none named like lowering's own
  // labels (the replay could not tell the two apart).
  std::unordered_map<std::string_view, uint32_t> first_named;  // for many nodes; few are searched
  for (size_t k = 0; k < described; ++k) {
    const std::string& name = g.node(nodes[k]).name;
    if (name == kReductionsLabel) return std::nullopt;
    uint32_t first = uint32_t(k);
    if (described <= 32) {
      for (size_t j = 0; j < k; ++j)
        if (g.node(nodes[j]).name == name) {
          first = uint32_t(j);
          break;
        }
    } else {
      first = first_named.try_emplace(name, uint32_t(k)).first->second;
    }
    w.push_back(first);
  }
  // The builder: the VMEM the kernel may use, background work, rerolling, the entry deps.
  const ProgramBuilder& pb = cx.pb;
  w.push_back(pb.vmem_available());
  w.push_back(uint64_t(pb.async()) | uint64_t(pb.rerolls()) << 1);
  w.push_back(uint64_t(reinterpret_cast<uintptr_t>(&cx.hw)));
  const uint32_t first = pb.size();
  w.push_back(pb.entry_deps().size());
  for (uint32_t e : pb.entry_deps()) w.push_back(first - e);
  s.nodes = nodes;
  return s;
}

}  // namespace tpusim::compiler
