// The 1-D bidirectional ring: ring_order() and the ring phases shared with the dimension-by-
// dimension algorithm.
//
// Reduce-scatter on a ring of m members, direction +1: in step s (0..m-2) member r sends
// super-chunk (r - s) mod m to member r+1, which adds it into its own copy; after m-1 steps member r
// holds super-chunk (r + 1) mod m with every contribution (Patarasuk & Yuan, JPDC 2009). The
// all-gather forwards the reduced super-chunks the same way round: in step s member r sends
// (r + 1 - s) mod m. Direction -1 mirrors it. Per member each phase moves (m-1)/m of the range.
#include "compiler/collectives/collective_algorithms.h"
#include "compiler/collectives/collectives.h"

#include <algorithm>
#include <stdexcept>

namespace tpusim::compiler {

std::vector<uint32_t> grid_cycle(uint32_t X, uint32_t Y, bool wrap_x, bool wrap_y) {
  std::vector<uint32_t> order;
  auto id = [X](uint32_t x, uint32_t y) { return x + X * y; };
  if (Y == 1 || X == 1) {  // a line: a cycle only with wraparound; otherwise the ring folds back
    uint32_t n = X * Y;
    for (uint32_t i = 0; i < n; ++i) order.push_back(i);
    return order;
  }
  if (wrap_x && wrap_y) {  // torus: row-major snake closes through the wrap links
    for (uint32_t y = 0; y < Y; ++y)
      for (uint32_t i = 0; i < X; ++i) order.push_back(id(y % 2 ? X - 1 - i : i, y));
    return order;
  }
  if (Y % 2 != 0 && X % 2 == 0) {
    // The row construction below needs Y even; with X even, walk it transposed: column 0 upward,
    // snake columns 1..X-1 over rows Y-1..1, return along row 0.
    for (uint32_t y = 0; y < Y; ++y) order.push_back(id(0, y));
    for (uint32_t k = 0; k + 1 < X; ++k)
      for (uint32_t i = 0; i + 1 < Y; ++i) order.push_back(id(1 + k, k % 2 ? 1 + i : Y - 1 - i));
    for (uint32_t x = X - 1; x >= 1; --x) order.push_back(id(x, 0));
    return order;
  }
  // (X and Y both odd: no Hamiltonian cycle exists; the closing edge below spans several hops.)
  // Row 0 left to right, snake rows 1..Y-1 over columns 1..X-1, return down column 0.
  for (uint32_t x = 0; x < X; ++x) order.push_back(id(x, 0));
  for (uint32_t y = 1; y < Y; ++y)
    for (uint32_t i = 0; i < X - 1; ++i) order.push_back(id(y % 2 ? X - 1 - i : 1 + i, y));
  for (uint32_t y = Y - 1; y >= 1; --y) order.push_back(id(0, y));
  return order;
}

std::vector<CoreId> ring_order(const HwConfig& hw) {
  const auto& d = hw.slice.topology.dims;
  const auto& w = hw.slice.topology.wraparound;
  uint32_t X = d.size() > 0 ? d[0] : 1, Y = 1;
  for (size_t i = 1; i < d.size(); ++i) Y *= d[i];  // higher dims folded into Y (3-D: planes in sequence)
  bool wx = !w.empty() && w[0], wy = w.size() > 1 && w[1];
  std::vector<CoreId> ring;
  for (uint32_t chip : grid_cycle(X, Y, wx, wy))
    for (uint32_t c = 0; c < hw.chip.cores; ++c) ring.push_back({chip, c});
  return ring;
}

namespace {

uint32_t mod(int64_t a, uint32_t m) { return uint32_t(((a % int64_t(m)) + m) % m); }

}  // namespace

namespace {

// The m-1 steps of one pass around each group of `ph`, direction `dir`: at step s, member r sends
// the sub-chunk at offset (r + shift - dir*s) mod m to its neighbour r + dir. A reduce-scatter pass
// starts from each member's own offset (shift 0); the all-gather that undoes it starts from the
// chunk the reduce-scatter left reduced there (shift dir).
void append_ring_pass(std::vector<PlanStep>& out, CollectivePlan& plan, const RingPhase& ph, uint32_t lane, int dir,
                      Combine combine, const char* what, int64_t shift) {
  const uint32_t n = plan.cores;
  const uint32_t m = uint32_t(ph.groups.front().size());
  const uint32_t sub = ph.span / m;
  for (uint32_t s = 0; s + 1 < m; ++s) {
    PlanStep st;
    st.combine = combine;
    st.lane = lane;
    st.count = sub;
    st.what = what;
    st.send_to.assign(n, 0);
    st.first.assign(n, 0);
    st.recv_first.assign(n, 0);
    for (const auto& g : ph.groups)
      for (uint32_t r = 0; r < m; ++r) {
        const uint32_t i = g[r], to = g[mod(int64_t(r) + dir, m)];
        st.send_to[i] = to;
        st.first[i] = ph.start[i] + sub * mod(int64_t(r) + shift - dir * int64_t(s), m);
        st.recv_first[to] = ph.start[to] + (st.first[i] - ph.start[i]);
      }
    out.push_back(std::move(st));
  }
}

}  // namespace

std::vector<uint32_t> append_ring_reduce_scatter(std::vector<PlanStep>& out, CollectivePlan& plan, const RingPhase& ph,
                                                 uint32_t lane, int dir) {
  const uint32_t m = uint32_t(ph.groups.front().size());
  const uint32_t sub = ph.span / m;
  std::vector<uint32_t> owned(ph.start);
  if (m < 2) return owned;
  append_ring_pass(out, plan, ph, lane, dir, Combine::kReduce, "reduce-scatter", 0);
  for (const auto& g : ph.groups)
    for (uint32_t r = 0; r < m; ++r) owned[g[r]] = ph.start[g[r]] + sub * mod(int64_t(r) + dir, m);
  return owned;
}

void append_ring_all_gather(std::vector<PlanStep>& out, CollectivePlan& plan, const RingPhase& ph, uint32_t lane,
                            int dir) {
  append_ring_pass(out, plan, ph, lane, dir, Combine::kCopy, "all-gather", dir);
}

void interleave_lanes(CollectivePlan& plan, std::vector<std::vector<PlanStep>>& per_lane) {
  size_t longest = 0;
  for (const auto& l : per_lane) longest = std::max(longest, l.size());
  for (size_t t = 0; t < longest; ++t)
    for (auto& l : per_lane)
      if (t < l.size()) plan.steps.push_back(std::move(l[t]));
}

CollectivePlan ring_plan(CollectiveKind kind, uint32_t n, uint64_t bytes) {
  CollectivePlan plan;
  plan.kind = kind;
  plan.algorithm = CollectiveAlgorithm::kRing;
  plan.cores = n;
  plan.lanes = 2;
  plan.chunks = n;
  plan.chunk_bytes = std::max<uint64_t>(1, (bytes + 2 * n - 1) / (2 * n));  // bytes / 2n, rounded up
  RingPhase ph;
  ph.groups.resize(1);
  for (uint32_t i = 0; i < n; ++i) ph.groups[0].push_back(i);
  ph.start.assign(n, 0);
  ph.span = n;
  std::vector<std::vector<PlanStep>> lanes(2);
  plan.owner.assign(2, std::vector<uint32_t>(n, 0));
  for (uint32_t lane = 0; lane < 2; ++lane) {
    const int dir = lane == 0 ? +1 : -1;
    std::vector<PlanStep> rs;
    const std::vector<uint32_t> owned = append_ring_reduce_scatter(rs, plan, ph, lane, dir);
    for (uint32_t i = 0; i < n; ++i) plan.owner[lane][owned[i]] = i;
    if (kind != CollectiveKind::kAllGather) lanes[lane] = std::move(rs);
    if (kind != CollectiveKind::kReduceScatter) append_ring_all_gather(lanes[lane], plan, ph, lane, dir);
  }
  interleave_lanes(plan, lanes);
  return plan;
}

}  // namespace tpusim::compiler
