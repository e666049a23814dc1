#include "sim/engine/replica_classes.h"

#include <algorithm>
#include <iterator>
#include <span>
#include <unordered_map>
#include <utility>

#include "sim/ici/ici_timing.h"
#include "sim/xfer/xfer_channels.h"

namespace tpusim {
namespace {

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}

// Colours 0..n-1 of `count` items: items with equal signatures share one, numbered in order of
// their first item. `hash(i)` only picks the candidates; `same(i, j)` (j an earlier item that
// opened a colour) decides. Returns the number of colours.
template <class Hash, class Same>
uint32_t colour(size_t count, std::vector<uint32_t>& out, Hash&& hash, Same&& same) {
  out.assign(count, 0);
  std::unordered_map<uint64_t, std::vector<uint32_t>> firsts;  // hash -> the first item of each colour
  uint32_t colours = 0;
  for (uint32_t i = 0; i < count; ++i) {
    std::vector<uint32_t>& cand = firsts[hash(i)];
    bool found = false;
    for (uint32_t j : cand)
      if (same(i, j)) {
        out[i] = out[j];
        found = true;
        break;
      }
    if (!found) {
      out[i] = colours++;
      cand.push_back(i);
    }
  }
  return colours;
}

}  // namespace

ReplicaClasses every_core(size_t cores) {
  ReplicaClasses r;
  r.rep_of.resize(cores);
  for (uint32_t c = 0; c < cores; ++c) r.rep_of[c] = c;
  r.reps = r.rep_of;
  return r;
}

ReplicaClasses find_replica_classes(const ProgramPlan& plan, const HwConfig& hw) {
  const auto& cores = plan.cores();
  const size_t n = cores.size();
  if (n <= 1) return every_core(n);
  const TopologyParams& topo = hw.slice.topology;

  // A send's timing on a core: its hops and its first stage (the rest of send_estimate() is the
  // same for every core); a receive has none of its own. Stages are numbered in order of first
  // use on the core: the engine only serializes the sends of one stage (XferChannels), so which
  // link a stage is does not matter, only which sends share one and whether it is the NoC (the
  // hops: 0). A snake ring leaves one core through x+ and the next through y+: the same timing.
  // (A core sends to a few peer chips: their stage and hops are worked out once per core.)
  struct Peer {
    uint32_t chip, stage, hops;
  };
  std::vector<Peer> peers;
  auto routes = [&](const CorePlan& cp, std::vector<uint64_t>& out) {
    out.assign(cp.sends_recvs.size(), 0);
    peers.clear();
    uint8_t number[64];
    std::fill(std::begin(number), std::end(number), uint8_t(0));
    uint8_t used = 0;
    const std::span<const uint8_t> op = cp.op;
    isa::PeerTable::Reader peer = cp.peer_reader();
    for (uint32_t k = 0; k < cp.sends_recvs.size(); ++k) {
      const uint32_t chip = peer.next().chip;
      if (op[cp.sends_recvs[k]] != uint8_t(isa::Op::kSend)) continue;
      const Peer* p = nullptr;
      for (const Peer& x : peers)
        if (x.chip == chip) p = &x;
      if (!p) {
        const uint32_t stage = std::min<uint32_t>(XferChannels::first_stage(hw, isa::Op::kSend, cp.chip, chip), 63);
        p = &peers.emplace_back(Peer{chip, stage, ici_hops(topo, cp.chip, chip)});
      }
      if (!number[p->stage]) number[p->stage] = ++used;
      out[k] = uint64_t(number[p->stage]) << 32 | p->hops;
    }
  };
  // Initial colours: the stream and the route of every send.
  std::vector<uint32_t> col;
  std::vector<uint64_t> ra, rb;
  uint32_t classes = colour(
      n, col,
      [&](uint32_t c) {
        const CorePlan& cp = cores[c];
        uint64_t h = mix(0, uint64_t(reinterpret_cast<uintptr_t>(cp.prog)));
        routes(cp, ra);
        for (uint64_t x : ra) h = mix(h, x);
        return h;
      },
      [&](uint32_t c, uint32_t r) {
        if (cores[c].prog != cores[r].prog) return false;
        routes(cores[c], ra);
        routes(cores[r], rb);
        return ra == rb;
      });

  // Barrier groups' participants: (slot, barrier position), per group.
  const size_t groups = plan.barrier_participants().size();
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> members(groups);
  for (uint32_t c = 0; c < n; ++c)
    for (uint32_t b = 0; b < cores[c].barrier_group_at.size(); ++b) members[cores[c].barrier_group_at[b]].push_back({c, b});

  // Refinement: a core's colour with its peers' colours and positions and its barrier groups'
  // participants' colours, until no class splits. The matching positions are one table per stream
  // for most cores (CorePlan::match_pos_at): hashed once per table.
  std::unordered_map<const uint32_t*, uint64_t> pos_hash;
  for (const CorePlan& cp : cores) {
    auto [it, fresh] = pos_hash.try_emplace(cp.match_pos_at.data(), 0);
    if (!fresh) continue;
    uint64_t h = mix(0, cp.match_pos_at.size());
    for (uint32_t p : cp.match_pos_at) h = mix(h, p);
    it->second = h;
  }
  auto same_pos = [](const CorePlan& a, const CorePlan& b) {
    return a.match_pos_at.data() == b.match_pos_at.data() ||
           std::equal(a.match_pos_at.begin(), a.match_pos_at.end(), b.match_pos_at.begin(), b.match_pos_at.end());
  };
  std::vector<uint32_t> next, gcol;
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> gsig(groups);
  for (;;) {
    for (size_t g = 0; g < groups; ++g) {
      gsig[g].clear();
      for (auto [c, b] : members[g]) gsig[g].push_back({col[c], b});
      std::sort(gsig[g].begin(), gsig[g].end());
    }
    colour(
        groups, gcol,
        [&](uint32_t g) {
          uint64_t h = mix(0, gsig[g].size());
          for (auto [k, b] : gsig[g]) h = mix(mix(h, k), b);
          return h;
        },
        [&](uint32_t g, uint32_t h) { return gsig[g] == gsig[h]; });
    const uint32_t refined = colour(
        n, next,
        [&](uint32_t c) {
          const CorePlan& cp = cores[c];
          uint64_t h = mix(mix(0, col[c]), pos_hash.at(cp.match_pos_at.data()));
          isa::PeerTable::Reader peer = cp.peer_reader();
          for (uint32_t k = 0; k < cp.sends_recvs.size(); ++k) h = mix(h, col[plan.slot_of(peer.next())]);
          for (uint32_t b = 0; b < cp.barrier_group_at.size(); ++b) h = mix(h, gcol[cp.barrier_group_at[b]]);
          return h;
        },
        [&](uint32_t c, uint32_t r) {
          const CorePlan &a = cores[c], &b = cores[r];
          if (col[c] != col[r] || !same_pos(a, b)) return false;  // same stream: as many transfers and barriers
          isa::PeerTable::Reader pa = a.peer_reader(), pb = b.peer_reader();
          for (uint32_t k = 0; k < a.sends_recvs.size(); ++k)
            if (col[plan.slot_of(pa.next())] != col[plan.slot_of(pb.next())]) return false;
          for (uint32_t k = 0; k < a.barrier_group_at.size(); ++k)
            if (gcol[a.barrier_group_at[k]] != gcol[b.barrier_group_at[k]]) return false;
          return true;
        });
    col.swap(next);
    if (refined == classes) break;
    classes = refined;
  }

  ReplicaClasses r;
  r.rep_of.resize(n);
  std::vector<uint32_t> first(classes, UINT32_MAX);
  for (uint32_t c = 0; c < n; ++c) {
    if (first[col[c]] == UINT32_MAX) {
      first[col[c]] = c;
      r.reps.push_back(c);
    }
    r.rep_of[c] = first[col[c]];
  }
  return r;
}

}  // namespace tpusim
