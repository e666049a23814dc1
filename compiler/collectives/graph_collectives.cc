#include "compiler/collectives/graph_collectives.h"

#include <algorithm>
#include <stdexcept>

#include "compiler/plan/layout.h"

namespace tpusim::compiler {

using models::CollectiveOp;

namespace {

CollectiveKind kind_of(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllReduce: return CollectiveKind::kAllReduce;
    case CollectiveOp::kAllGather: return CollectiveKind::kAllGather;
    case CollectiveOp::kReduceScatter: return CollectiveKind::kReduceScatter;
    case CollectiveOp::kAllToAll: return CollectiveKind::kAllToAll;
    case CollectiveOp::kCollectivePermute: break;
  }
  throw std::logic_error("collective-permute has no CollectiveKind");
}

// Collective-permute: every source sends its operand to its target, all pairs at once. The
// transfer is cut into pieces of `piece_bytes` staged in VMEM like the other collectives'
// (collectives_emit.cc), all issued when the operand is ready. Every core emits the same number of
// instructions (the replica streams must line up): where a core sends or receives nothing (or
// sends to itself, a local no-op), a zero-work marker stands in for the transfer. A replica that
// is no pair's target holds zeros in XLA; that fill is not costed.
std::vector<uint32_t> emit_permute(std::vector<ProgramBuilder*>& b, const std::vector<CoreId>& cores,
                                   const std::vector<std::pair<int64_t, int64_t>>& pairs, uint64_t bytes,
                                   const isa::Deps& after, const std::string& kernel, uint64_t piece_bytes,
                                   uint32_t tag_base, bool background, uint32_t* tags_used) {
  const size_t n = cores.size();
  std::vector<int64_t> to(n, -1), from(n, -1);
  for (const auto& [s, t] : pairs)
    if (s != t) {
      to[size_t(s)] = t;
      from[size_t(t)] = s;
    }
  const uint64_t pieces = std::max<uint64_t>(1, uint64_t(div_up(int64_t(bytes), int64_t(std::max<uint64_t>(piece_bytes, 1)))));
  const uint64_t piece = uint64_t(div_up(int64_t(std::max<uint64_t>(bytes, 1)), int64_t(pieces)));
  std::vector<uint32_t> done(n);
  for (size_t i = 0; i < n; ++i) {
    ProgramBuilder& B = *b[i];
    B.begin_kernel(kernel, isa::Collective::kCollectivePermute);
    B.set_async(background);
    if (background)
      B.alloc_top(staging_bytes(piece), "staging");
    else
      B.alloc(staging_bytes(piece), "staging");
    const uint32_t start = B.vpu({}, after, kernel + " start");
    isa::Deps landed;
    for (uint64_t p = 0; p < pieces; ++p) {
      const uint32_t tag = tag_base + uint32_t(p);
      const uint32_t s = to[i] >= 0 ? B.transfer(isa::Op::kSend, piece, cores[size_t(to[i])].chip,
                                                 cores[size_t(to[i])].core, tag, {start}, "send")
                                    : B.vpu({}, {start}, "nothing to send");
      const uint32_t r = from[i] >= 0 ? B.transfer(isa::Op::kRecv, piece, cores[size_t(from[i])].chip,
                                                   cores[size_t(from[i])].core, tag, {start}, "recv")
                                      : B.vpu({}, {start}, "nothing to receive");
      landed.push_back(B.vpu({}, {s, r}, kernel + " forwarded"));
    }
    done[i] = B.vpu({}, landed, kernel + " done");
    B.end_kernel();
    B.set_async(false);
  }
  *tags_used = uint32_t(pieces);
  return done;
}

}  // namespace

isa::Collective isa_collective(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllReduce: return isa::Collective::kAllReduce;
    case CollectiveOp::kAllGather: return isa::Collective::kAllGather;
    case CollectiveOp::kReduceScatter: return isa::Collective::kReduceScatter;
    case CollectiveOp::kAllToAll: return isa::Collective::kAllToAll;
    case CollectiveOp::kCollectivePermute: return isa::Collective::kCollectivePermute;
  }
  return isa::Collective::kNone;
}

uint64_t graph_collective_bytes(const models::Graph& g, const models::Node& n) {
  // A flat collective moves the flat buffer: group x the shard (an all-gather's operand, a
  // reduce-scatter's result).
  if (n.collective.flat)
    return uint64_t(n.collective.group_size()) *
           stored_bytes(g, n.collective.op == CollectiveOp::kAllGather ? n.inputs.at(0) : n.id);
  return n.collective.op == CollectiveOp::kAllGather ? stored_bytes(g, n.id) : stored_bytes(g, n.inputs.at(0));
}

uint64_t kernel_collective_bytes(const models::Graph& g, const Fusion& f) {
  const models::Node& root = g.node(f.root);
  if (root.collective.flat) return graph_collective_bytes(g, root);  // the parts share the one buffer
  uint64_t bytes = 0;
  for (int x : kernel_outputs(f)) bytes += graph_collective_bytes(g, g.node(x));
  return bytes;
}

void lower_collective_alone(LowerContext& cx, const Fusion& f) {
  const models::Node& n = cx.graph.node(f.root);
  const int64_t group = n.collective.group_size();
  cx.pb.begin_kernel(f.name, isa_collective(n.collective.op));
  cx.pb.vpu({}, {},
            group <= 1 ? "group of one replica: the identity"
                       : "group of " + std::to_string(group) + " replicas: not run on one core (no cost)");
  cx.pb.end_kernel();
}

GraphCollective emit_graph_collective(ReplicaStreams& streams, LowerContext& cx, const Fusion& f,
                                      const std::vector<CoreId>& cores, CollectiveOptions& opt, uint32_t previous) {
  const models::Node& n = cx.graph.node(f.root);
  const models::CollectiveAttrs& a = n.collective;
  if (cores.size() == 1 && a.replicas > 1) {  // a program of one core: nobody to talk to (lower_collective_alone)
    GraphCollective alone;
    alone.name = f.name;
    alone.op = a.op;
    lower_collective_alone(cx, f);
    return alone;
  }
  if (a.replicas != int64_t(cores.size()))
    throw std::invalid_argument("compile_spmd_step: collective '" + n.name + "' is for " + std::to_string(a.replicas) +
                                " replicas, the program runs on " + std::to_string(cores.size()) + " cores");
  GraphCollective out;
  out.name = f.name;
  out.op = a.op;
  // A combined collective moves its parts' bytes as one (models::CollectiveAttrs::combine).
  out.bytes = kernel_collective_bytes(cx.graph, f);
  const std::vector<std::vector<int64_t>> groups = a.resolved_groups();
  out.groups = uint32_t(groups.size());
  out.group_size = uint32_t(a.group_size());
  const bool permute = a.op == CollectiveOp::kCollectivePermute;
  if (a.local() || (permute && cores.size() <= 1)) {
    lower_collective_alone(cx, f);
    return out;
  }
  const isa::Deps entry = streams.main().entry_deps();
  isa::Deps wait = entry;
  out.background = opt.background = a.async;
  opt.slices = uint32_t(a.slices);
  if (a.async && previous != kNoInstr && std::find(wait.begin(), wait.end(), previous) == wait.end())
    wait.push_back(previous);
  std::vector<ProgramBuilder*> b = streams.begin_section();
  // The mesh axis it runs along, for the engines' statistics per axis (none for an imported module's).
  const uint8_t axis = a.axis ? uint8_t(1 + uint8_t(*a.axis)) : 0;
  for (ProgramBuilder* x : b) x->set_collective_axis(axis);
  uint32_t tags = 0;
  if (permute) {
    out.done = emit_permute(b, cores, a.pairs, out.bytes, wait, f.name, opt.piece_bytes, opt.tag_base, a.async, &tags)[0];
    uint64_t sent = 0;
    for (const auto& [s, t] : a.pairs) sent = std::max<uint64_t>(sent, s != t ? out.bytes : 0);
    out.bytes_sent_per_core = sent;
  } else {
    // The groups are disjoint: their collectives run at once, each an emit_collective over the
    // cores of its replicas (in group order: the ring's neighbours), with the same tags (peers of
    // different groups never meet).
    const std::vector<uint32_t> after_all(wait.begin(), wait.end());
    for (const auto& grp : groups) {
      std::vector<ProgramBuilder*> gb;
      std::vector<CoreId> gc;
      for (int64_t r : grp) {
        gb.push_back(b[size_t(r)]);
        gc.push_back(cores[size_t(r)]);
      }
      const std::vector<std::vector<uint32_t>> after(gb.size(), after_all);
      const CollectiveResult r = emit_collective(kind_of(a.op), gb, gc, cx.hw, out.bytes, after, opt);
      if (std::find(grp.begin(), grp.end(), 0) != grp.end())
        out.done = r.done[size_t(std::find(grp.begin(), grp.end(), 0) - grp.begin())];
      tags = std::max(tags, r.tags_used);
      out.algorithm = r.algorithm;
      out.bytes_sent_per_core = std::max(out.bytes_sent_per_core, r.bytes_sent_per_core);
      out.dcn_bytes_per_core = std::max(out.dcn_bytes_per_core, r.dcn_bytes_per_core);
    }
  }
  for (ProgramBuilder* x : b) x->set_collective_axis(0);
  streams.end_section();
  opt.tag_base += tags;
  opt.background = false;
  opt.slices = 1;
  if (a.async) streams.main().set_entry_deps(entry);  // the next kernel runs meanwhile
  return out;
}

}  // namespace tpusim::compiler
