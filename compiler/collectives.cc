#include "compiler/collectives.h"

#include <algorithm>
#include <stdexcept>

#include "compiler/layout.h"

namespace tpusim::compiler {

namespace {

// Chips of a 2-D grid (dims X x Y) in a Hamiltonian cycle. Chip id = x + X*y.
std::vector<uint32_t> chip_cycle(uint32_t X, uint32_t Y, bool wrap_x, bool wrap_y) {
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

}  // namespace

std::vector<CoreId> ring_order(const HwConfig& hw) {
  const auto& d = hw.slice.topology.dims;
  const auto& w = hw.slice.topology.wraparound;
  uint32_t X = d.size() > 0 ? d[0] : 1, Y = 1;
  for (size_t i = 1; i < d.size(); ++i) Y *= d[i];  // higher dims folded into Y (3-D: planes in sequence)
  bool wx = !w.empty() && w[0], wy = w.size() > 1 && w[1];
  std::vector<CoreId> ring;
  for (uint32_t chip : chip_cycle(X, Y, wx, wy))
    for (uint32_t c = 0; c < hw.chip.cores; ++c) ring.push_back({chip, c});
  return ring;
}

std::vector<uint32_t> emit_all_reduce(std::vector<ProgramBuilder*>& b, const std::vector<CoreId>& ring,
                                      uint64_t bytes, const std::vector<std::vector<uint32_t>>& after,
                                      const AllReduceOptions& opt, uint32_t* tags_used) {
  const uint32_t n = uint32_t(ring.size());
  if (b.size() != n || after.size() != n) throw std::invalid_argument("emit_all_reduce: one builder per ring member");
  std::vector<uint32_t> done(n);
  for (uint32_t i = 0; i < n; ++i) b[i]->begin_kernel("all-reduce");
  if (n == 1) {
    for (uint32_t i = 0; i < n; ++i) {
      done[i] = b[i]->vpu({}, after[i], "all-reduce (1 replica)");
      b[i]->end_kernel();
    }
    if (tags_used) *tags_used = 0;
    return done;
  }
  // Per direction: bytes/2 split into n chunks, each chunk into pieces.
  const uint64_t chunk = std::max<uint64_t>(1, div_up(int64_t(bytes), int64_t(2 * n)));
  const uint64_t pieces = std::max<uint64_t>(1, div_up(int64_t(chunk), int64_t(opt.piece_bytes)));
  const uint64_t piece = div_up(int64_t(chunk), int64_t(pieces));
  uint32_t tag = opt.tag_base;
  // last[i][p]: the instruction after which piece p of core i's current chunk is ready to send.
  std::vector<std::vector<uint32_t>> ready(n, std::vector<uint32_t>(2 * pieces));
  std::vector<std::vector<uint32_t>> tails(n);
  for (uint32_t i = 0; i < n; ++i) {
    // Staging for the reductions: the sum is written over the local piece.
    b[i]->alloc(4 * piece, "staging");  // received + local piece, double buffered
    uint32_t start = b[i]->vpu({}, after[i], "all-reduce start");
    for (auto& r : ready[i]) r = start;
  }
  const uint64_t piece_vregs = uint64_t(div_up(int64_t(piece), kVregBytes));
  for (int phase = 0; phase < 2; ++phase) {  // 0: reduce-scatter, 1: all-gather
    for (uint32_t step = 0; step + 1 < n; ++step) {
      for (int dir = 0; dir < 2; ++dir) {
        for (uint64_t p = 0; p < pieces; ++p) {
          const uint32_t t = tag++;
          for (uint32_t i = 0; i < n; ++i) {
            const uint32_t next = dir == 0 ? (i + 1) % n : (i + n - 1) % n;
            const uint32_t prev = dir == 0 ? (i + n - 1) % n : (i + 1) % n;
            const size_t slot = size_t(dir) * pieces + p;
            const char* what = phase == 0 ? "reduce-scatter" : "all-gather";
            const uint32_t sent = b[i]->transfer(isa::Op::kSend, piece, ring[next].chip, ring[next].core, t,
                                                 {ready[i][slot]}, std::string(what) + " send");
            const uint32_t got = b[i]->transfer(isa::Op::kRecv, piece, ring[prev].chip, ring[prev].core, t,
                                                {ready[i][slot]}, std::string(what) + " recv");
            if (phase == 0) {
              // Add the received piece into the local partial sum: HBM -> VMEM (both), add, store.
              uint32_t l1 = b[i]->dma_load(piece, {got}, "all-reduce received");
              uint32_t l2 = b[i]->dma_load(piece, {got}, "all-reduce local");
              uint32_t add = b[i]->vpu({piece_vregs, 0, 0, 2 * piece_vregs, piece_vregs}, {l1, l2, sent},
                                       "all-reduce add");
              ready[i][slot] = b[i]->dma_store(piece, {add}, "all-reduce partial sum");
            } else {
              ready[i][slot] = b[i]->vpu({}, {got, sent}, "all-reduce forwarded");
            }
          }
        }
      }
    }
  }
  for (uint32_t i = 0; i < n; ++i) {
    done[i] = b[i]->vpu({}, ready[i], "all-reduce done");
    b[i]->end_kernel();
  }
  if (tags_used) *tags_used = tag - opt.tag_base;
  return done;
}

}  // namespace tpusim::compiler
