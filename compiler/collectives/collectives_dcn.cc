// Collectives across the slices of a multislice run (CollectiveOptions::slices > 1), run as XLA runs
// them over the data-center network (DCN): hierarchically, so that the slow network carries each
// byte once per core and no more.
//   all-reduce:     reduce-scatter within the slice (ICI), all-reduce of each core's 1/n share
//                   across the slices (DCN), all-gather within the slice (ICI);
//   reduce-scatter: reduce-scatter within the slice, all-reduce of the share across the slices.
// The DCN all-reduce is a ring over the S slices (the same core of each, one network hop apart):
// S-1 reduce-scatter steps then S-1 all-gather steps, each moving share / S bytes, so every core
// sends 2 (S-1) / S x share over its host's network interfaces (the bandwidth-optimal all-reduce;
// Patarasuk & Yuan 2009). Per step and piece (pieces of opt.piece_bytes, as within a slice), on
// each core:
//   a DCN store of the piece   HBM -> PCIe -> host -> NIC -> the next slice's host RAM
//                              (isa::Instr::dcn; sim/ici/ici_timing.h times it);
//   a host load of the piece   host RAM -> PCIe -> HBM: what the previous slice sent. The slices run
//   the previous slice sent    the same program, so it has arrived when this core's store has;
//   reduce steps: the sum      two DMA loads, a VPU add, a DMA store (as collectives_emit.cc).
// The first step's stores are issued together; from then on each piece, once loaded (and added), is
// forwarded at once: the stores stream back to back through the network interface.
// Megacore chips (v5p) run the in-slice parts over all their cores (not the per-device form, whose
// on-chip all-gather is left out): a slight overestimate of the on-chip part.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "compiler/collectives/collectives.h"
#include "compiler/plan/layout.h"

namespace tpusim::compiler {

namespace {

// The all-reduce of `share` bytes per core across `slices` slices; returns per core the instruction
// completing it.
std::vector<uint32_t> emit_dcn_all_reduce(std::vector<ProgramBuilder*>& b, uint64_t share, uint32_t slices,
                                          const std::vector<std::vector<uint32_t>>& after, uint64_t piece_bytes,
                                          bool background, uint64_t* bytes_sent) {
  const std::string kernel = "all-reduce (DCN)";
  const uint64_t step_bytes = uint64_t(div_up(int64_t(std::max<uint64_t>(share, 1)), int64_t(slices)));
  // At least kMinPieces per step (of at least 64 KiB), so that a step's last piece, which waits for
  // the network's latency and its load before it can be forwarded, is a small part of the step.
  constexpr uint64_t kMinPieces = 4, kMinPieceBytes = 64 << 10;
  const uint64_t pieces =
      std::max(uint64_t(div_up(int64_t(step_bytes), int64_t(std::max<uint64_t>(piece_bytes, 1)))),
               std::min(kMinPieces, uint64_t(div_up(int64_t(step_bytes), int64_t(kMinPieceBytes)))));
  const uint64_t piece = uint64_t(div_up(int64_t(step_bytes), int64_t(pieces)));
  const uint64_t vregs = uint64_t(div_up(int64_t(piece), kVregBytes));
  const uint32_t steps = 2 * (slices - 1);
  *bytes_sent = uint64_t(steps) * pieces * piece;
  std::vector<uint32_t> done(b.size());
  for (ProgramBuilder* x : b) {
    x->begin_kernel(kernel, isa::Collective::kDcnAllReduce);
    x->set_async(background);
  }
  std::vector<isa::PeerRef> no_peers;  // the kernel talks to hosts only
  for (size_t i = 0; i < b.size(); ++i) {
    ProgramBuilder& B = *b[i];
    // A replica waiting for what core 0 waits for runs core 0's kernel (ProgramBuilder::mirror_kernel):
    // a pod's 256 cores then emit it once.
    if (i > 0 && B.mirrors() && after[i] == after[0] && !after[0].empty() && B.mirror_kernel(no_peers, b[0]->entry_deps())) {
      done[i] = done[0];
      continue;
    }
    if (background)
      B.alloc_top(staging_bytes(piece), "staging");
    else
      B.alloc(staging_bytes(piece), "staging");
    const uint32_t start = B.vpu({}, isa::Deps(after[i].begin(), after[i].end()), kernel + " start");
    // Piece by piece, as a ring pipelines: a piece is forwarded (the next step's store) as soon as
    // it has arrived and been added, before the next piece is loaded (the transfer queue is in
    // order), so the network interface streams the next step's pieces behind this step's.
    auto send = [&](uint32_t s, uint32_t after_instr) {
      return B.host_transfer(isa::Op::kHostStore, piece, true, {after_instr},
                             s + 1 < slices ? "DCN reduce-scatter send" : "DCN all-gather send");
    };
    std::vector<uint32_t> sent(pieces), last(pieces);
    for (uint64_t p = 0; p < pieces; ++p) sent[p] = send(0, start);
    for (uint32_t s = 0; s < steps; ++s) {
      const bool reduce = s + 1 < slices;
      for (uint64_t p = 0; p < pieces; ++p) {
        const uint32_t got = B.host_transfer(isa::Op::kHostLoad, piece, false, {sent[p]},
                                             reduce ? "DCN reduce-scatter recv" : "DCN all-gather recv");
        last[p] = got;
        if (reduce) {
          const uint32_t l1 = B.dma_load(piece, {got}, kernel + " received");
          const uint32_t l2 = B.dma_load(piece, {got}, kernel + " local");
          const uint32_t a = B.vpu({vregs, 0, 0, 2 * vregs, vregs}, {l1, l2}, kernel + " add");
          last[p] = B.dma_store(piece, {a}, kernel + " partial sum");
        }
        if (s + 1 < steps) sent[p] = send(s + 1, last[p]);
      }
    }
    done[i] = B.vpu({}, isa::Deps(last.begin(), last.end()), kernel + " done");
    B.end_kernel();
  }
  for (ProgramBuilder* x : b) x->set_async(false);
  return done;
}

}  // namespace

CollectiveResult emit_multislice_collective(CollectiveKind kind, std::vector<ProgramBuilder*>& builders,
                                            const std::vector<CoreId>& cores, const HwConfig& hw, uint64_t bytes,
                                            const std::vector<std::vector<uint32_t>>& after,
                                            const CollectiveOptions& opt) {
  if (kind != CollectiveKind::kAllReduce && kind != CollectiveKind::kReduceScatter)
    throw std::invalid_argument(std::string("a ") + collective_name(kind) +
                                " cannot span slices: only sums over the data axes cross the data-center network");
  if (!hw.chip.dcn) throw std::invalid_argument("a collective spans slices, but the chip has no chip.dcn section");
  const uint32_t n = uint32_t(cores.size());
  CollectiveOptions in_slice = opt;
  in_slice.slices = 1;
  in_slice.per_device = false;
  CollectiveResult out;
  std::vector<std::vector<uint32_t>> wait = after;
  auto within = [&](CollectiveKind k) {
    const CollectiveResult r = emit_collective(k, builders, cores, hw, bytes, wait, in_slice);
    in_slice.tag_base += r.tags_used;
    out.tags_used += r.tags_used;
    out.algorithm = r.algorithm;
    out.bytes_sent_per_core += r.bytes_sent_per_core;
    for (uint32_t i = 0; i < n; ++i) wait[i] = {r.done[i]};
  };
  if (n > 1) within(CollectiveKind::kReduceScatter);
  const uint64_t share = uint64_t(div_up(int64_t(bytes), int64_t(n)));
  const std::vector<uint32_t> dcn =
      emit_dcn_all_reduce(builders, share, opt.slices, wait, opt.piece_bytes, opt.background, &out.dcn_bytes_per_core);
  out.bytes_sent_per_core += out.dcn_bytes_per_core;
  for (uint32_t i = 0; i < n; ++i) wait[i] = {dcn[i]};
  if (n > 1 && kind == CollectiveKind::kAllReduce) within(CollectiveKind::kAllGather);
  out.done.resize(n);
  for (uint32_t i = 0; i < n; ++i) out.done[i] = wait[i].front();
  return out;
}

}  // namespace tpusim::compiler
