// A collective plan (collective_plan.h) as instructions. Per step, every transfer is cut into P
// pieces (P = ceil(transfer / piece_bytes), pieces of equal size, rounded up) and each piece is,
// on every core, in this order:
//   send   the piece to send_to[i]
//   recv   the piece from the core sending to i (same deps as the send: a core posts its receive
//          when it is ready to send its own piece)
//   reduce: load received, load local, add on the VPU, store the sum
//   copy:   a zero-work VPU marker on the recv and the send
// Dependencies of a send, per lane: within a phase (consecutive steps of a lane with the same
// peers and kind), piece p waits for piece p of the previous step (a ring step forwards what the
// previous one received). At a phase change, piece p waits for piece p of the previous step when
// the core sends exactly the range it last received with the same pieces (reduce-scatter into
// all-gather on one ring), else for every piece of the previous step (the lane's phase barrier).
// A piece-exact dependence across phases would be position dependent (member r of the next ring
// needs the r-th part of the previous result first) and so differ between cores; the barrier
// keeps every core's stream identical up to its peers. Pipelining across phases comes from the
// lanes, which run their phases interleaved. Steps marked from_input wait only for the start.
// The tag of a piece is shared by all cores (one per step and piece, in order).
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "compiler/collectives/collectives.h"
#include "compiler/plan/layout.h"

namespace tpusim::compiler {

namespace {

void add_dep(isa::Deps& d, uint32_t x) {
  if (std::find(d.begin(), d.end(), x) == d.end()) d.push_back(x);
}

// Per core and lane: the writers of the pieces of the last step, and that step.
struct LaneState {
  const PlanStep* last = nullptr;
  std::vector<uint32_t> slots;  // per piece of the last step: the instruction that wrote it
};

bool same_phase(const PlanStep& a, const PlanStep& b) { return std::strcmp(a.what, b.what) == 0 && a.send_to == b.send_to; }

struct Pieces {
  uint64_t count = 1, bytes = 0;
};
// The ISA's mark of a collective's kernel and instructions (the engines keep statistics by it).
isa::Collective isa_kind(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce: return isa::Collective::kAllReduce;
    case CollectiveKind::kReduceScatter: return isa::Collective::kReduceScatter;
    case CollectiveKind::kAllGather: return isa::Collective::kAllGather;
    case CollectiveKind::kAllToAll: return isa::Collective::kAllToAll;
  }
  return isa::Collective::kNone;
}

Pieces pieces_of(uint64_t transfer, uint64_t piece_bytes) {
  Pieces p;
  p.count = std::max<uint64_t>(1, div_up(int64_t(transfer), int64_t(std::max<uint64_t>(piece_bytes, 1))));
  p.bytes = div_up(int64_t(transfer), int64_t(p.count));
  return p;
}

// continues[k]: step k is in the same phase as the previous step of its lane. The same for every
// core, so compared once (send_to has one entry per core: comparing it per core made emitting a
// full pod's collectives quadratic in its cores).
std::vector<uint8_t> phase_continues(const CollectivePlan& plan) {
  std::vector<uint8_t> continues(plan.steps.size(), 0);
  std::vector<const PlanStep*> last(plan.lanes, nullptr);
  for (size_t k = 0; k < plan.steps.size(); ++k) {
    const PlanStep& s = plan.steps[k];
    continues[k] = last[s.lane] && same_phase(*last[s.lane], s);
    last[s.lane] = &s;
  }
  return continues;
}

// Per step, on core i: its pieces chain to the previous step of its lane, piece p waiting for
// piece p (the header's rule: within a phase, or across one when the core sends exactly the range
// it last received, with as many pieces); else, unless it is the lane's first step or reads only
// its input, they wait for every piece of that step. The one decision besides the peers in which
// cores' kernels may differ.
std::vector<uint8_t> chain_flags(const CollectivePlan& plan, const std::vector<Pieces>& pieces,
                                 const std::vector<uint8_t>& continues, uint32_t i) {
  std::vector<uint8_t> chain(plan.steps.size(), 0);
  std::vector<int64_t> last(plan.lanes, -1);  // per lane: its last step so far
  for (size_t k = 0; k < plan.steps.size(); ++k) {
    const PlanStep& s = plan.steps[k];
    const int64_t l = last[s.lane];
    chain[k] = l >= 0 && !s.from_input && pieces[size_t(l)].count == pieces[k].count &&
               (continues[k] || (s.first[i] == plan.steps[size_t(l)].recv_first[i] && s.count == plan.steps[size_t(l)].count));
    last[s.lane] = int64_t(k);
  }
  return chain;
}

// Replica i's kernel taken from its peers alone (ProgramBuilder::mirror_kernel), in the order the
// kernel sends and receives them, when its builder mirrors (ReplicaStreams) and the kernel would be
// core 0's but for the peers: it waits for what core 0 waits for and chains as core 0 does.
bool mirror_replica(const CollectivePlan& plan, const std::vector<Pieces>& pieces, std::vector<ProgramBuilder*>& b,
                    const std::vector<CoreId>& cores, const std::vector<std::vector<uint32_t>>& recv_from,
                    const std::vector<std::vector<uint32_t>>& after, const std::vector<uint8_t>& chain,
                    const std::vector<uint8_t>& chain0, uint32_t i, std::vector<isa::PeerRef>& peers) {
  if (i == 0 || !b[i]->mirrors() || after[i] != after[0] || after[0].empty() || chain != chain0) return false;
  peers.clear();  // the caller's scratch: its capacity is kept from replica to replica
  for (size_t k = 0; k < plan.steps.size(); ++k) {
    const CoreId to = cores[plan.steps[k].send_to[i]], from = cores[recv_from[k][i]];
    for (uint64_t p = 0; p < pieces[k].count; ++p) {
      peers.push_back({to.chip, to.core});
      peers.push_back({from.chip, from.core});
    }
  }
  return b[i]->mirror_kernel(peers, b[0]->entry_deps());
}

}  // namespace

CollectiveResult emit_plan(const CollectivePlan& plan, std::vector<ProgramBuilder*>& b, const std::vector<CoreId>& cores,
                           const std::vector<std::vector<uint32_t>>& after, uint64_t piece_bytes, uint32_t tag_base,
                           bool background) {
  const uint32_t n = plan.cores;
  if (b.size() != n || after.size() != n || cores.size() != n)
    throw std::invalid_argument("emit_collective: one builder, one core and one `after` list per member");
  const std::string kernel = collective_name(plan.kind);
  CollectiveResult res;
  res.algorithm = plan.algorithm;
  res.done.resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    b[i]->begin_kernel(kernel, isa_kind(plan.kind));
    b[i]->set_async(background);
  }
  struct AsyncOff {  // every return (and exception) leaves the builders in foreground mode
    std::vector<ProgramBuilder*>& b;
    ~AsyncOff() {
      for (ProgramBuilder* x : b) x->set_async(false);
    }
  } async_off{b};
  if (n == 1 || plan.steps.empty()) {
    for (uint32_t i = 0; i < n; ++i) {
      res.done[i] = b[i]->vpu({}, after[i], kernel + " (1 replica)");
      b[i]->end_kernel();
    }
    return res;
  }
  std::vector<Pieces> pieces(plan.steps.size());
  uint64_t largest = 0;
  for (size_t k = 0; k < plan.steps.size(); ++k) {
    const Pieces p = pieces[k] = pieces_of(plan.transfer_bytes(plan.steps[k]), piece_bytes);
    largest = std::max(largest, p.bytes);
    res.bytes_sent_per_core += p.count * p.bytes;
  }
  const std::string rx = kernel + " received", local = kernel + " local", add = kernel + " add",
                    sum = kernel + " partial sum", fwd = kernel + " forwarded";
  // recv_from[k][i]: the core sending to core i in step k.
  std::vector<std::vector<uint32_t>> recv_from(plan.steps.size(), std::vector<uint32_t>(n));
  for (size_t k = 0; k < plan.steps.size(); ++k)
    for (uint32_t i = 0; i < n; ++i) recv_from[k][plan.steps[k].send_to[i]] = i;
  const std::vector<uint8_t> continues = phase_continues(plan);
  const std::vector<uint8_t> chain0 = chain_flags(plan, pieces, continues, 0);
  std::vector<isa::PeerRef> mirrored;  // mirror_replica's scratch
  for (uint32_t i = 0; i < n; ++i) {
    const std::vector<uint8_t> chain = i == 0 ? chain0 : chain_flags(plan, pieces, continues, i);
    if (mirror_replica(plan, pieces, b, cores, recv_from, after, chain, chain0, i, mirrored)) {
      res.done[i] = res.done[0];
      continue;
    }
    ProgramBuilder& B = *b[i];
    if (background)
      B.alloc_top(staging_bytes(largest), "staging");
    else
      B.alloc(staging_bytes(largest), "staging");
    const uint32_t first = B.size();
    const uint32_t start = B.vpu({}, after[i], kernel + " start");
    std::vector<LaneState> lanes(plan.lanes);
    std::vector<uint8_t> used;
    auto use = [&](const isa::Deps& d) {
      for (uint32_t x : d)
        if (x >= first) {
          if (used.size() <= x - first) used.resize(x - first + 1, 0);
          used[x - first] = 1;
        }
    };
    uint32_t tag = tag_base;
    for (size_t k = 0; k < plan.steps.size(); ++k) {
      const PlanStep& s = plan.steps[k];
      const Pieces pc = pieces[k];
      const uint64_t vregs = uint64_t(div_up(int64_t(pc.bytes), kVregBytes));
      const uint32_t to = s.send_to[i];
      const uint32_t from = recv_from[k][i];
      const std::string snd = std::string(s.what) + " send", rcv = std::string(s.what) + " recv";
      LaneState& ls = lanes[s.lane];
      isa::Deps barrier;
      if (ls.last && !s.from_input && !chain[k])
        for (uint32_t x : ls.slots) add_dep(barrier, x);
      std::vector<uint32_t> written(pc.count);
      for (uint64_t p = 0; p < pc.count; ++p) {
        isa::Deps deps = barrier;
        if (chain[k]) deps.push_back(ls.slots[p]);
        if (deps.empty()) deps.push_back(start);
        use(deps);
        const uint32_t t = tag + uint32_t(p);
        const uint32_t sent = B.transfer(isa::Op::kSend, pc.bytes, cores[to].chip, cores[to].core, t, deps, snd);
        const uint32_t got = B.transfer(isa::Op::kRecv, pc.bytes, cores[from].chip, cores[from].core, t, deps, rcv);
        uint32_t result;
        if (s.combine == Combine::kReduce) {
          // Add the received piece into the local partial sum: HBM -> VMEM (both), add, store.
          const uint32_t l1 = B.dma_load(pc.bytes, {got}, rx);
          const uint32_t l2 = B.dma_load(pc.bytes, {got}, local);
          const uint32_t a = B.vpu({vregs, 0, 0, 2 * vregs, vregs}, {l1, l2, sent}, add);
          result = B.dma_store(pc.bytes, {a}, sum);
          use({l1, l2, sent, a, got});
        } else {
          result = B.vpu({}, {got, sent}, fwd);
          use({got, sent});
        }
        written[p] = result;
      }
      ls.last = &s;
      ls.slots = std::move(written);
      tag += uint32_t(pc.count);
    }
    // Done when every instruction nothing else waits for is.
    isa::Deps sinks;
    for (uint32_t x = first; x < B.size(); ++x)
      if (x - first >= used.size() || !used[x - first]) sinks.push_back(x);
    res.done[i] = B.vpu({}, sinks, kernel + " done");
    B.end_kernel();
    res.tags_used = tag - tag_base;
  }
  return res;
}

}  // namespace tpusim::compiler
