#include "sim/analysis/program_plan.h"

#include <algorithm>
#include <functional>
#include <map>
#include <unordered_map>
#include <utility>

#include "sim/analysis/collective_stats.h"
#include "sim/analysis/op_profile.h"
#include "sim/base/sim_error.h"

namespace tpusim {

const char* op_name(isa::Op op) {
  switch (op) {
    case isa::Op::kDmaLoad: return "dma_load";
    case isa::Op::kDmaStore: return "dma_store";
    case isa::Op::kMxuWeights: return "mxu_weights";
    case isa::Op::kMxuMatmul: return "mxu_matmul";
    case isa::Op::kVpu: return "vpu";
    case isa::Op::kBarrier: return "barrier";
    case isa::Op::kSend: return "send";
    case isa::Op::kRecv: return "recv";
    case isa::Op::kHostLoad: return "host_load";
    case isa::Op::kHostStore: return "host_store";
  }
  return "?";
}

std::string describe_instr(const CorePlan& cp, uint32_t i) {
  const isa::Instr& ins = cp.instr(i);
  return cp.name + " instruction #" + std::to_string(i) + " '" + ins.label + "' (" + op_name(ins.op) + ")";
}

namespace {

std::string describe(const CorePlan& cp, uint32_t i) { return describe_instr(cp, i); }

std::string core_name(uint32_t chip, uint32_t core) {
  return "slice.chip" + std::to_string(chip) + ".core" + std::to_string(core);
}

[[noreturn]] void invalid(const std::string& what) { throw SimError("invalid program: " + what); }

// Fills csr.begin from per-row counts held in csr.begin[1..rows] (prefix sum).
void prefix_sum(Csr& csr) {
  for (size_t r = 1; r < csr.begin.size(); ++r) csr.begin[r] += csr.begin[r - 1];
}

// The deps the decoding walk of `prog` pushes at most: each stored instruction's explicit deps
// plus an implicit one for a matmul, times the runs of the repeats around it (checked nesting).
uint64_t expanded_dep_bound(const isa::CoreProgram& prog) {
  struct Open {
    uint64_t end, runs;
  };
  std::vector<Open> open;  // the repeats around the current instruction, their product of trips
  uint64_t total = 0;
  size_t r = 0;
  for (uint32_t j = 0; j < prog.instrs.size(); ++j) {
    while (!open.empty() && open.back().end <= j) open.pop_back();
    for (; r < prog.repeats.size() && prog.repeats[r].first == j; ++r) {
      const uint64_t outer = open.empty() ? 1 : open.back().runs;
      open.push_back({uint64_t(j) + prog.repeats[r].len, std::min<uint64_t>(outer * prog.repeats[r].trips, kBarrierPos)});
    }
    const isa::Instr& ins = prog.instrs[j];
    const uint64_t deps = ins.deps.size() + (ins.op == isa::Op::kMxuMatmul);
    total += deps * (open.empty() ? 1 : open.back().runs);
  }
  return std::min<uint64_t>(total, uint64_t(kBarrierPos) * 4);  // more fails the walk's checks
}

// PositionIndex of a stream of n instructions from its transfers' and barriers' stream indices.
void index_positions(PositionIndex& p, uint32_t n, const std::vector<uint32_t>& transfers,
                     const std::vector<uint32_t>& barriers) {
  p.bits.assign((size_t(n) + 63) / 64, 0);
  for (uint32_t i : transfers) p.bits[i >> 6] |= uint64_t(1) << (i & 63);
  for (uint32_t i : barriers) p.bits[i >> 6] |= uint64_t(1) << (i & 63);
  p.rank.resize(p.bits.size());
  uint32_t count = 0;
  for (size_t w = 0; w < p.bits.size(); ++w) {
    p.rank[w] = count;
    count += uint32_t(__builtin_popcountll(p.bits[w]));
  }
  // Both lists are in stream order: merged, they are the positions in stream order.
  p.value.resize(count);
  size_t t = 0, b = 0, k = 0;
  while (t < transfers.size() || b < barriers.size()) {
    if (b == barriers.size() || (t < transfers.size() && transfers[t] < barriers[b]))
      p.value[k++] = uint32_t(t++);
    else
      p.value[k++] = uint32_t(b++) | kBarrierPos;
  }
}

}  // namespace

void ProgramPlan::build(const isa::Program& program, const HwConfig& hw, PlanOptions options) {
  options_ = options;
  const uint32_t chips = hw.slice.chips();
  const uint32_t per_chip = hw.chip.cores;
  cores_.resize(program.cores.size());
  barrier_participants_.clear();
  instructions_ = 0;
  decoded_used_ = 0;
  decoded_of_.clear();
  sizes_of_.clear();
  match_of_.clear();
  per_chip_ = per_chip;
  slot_of_.assign(size_t(chips) * per_chip, kNoIndex);

  std::vector<bool> seen(size_t(chips) * per_chip, false);
  // Barrier groups: the j-th barrier with id b on every core forms one group.
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> groups;
  for (size_t c = 0; c < program.cores.size(); ++c) {
    const isa::CoreProgram& prog = program.cores[c];
    if (prog.chip >= chips || prog.core >= per_chip) {
      invalid("program '" + program.name + "' targets chip " + std::to_string(prog.chip) + " core " +
              std::to_string(prog.core) + ", but the slice has " + std::to_string(chips) + " chips of " +
              std::to_string(per_chip) + " cores");
    }
    size_t slot = size_t(prog.chip) * per_chip + prog.core;
    if (seen[slot]) {
      invalid("program '" + program.name + "' has two streams for chip " + std::to_string(prog.chip) +
              " core " + std::to_string(prog.core));
    }
    seen[slot] = true;
    slot_of_[slot] = uint32_t(c);
    if (prog.stream_of >= 0) {
      const size_t src = size_t(prog.stream_of);
      if (src >= program.cores.size() || src == c || program.cores[src].stream_of >= 0 || !prog.instrs.empty() ||
          !prog.vmem_allocs.empty() || !prog.kernels.empty() || !prog.repeats.empty()) {
        invalid("program '" + program.name + "': " + core_name(prog.chip, prog.core) + " shares the stream of core program " +
                std::to_string(prog.stream_of) + ", which must be another core program with its own stream (and a " +
                "sharing core has no instructions, VMEM allocations, kernels or repeats of its own)");
      }
    }
    const isa::CoreProgram& stream = program.stream(c);
    CorePlan& cp = cores_[c];
    cp.plan = this;
    cp.slot = uint32_t(c);
    cp.prog = &stream;
    cp.chip = prog.chip;
    cp.core = prog.core;
    cp.name = core_name(prog.chip, prog.core);
    decode(cp, stream, hw);
    if (prog.stream_of < 0) check_kernel_table(cp.name, stream);
    instructions_ += cp.size();
    translate_peers(cp, prog, program);
    transfer_sizes(cp);
    cp.match_pos_at = {};
    cp.own_match_pos.clear();
    cp.barrier_group_at.assign(cp.barriers.size(), kNoIndex);

    std::unordered_map<uint32_t, uint32_t> occurrence;
    for (size_t k = 0; k < cp.barriers.size(); ++k) {
      uint32_t id = cp.instr(cp.barriers[k]).barrier_id;
      auto [it, inserted] = groups.try_emplace({id, occurrence[id]++}, uint32_t(barrier_participants_.size()));
      if (inserted) barrier_participants_.push_back(0);
      cp.barrier_group_at[k] = it->second;
      ++barrier_participants_[it->second];
    }
  }
  match_transfers(program, hw);
  // The decoding scratch is kept for the next build (a training run plans thousands of small
  // programs) but not through a big stream's run.
  if (last_user_.capacity() + stamp_.capacity() + stack_.capacity() > (size_t(1) << 20)) {
    std::vector<uint32_t>().swap(last_user_);
    std::vector<uint32_t>().swap(stamp_);
    std::vector<uint32_t>().swap(stack_);
  }
}

// Shares the decoded stream of an earlier core of this build that runs the same stream (shared
// SPMD streams) or one of the same structure (the first and the latest are tried: SPMD replicas
// with streams of their own), else decodes and checks the stream.
void ProgramPlan::decode(CorePlan& cp, const isa::CoreProgram& prog, const HwConfig& hw) {
  auto known = decoded_of_.find(&prog);  // a shared stream, decoded for an earlier core
  const DecodedStream* d = known != decoded_of_.end() ? known->second : nullptr;
  if (d) {
    // shared: nothing to compare
  } else if (decoded_used_ > 0 && same_structure(*decoded_[0], prog, hw.chip)) {
    d = decoded_[0].get();
  } else if (decoded_used_ > 1 && same_structure(*decoded_[decoded_used_ - 1], prog, hw.chip)) {
    d = decoded_[decoded_used_ - 1].get();
  }
  bool fresh = false;
  if (!d) {
    if (decoded_used_ == decoded_.size()) decoded_.push_back(std::make_unique<DecodedStream>());
    DecodedStream& nd = *decoded_[decoded_used_++];
    decode_into(nd, cp, prog, hw);
    d = &nd;
    fresh = true;
  }
  decoded_of_.emplace(&prog, d);
  cp.unit = d->unit;
  cp.deps = d->deps;
  cp.succs = d->succs;
  cp.queues = d->queues;
  cp.role = d->role;
  cp.axis = d->axis;
  cp.op = d->op;
  cp.barriers = d->barriers;
  cp.sends_recvs = d->sends_recvs;
  cp.position = d->position;
  cp.stored = d->stored;
  cp.has_transfers = d->has_transfers;
  if (fresh) check_weight_buffers(cp, hw);  // structural: the same for every stream sharing it
}

// sim/isa/repeat.h's rules for a stream's repeats; the length of the expanded stream.
uint32_t ProgramPlan::check_repeats(const std::string& core, const isa::CoreProgram& prog) {
  std::vector<uint64_t> open;  // ends of the repeats around the current one, outermost first
  uint64_t prev_first = 0;
  for (size_t r = 0; r < prog.repeats.size(); ++r) {
    const isa::Repeat& rep = prog.repeats[r];
    const uint64_t end = uint64_t(rep.first) + rep.len;
    auto what = [&] {  // built only for an error: a step has hundreds of thousands of repeats
      return core + " repeat " + std::to_string(r) + " (stored instructions " + std::to_string(rep.first) + " .. " +
             std::to_string(end) + ", " + std::to_string(rep.trips) + " runs)";
    };
    if (rep.len == 0 || rep.trips < 2) invalid(what() + ": a repeat has at least one instruction and runs at least twice");
    if (end > prog.instrs.size())
      invalid(what() + ": runs past the " + std::to_string(prog.instrs.size()) + " stored instructions");
    while (!open.empty() && open.back() <= rep.first) open.pop_back();
    if ((r > 0 && rep.first < prev_first) || (!open.empty() && end > open.back()))
      invalid(what() + ": repeats must be sorted by `first` and either nest or not overlap");
    if (open.size() >= isa::kMaxRepeatDepth)
      invalid(what() + ": repeats nest at most " + std::to_string(isa::kMaxRepeatDepth) + " deep");
    open.push_back(end);
    prev_first = rep.first;
    if (rep.fixed.size() != rep.len)
      invalid(what() + ": `fixed` has " + std::to_string(rep.fixed.size()) + " entries, one per body instruction is needed");
    for (uint32_t j = 0; j < rep.len; ++j) {
      const isa::Instr& ins = prog.instrs[rep.first + j];
      if (!isa::repeatable(ins))
        invalid(what() + ": body instruction " + std::to_string(j) + " is a " + op_name(ins.op) + " with " +
                std::to_string(ins.deps.size()) + " deps; a repeat's body holds only DMA, MXU and VPU work with at most " +
                std::to_string(isa::kMaxRepeatDeps) + " deps each");
      if ((rep.fixed[j] >> ins.deps.size()) != 0)
        invalid(what() + ": body instruction " + std::to_string(j) + " has " + std::to_string(ins.deps.size()) +
                " deps, but fixed mask " + std::to_string(rep.fixed[j]) + " (a bit per dep)");
    }
  }
  const uint64_t expanded = prog.stream_size();  // saturating (isa::repeat_tree)
  if (expanded >= kBarrierPos)
    invalid(core + ": a stream of " + std::to_string(expanded) + " instructions" +
            (prog.repeats.empty() ? "" : " (its repeats expanded)") + "; a core stream has at most 2^31 - 1");
  return uint32_t(expanded);
}

// The same ops, MXUs and explicit deps as the stream `d` was decoded from (so the same units,
// implicit deps, queues and weight-buffer verdict), and tiles that fit the MXU.
bool ProgramPlan::same_structure(const DecodedStream& d, const isa::CoreProgram& prog, const ChipParams& chip) {
  const MxuParams& mxu = chip.core.mxu;
  const bool cmem = has_cmem(chip);
  if (d.repeats != prog.repeats) return false;  // the same stored layout (DecodedStream::stored)
  const uint32_t n = uint32_t(prog.stream_size());
  if (d.unit.size() != n) return false;
  for (isa::StreamWalk w(prog); !w.done(); w.next()) {
    const uint32_t i = w.index();
    const isa::Instr& ins = w.instr();
    if (uint8_t(ins.op) != d.op[i] || collective_role(ins) != d.role[i] || collective_axis(ins) != d.axis[i]) return false;
    if (ins.mem == isa::MemSpace::kCmem && !cmem) return false;  // decoded afresh: rejected there
    if (ins.dcn && !chip.dcn) return false;                        // likewise
    if (ins.async != UnitIndex::is_async(d.unit[i])) return false;  // a background DMA/send/VPU, or rejected
    if (ins.op == isa::Op::kMxuWeights || ins.op == isa::Op::kMxuMatmul) {
      const bool weights = ins.op == isa::Op::kMxuWeights;
      if (ins.mxu >= mxu.count || ins.k > mxu.rows || ins.n > mxu.cols || (!weights && (ins.passes == 0 || ins.packing == 0))) return false;
      if (d.unit[i] != (weights ? UnitIndex::mxu_weights(ins.mxu) : UnitIndex::mxu_stream(ins.mxu))) return false;
    }
    const uint32_t explicit_deps = d.deps.size(i) - d.implicit[i];
    if (ins.deps.size() != explicit_deps) return false;
    const uint32_t* row = d.deps.row(i);
    for (uint32_t k = 0; k < explicit_deps; ++k)
      if (w.dep(k) != row[k]) return false;
  }
  return true;
}

void ProgramPlan::decode_into(DecodedStream& d, const CorePlan& cp, const isa::CoreProgram& prog, const HwConfig& hw) {
  const MxuParams& mxu = hw.chip.core.mxu;
  const uint32_t n = check_repeats(cp.name, prog);
  const uint32_t units = UnitIndex::count(mxu.count);
  if (units > 256) invalid("a core with " + std::to_string(mxu.count) + " MXUs: at most 124 are supported");
  d.repeats = prog.repeats;
  d.stored.clear();
  if (!prog.repeats.empty()) d.stored.resize(n);
  d.unit.resize(n);
  d.op.resize(n);
  d.role.resize(n);
  d.axis.resize(n);
  d.implicit.assign(n, 0);
  d.has_transfers = false;
  d.barriers.clear();
  d.sends_recvs.clear();
  d.deps.begin.assign(size_t(n) + 1, 0);
  d.deps.items.clear();
  // Exactly what the walk pushes at most (explicit deps, and an implicit one per matmul): growing
  // by doubling left up to half the largest table of a long stream's plan unused. (At most 8 per
  // instruction up front: a malformed program the walk rejects early reserves no more than the
  // per-instruction tables above.)
  d.deps.items.reserve(std::min<uint64_t>(expanded_dep_bound(prog), 8 * uint64_t(n)));

  std::vector<uint32_t>& last_load = tmp_;  // per MXU: latest weight load in stream order
  last_load.assign(mxu.count, kNoIndex);

  for (isa::StreamWalk w(prog); !w.done(); w.next()) {
    const uint32_t i = w.index();
    if (i >= n) invalid(cp.name + ": its repeats expand to more than the " + std::to_string(n) + " instructions they count");
    const isa::Instr& ins = w.instr();
    // cp's views are set once decoded: errors here name the walk's instruction.
    auto describe_at = [&](uint32_t at) { return cp.name + " instruction #" + std::to_string(at) + " '" + ins.label + "' (" + op_name(ins.op) + ")"; };
    if (!d.stored.empty()) d.stored[i] = w.stored();
    d.op[i] = uint8_t(ins.op);
    d.role[i] = collective_role(ins);
    d.axis[i] = collective_axis(ins);
    for (size_t k = 0; k < ins.deps.size(); ++k) {
      const uint32_t dep = w.dep(k);
      if (dep >= i) invalid(describe_at(i) + " depends on #" + std::to_string(dep) + ", which is not earlier in the stream");
      d.deps.items.push_back(dep);
    }
    if (ins.async && !isa::has_background_queue(ins.op)) {
      invalid(describe_at(i) + " is marked async, but only DMAs, sends and VPU blocks run in the background (a " +
              op_name(ins.op) + " has no background queue); clear its async flag");
    }
    auto check_mxu = [&] {
      if (ins.mxu >= mxu.count) {
        invalid(describe_at(i) + " uses mxu " + std::to_string(ins.mxu) + ", but the core has " +
                std::to_string(mxu.count) + " MXUs");
      }
      if (ins.k > mxu.rows || ins.n > mxu.cols) {
        invalid(describe_at(i) + " has a " + std::to_string(ins.k) + "x" + std::to_string(ins.n) +
                " tile, larger than the " + std::to_string(mxu.rows) + "x" + std::to_string(mxu.cols) + " MXU");
      }
    };
    switch (ins.op) {
      case isa::Op::kDmaLoad:
      case isa::Op::kDmaStore:
        if (ins.mem == isa::MemSpace::kCmem && !has_cmem(hw.chip)) {
          invalid(describe_at(i) + " is a CMEM DMA, but chip generation " + hw.chip.generation +
                  " of this config has no CMEM (chip.cmem absent or size_mib 0); compile the program for this "
                  "hardware so that its buffers stay in HBM");
        }
        d.unit[i] = ins.async ? UnitIndex::kDmaAsync : UnitIndex::kDma;
        break;
      case isa::Op::kVpu: d.unit[i] = ins.async ? UnitIndex::kVpuAsync : UnitIndex::kVpu; break;
      case isa::Op::kBarrier:
        d.unit[i] = UnitIndex::kSync;
        d.barriers.push_back(i);
        break;
      case isa::Op::kSend:
        d.sends_recvs.push_back(i);
        d.unit[i] = ins.async ? UnitIndex::kXferAsync : UnitIndex::kXfer;
        d.has_transfers = true;
        break;
      case isa::Op::kHostLoad:
      case isa::Op::kHostStore:
        if (ins.dcn && (ins.op != isa::Op::kHostStore || !hw.chip.dcn)) {
          invalid(describe_at(i) + (ins.op != isa::Op::kHostStore
                                        ? " is marked dcn, which only a host store can be"
                                        : " is a data-center-network store, but the chip (generation " +
                                              hw.chip.generation + ") has no chip.dcn section: give its "
                                              "network interfaces' bandwidth and latency, or run one slice"));
        }
        d.unit[i] = UnitIndex::kHost;
        d.has_transfers = true;
        break;
      case isa::Op::kRecv:
        d.unit[i] = UnitIndex::kRecv;
        d.sends_recvs.push_back(i);
        d.has_transfers = true;
        break;
      case isa::Op::kMxuWeights:
        check_mxu();
        d.unit[i] = UnitIndex::mxu_weights(ins.mxu);
        last_load[ins.mxu] = i;
        break;
      case isa::Op::kMxuMatmul: {
        check_mxu();
        if (ins.passes == 0) invalid(describe_at(i) + " has passes = 0 (must be >= 1)");
        if (ins.packing == 0) invalid(describe_at(i) + " has packing = 0 (must be >= 1)");
        d.unit[i] = UnitIndex::mxu_stream(ins.mxu);
        // The tile a matmul streams against: its latest weight-load dep on the same MXU. Without
        // one, the latest weight load of that MXU earlier in the stream becomes an implicit dep
        // (a matmul needs its weights loaded). (Deps are earlier, so already decoded: their unit
        // says op and MXU.)
        const uint32_t weights_unit = UnitIndex::mxu_weights(ins.mxu);
        uint32_t tile = kNoIndex;
        for (uint32_t k = d.deps.begin[i]; k < d.deps.items.size(); ++k) {
          const uint32_t dep = d.deps.items[k];
          if (d.unit[dep] == weights_unit && (tile == kNoIndex || dep > tile)) tile = dep;
        }
        if (tile == kNoIndex) {
          tile = last_load[ins.mxu];
          if (tile == kNoIndex) invalid(describe_at(i) + " streams against MXU " + std::to_string(ins.mxu) + ", which has no weight tile loaded");
          d.deps.items.push_back(tile);
          d.implicit[i] = 1;
        }
        break;
      }
    }
    d.deps.begin[i + 1] = uint32_t(d.deps.items.size());
  }
  index_positions(d.position, n, d.sends_recvs, d.barriers);

  // Reverse edges (successors) and unit queues, by counting sort (stream order is preserved).
  d.succs.begin.clear();
  d.succs.items.clear();
  if (options_.successors) {
    d.succs.begin.assign(size_t(n) + 1, 0);
    for (uint32_t dep : d.deps.items) ++d.succs.begin[dep + 1];
    prefix_sum(d.succs);
    d.succs.items.resize(d.deps.items.size());
    std::vector<uint32_t>& fill = stack_;
    fill.assign(d.succs.begin.begin(), d.succs.begin.end() - 1);
    for (uint32_t i = 0; i < n; ++i)
      for (uint32_t k = d.deps.begin[i]; k < d.deps.begin[i + 1]; ++k) d.succs.items[fill[d.deps.items[k]]++] = i;
  }
  if (d.succs.begin.empty()) d.succs.begin.assign(1, 0);
  d.queues.begin.assign(size_t(units) + 1, 0);
  for (uint32_t i = 0; i < n; ++i) ++d.queues.begin[d.unit[i] + 1];
  prefix_sum(d.queues);
  d.queues.items.resize(n);
  {
    std::vector<uint32_t>& fill = stack_;
    fill.assign(d.queues.begin.begin(), d.queues.begin.end() - 1);
    for (uint32_t i = 0; i < n; ++i) d.queues.items[fill[d.unit[i]]++] = i;
  }
}

// program.h: "the sim checks only that at most mxu.weight_buffers tiles are resident". With B
// buffers, weight load j overwrites the buffer of load j-B, so every matmul that streams against
// tile j-B must have completed before load j starts. This is checked structurally (independent
// of timing, so both engines agree): load j must come after that tile's last user in the
// happens-before order of the program.
void ProgramPlan::check_weight_buffers(const CorePlan& cp, const HwConfig& hw) {
  const MxuParams& mxu = hw.chip.core.mxu;
  const uint32_t b = std::max<uint32_t>(mxu.weight_buffers, 1);
  for (uint32_t m = 0; m < mxu.count; ++m) {
    const uint32_t q = UnitIndex::mxu_weights(m);
    const uint32_t* loads = cp.queues.row(q);
    const uint32_t count = cp.queues.size(q);
    if (count <= b) continue;
    // Per load (position in its queue): the last matmul that streams against its tile, the tile
    // of a matmul being its latest weight-load dep on its MXU (the implicit one when it names
    // none: decode_into). Matmuls run in stream order and mostly use the tiles in order: the last
    // one's position is tried first.
    last_user_.assign(count, kNoIndex);
    const uint32_t stream = UnitIndex::mxu_stream(m);
    const uint32_t* matmuls = cp.queues.row(stream);
    uint32_t at = 0;
    for (uint32_t k = 0, e = cp.queues.size(stream); k < e; ++k) {
      const uint32_t i = matmuls[k];
      uint32_t tile = kNoIndex;
      for (uint32_t d = cp.deps.begin[i]; d < cp.deps.begin[i + 1]; ++d) {
        const uint32_t dep = cp.deps.items[d];
        if (cp.unit[dep] == q && (tile == kNoIndex || dep > tile)) tile = dep;
      }
      if (!(at < count && loads[at] == tile)) at = uint32_t(std::lower_bound(loads, loads + count, tile) - loads);
      last_user_[at] = i;  // i grows: the last one wins
    }
    for (uint32_t j = b; j < count; ++j) {
      const uint32_t old = loads[j - b];
      const uint32_t user = last_user_[j - b];
      const uint32_t load = loads[j];
      if (user == kNoIndex) continue;  // nobody streamed against it: retired when loaded
      if (user > load || !happens_before(cp, user, load, m)) {
        throw SimError("invalid program: MXU weight buffers exceeded on " + cp.name + ".mxu" + std::to_string(m) +
                       ": " + describe(cp, load) + " would overwrite the tile loaded by #" + std::to_string(old) +
                       " while matmul #" + std::to_string(user) + " '" + cp.instr(user).label +
                       "' may still use it (mxu.weight_buffers = " + std::to_string(mxu.weight_buffers) +
                       "; add a dep from the weight load on that matmul)");
      }
    }
  }
}

// True when matmul `user` (on MXU `m`) is guaranteed to have completed before `load` starts.
// Edges: explicit/implicit deps; the weight-load path is in-order and a load completes when its
// occupancy ends, so a load also starts after its predecessor on the same path completed;
// matmuls on one streaming path complete in stream order (same fill/drain after in-order
// streams), so reaching any later matmul of MXU `m` suffices.
bool ProgramPlan::happens_before(const CorePlan& cp, uint32_t user, uint32_t load, uint32_t m) {
  // The search stays in [user, load]: stamp_ covers that window (user <= load).
  if (stamp_.size() <= load - user) stamp_.resize(size_t(load - user) + 1, 0);
  if (++epoch_ == 0) {
    std::fill(stamp_.begin(), stamp_.end(), 0);
    epoch_ = 1;
  }
  const uint32_t stream_unit = UnitIndex::mxu_stream(m);
  stack_.clear();
  stack_.push_back(load);
  stamp_[load - user] = epoch_;
  while (!stack_.empty()) {
    uint32_t x = stack_.back();
    stack_.pop_back();
    auto visit = [&](uint32_t y) {
      if (y < user || stamp_[y - user] == epoch_) return false;  // deps point backwards: y cannot reach `user`
      if (cp.unit[y] == stream_unit) return true;  // a matmul of MXU m
      stamp_[y - user] = epoch_;
      stack_.push_back(y);
      return false;
    };
    for (uint32_t k = cp.deps.begin[x]; k < cp.deps.begin[x + 1]; ++k)
      if (visit(cp.deps.items[k])) return true;
    if (UnitIndex::is_mxu_weights(cp.unit[x])) {
      // Predecessor on the same weight path: scan back in its queue (loads are few per MXU).
      const uint32_t q = cp.unit[x];
      const uint32_t* row = cp.queues.row(q);
      const uint32_t* pos = std::lower_bound(row, row + cp.queues.size(q), x);
      if (pos != row && visit(*(pos - 1))) return true;
    }
  }
  return false;
}

namespace {

// One end of a transfer as the core that has it sees the other: key = the other core's global index
// (chip x cores per chip + core) << 32 | tag; pos = its position in the core's sends_recvs.
struct TransferEnd {
  uint64_t key;
  uint32_t pos;
  bool operator<(const TransferEnd& o) const { return key < o.key || (key == o.key && pos < o.pos); }
};

uint64_t global_index(isa::PeerRef p, uint32_t per_chip) { return uint64_t(p.chip) * per_chip + p.core; }

// A core's receives (or sends) sorted by (the other core, tag), built when a transfer looks one up
// that its guess does not find, or to check or report the core: a slice's SPMD replicas mostly need
// none (16 bytes per transfer of every core, gigabytes on a 70B-class step over 256 chips).
class SortedEnds {
 public:
  SortedEnds(isa::Op op, size_t cores, uint32_t per_chip) : op_(op), of_(cores), built_(cores, 0), per_chip_(per_chip) {}
  const std::vector<TransferEnd>& of(const CorePlan& cp) {
    std::vector<TransferEnd>& v = of_[cp.slot];
    if (!built_[cp.slot]) {
      isa::PeerTable::Reader peer = cp.peer_reader();
      for (uint32_t pos = 0; pos < cp.sends_recvs.size(); ++pos) {
        const isa::PeerRef p = peer.next();
        if (cp.op[cp.sends_recvs[pos]] == uint8_t(op_)) v.push_back({global_index(p, per_chip_) << 32 | cp.transfer_tag[pos], pos});
      }
      std::sort(v.begin(), v.end());
      built_[cp.slot] = 1;
    }
    return v;
  }

 private:
  isa::Op op_;
  std::vector<std::vector<TransferEnd>> of_;
  std::vector<uint8_t> built_;
  uint32_t per_chip_;
};

// Every transfer's peer is a core of the slice other than its own, and no core has two sends (or
// receives) of one (sender, receiver, tag) triple: checked on the cores whose stream repeats a tag
// (`distinct_tags`: else no peers can repeat one).
void check_peers(const std::vector<CorePlan>& cores, const HwConfig& hw, SortedEnds& recvs,
                 const std::function<bool(const CorePlan&)>& distinct_tags) {
  const uint32_t chips = hw.slice.chips();
  const uint32_t per_chip = hw.chip.cores;
  std::vector<TransferEnd> sends;  // scratch: one core's, sorted
  for (const CorePlan& cp : cores) {
    if (!cp.has_transfers) continue;
    const uint64_t self = global_index({cp.chip, cp.core}, per_chip);
    isa::PeerTable::Reader peer = cp.peer_reader();
    for (uint32_t pos = 0; pos < cp.sends_recvs.size(); ++pos) {
      const uint32_t i = cp.sends_recvs[pos];
      const isa::PeerRef to = peer.next();
      const bool send = cp.op[i] == uint8_t(isa::Op::kSend);
      const char* to_from = send ? " sends to " : " receives from ";
      if (to.chip >= chips || to.core >= per_chip) {
        invalid(describe(cp, i) + to_from + "chip " + std::to_string(to.chip) + " core " +
                std::to_string(to.core) + ", but the slice has " + std::to_string(chips) + " chips of " +
                std::to_string(per_chip) + " cores");
      }
      if (global_index(to, per_chip) == self) invalid(describe(cp, i) + to_from + "its own core (use a DMA)");
    }
    if (distinct_tags(cp)) continue;  // no two of a triple, whatever the peers
    sends.clear();
    isa::PeerTable::Reader again = cp.peer_reader();
    for (uint32_t pos = 0; pos < cp.sends_recvs.size(); ++pos) {
      const isa::PeerRef p = again.next();
      if (cp.op[cp.sends_recvs[pos]] == uint8_t(isa::Op::kSend))
        sends.push_back({global_index(p, per_chip) << 32 | cp.transfer_tag[pos], pos});
    }
    std::sort(sends.begin(), sends.end());
    for (const std::vector<TransferEnd>* v : {&std::as_const(sends), &recvs.of(cp)}) {  // both sorted
      for (size_t k = 1; k < v->size(); ++k) {
        if ((*v)[k].key != (*v)[k - 1].key) continue;
        const bool send = v == &sends;
        const uint32_t tag = uint32_t((*v)[k].key);
        const uint64_t other = (*v)[k].key >> 32;
        invalid(describe(cp, cp.sends_recvs[(*v)[k].pos]) + " and " + describe(cp, cp.sends_recvs[(*v)[k - 1].pos]) +
                " are both " + (send ? "sends to " : "recvs from ") +
                core_name(uint32_t(other / per_chip), uint32_t(other % per_chip)) + " with tag " + std::to_string(tag) +
                " (a sender, receiver, tag triple must be unique in a program)");
      }
    }
  }
}

}  // namespace

// program.h: a kSend and a kRecv pair up by (sender core, receiver core, tag); each triple
// appears at most once per program, and every send has its recv and vice versa.
// A send finds its receive (a receive its send) at the position the previous replica's did (SPMD
// replicas match at the same positions), else in the other core's receives (sends) sorted by (core,
// tag) (SortedEnds: built only for the cores looked up so; hash maps of every transfer of the slice
// took gigabytes on a full pod). Repeated triples are looked for per stream where its tags are
// distinct, per core only where they repeat (check_peers). Errors name the first offender in core order.
void ProgramPlan::match_transfers(const isa::Program& program, const HwConfig& hw) {
  const uint32_t per_chip = hw.chip.cores;
  auto global = [&](isa::PeerRef p) { return global_index(p, per_chip); };
  auto pair_name = [&](uint64_t from, uint64_t to, uint32_t tag) {
    return core_name(uint32_t(from / per_chip), uint32_t(from % per_chip)) + " to " +
           core_name(uint32_t(to / per_chip), uint32_t(to % per_chip)) + " with tag " + std::to_string(tag);
  };
  SortedEnds recvs(isa::Op::kRecv, cores_.size(), per_chip), sends(isa::Op::kSend, cores_.size(), per_chip);
  check_peers(cores_, hw, recvs, [this](const CorePlan& cp) { return sizes_of_.at(cp.prog).distinct_tags; });
  // Each core's transfers from its own side: a send looks for its receive on the receiver, a
  // receive for its send on the sender. SPMD replicas of one stream match at the same positions:
  // the previous core's match of the same position is tried first (a receive from this core with
  // the send's tag is the only one: checked above, and likewise for sends), the binary search only
  // when it is not it; and a core whose positions are its stream's first core's shares that table.
  // Byte mismatches are reported as found (sender order); a transfer without its other end after
  // every core was matched, receives first (program.h's order of errors).
  std::vector<uint32_t> guess, mine;
  std::vector<size_t> hint_of(cores_.size(), 0);  // per core: the peer-table run its last read found
  const isa::CoreProgram* guess_of = nullptr;
  uint32_t unmatched_recv_core = kNoIndex;
  std::pair<uint32_t, uint32_t> unmatched_send{kNoIndex, kNoIndex};  // (core, position)
  for (uint32_t c = 0; c < cores_.size(); ++c) {
    CorePlan& cp = cores_[c];
    if (!cp.has_transfers) continue;
    if (cp.prog != guess_of) {
      guess.assign(cp.sends_recvs.size(), kNoIndex);
      guess_of = cp.prog;
    }
    const uint64_t self = global({cp.chip, cp.core});
    mine.assign(cp.sends_recvs.size(), kNoIndex);
    isa::PeerTable::Reader peer = cp.peer_reader();
    for (uint32_t pos = 0; pos < cp.sends_recvs.size(); ++pos) {
      const uint32_t instr = cp.sends_recvs[pos];
      const bool send = cp.op[instr] == uint8_t(isa::Op::kSend);
      const uint32_t r = slot_of_[global(peer.next())];
      const uint32_t tag = cp.transfer_tag[pos];
      uint32_t at = kNoIndex;
      if (r != kNoIndex) {
        const CorePlan& rp = cores_[r];
        const uint8_t want = uint8_t(send ? isa::Op::kRecv : isa::Op::kSend);
        at = guess[pos];
        const bool hit = at < rp.sends_recvs.size() && rp.op[rp.sends_recvs[at]] == want &&
                         global(rp.peer_at(at, hint_of[r])) == self && rp.transfer_tag[at] == tag;
        if (!hit) {
          const std::vector<TransferEnd>& v = (send ? recvs : sends).of(rp);
          auto it = std::lower_bound(v.begin(), v.end(), TransferEnd{self << 32 | tag, 0});
          at = it != v.end() && it->key == (self << 32 | tag) ? it->pos : kNoIndex;
          if (at != kNoIndex) guess[pos] = at;
        }
        if (send && at != kNoIndex) {
          const uint64_t sent = cp.transfer_bytes[pos];
          const uint64_t expected = rp.transfer_bytes[at];
          if (expected != 0 && expected != sent) {
            invalid(describe(rp, rp.sends_recvs[at]) + " expects " + std::to_string(expected) + " bytes, but its send " +
                    describe(cp, instr) + " sends " + std::to_string(sent) + " (bytes of a recv: 0 or the send's bytes)");
          }
        }
      }
      mine[pos] = at;
      if (at != kNoIndex) continue;
      if (!send && unmatched_recv_core == kNoIndex) unmatched_recv_core = c;
      if (send && unmatched_send.first == kNoIndex) unmatched_send = {c, pos};
    }
    auto [it, first] = match_of_.try_emplace(cp.prog);
    if (first) it->second = mine;
    if (it->second == mine) {
      cp.match_pos_at = it->second;
    } else {
      cp.own_match_pos = mine;
      cp.match_pos_at = cp.own_match_pos;
    }
  }
  if (unmatched_recv_core != kNoIndex) {
    const CorePlan& rp = cores_[unmatched_recv_core];
    for (const TransferEnd& e : recvs.of(rp)) {  // the first in (sender, tag) order
      if (rp.match_pos_at[e.pos] != kNoIndex) continue;
      invalid(describe(rp, rp.sends_recvs[e.pos]) + " has no matching send (no send from " +
              pair_name(e.key >> 32, global({rp.chip, rp.core}), uint32_t(e.key)) + ")");
    }
  }
  if (unmatched_send.first != kNoIndex) {
    const CorePlan& sp = cores_[unmatched_send.first];
    const uint32_t pos = unmatched_send.second;
    const uint32_t i = sp.sends_recvs[pos];
    const isa::Instr& ins = sp.instr(i);
    invalid(describe(sp, i) + " has no matching recv (no recv from " + core_name(sp.chip, sp.core) + " on " +
            core_name(sp.peer_at(pos).chip, sp.peer_at(pos).core) + " with tag " + std::to_string(ins.tag) +
            (program.name.empty() ? "" : " in program '" + program.name + "'") + ")");
  }
}

// Per kSend/kRecv of cp's stream, the peer this core talks to: as written for a core running its
// own stream, else through its peer table (program.h).
void ProgramPlan::translate_peers(CorePlan& cp, const isa::CoreProgram& own, const isa::Program& program) {
  if (own.stream_of < 0) {
    cp.own_peers.clear();
    for (size_t k = 0; k < cp.sends_recvs.size(); ++k) {
      const isa::Instr& ins = cp.instr(cp.sends_recvs[k]);
      cp.own_peers.push_back({ins.peer_chip, ins.peer_core});
    }
    cp.peers = &cp.own_peers;
    return;
  }
  if (own.peers.size() != cp.sends_recvs.size()) {
    invalid("program '" + program.name + "': " + cp.name + " shares a stream with " +
            std::to_string(cp.sends_recvs.size()) + " sends and receives, but its peer table has " +
            std::to_string(own.peers.size()) + " entries (one per send and receive)");
  }
  cp.own_peers.clear();
  cp.peers = &own.peers;
}

// cp's stream's transfer tags and bytes, read from its instructions once per stream.
void ProgramPlan::transfer_sizes(CorePlan& cp) {
  auto [it, fresh] = sizes_of_.try_emplace(cp.prog);
  TransferSizes& t = it->second;
  if (fresh) {
    t.tag.resize(cp.sends_recvs.size());
    t.bytes.resize(cp.sends_recvs.size());
    for (uint32_t k = 0; k < cp.sends_recvs.size(); ++k) {
      const isa::Instr& ins = cp.instr(cp.sends_recvs[k]);
      t.tag[k] = ins.tag;
      t.bytes[k] = ins.bytes;
    }
    std::vector<uint64_t> keys(cp.sends_recvs.size());  // (is a send, tag)
    for (uint32_t k = 0; k < keys.size(); ++k)
      keys[k] = uint64_t(cp.op[cp.sends_recvs[k]] == uint8_t(isa::Op::kSend)) << 32 | t.tag[k];
    std::sort(keys.begin(), keys.end());
    t.distinct_tags = std::adjacent_find(keys.begin(), keys.end()) == keys.end();
  }
  cp.transfer_tag = t.tag;
  cp.transfer_bytes = t.bytes;
}

std::string ProgramPlan::deadlock_report(uint32_t slot, const std::vector<uint8_t>& done) const {
  const CorePlan& cp = cores_[slot];
  auto instrs = [&](uint32_t i) -> const isa::Instr& { return cp.instr(i); };
  // Why a recv or barrier waits forever.
  auto wait_of = [&](uint32_t i) -> std::string {
    const isa::Instr& ins = instrs(i);
    if (ins.op == isa::Op::kBarrier) {
      return "barrier " + std::to_string(ins.barrier_id) + " was never reached by every participating core";
    }
    const CorePlan& sp = cores_[cp.match_slot(i)];
    return "its data never arrived: the matching send " + describe(sp, cp.match_instr(i)) + " never ran";
  };
  auto is_wait = [&](uint32_t i) { return instrs(i).op == isa::Op::kBarrier || instrs(i).op == isa::Op::kRecv; };
  for (uint32_t i = 0; i < done.size(); ++i) {
    if (done[i]) continue;
    std::string why;
    if (is_wait(i)) {
      why = wait_of(i);
    } else {
      why = "it waits for an instruction that never completed";
      for (uint32_t k = cp.deps.begin[i]; k < cp.deps.begin[i + 1]; ++k) {
        const uint32_t d = cp.deps.items[k];
        if (done[d] || !is_wait(d)) continue;
        why = "it waits for #" + std::to_string(d) + " '" + instrs(d).label + "' (" + op_name(instrs(d).op) +
              "), which never completed: " + wait_of(d);
        break;
      }
    }
    return cp.name + " instruction #" + std::to_string(i) + " '" + instrs(i).label + "' never completed: " + why;
  }
  return "";
}

}  // namespace tpusim
