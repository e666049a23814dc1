// The Program: the only thing that crosses from compiler/ to sim/.
//
// A Program holds one instruction stream per TensorCore. Instructions name the *work* to do
// (bytes to move, LHS rows to stream, vector-register operations to execute), never a duration:
// durations come from the hardware config through the timing formulas in sim/<block>/*_timing.h,
// which both engines (SystemC and analytical) share.
//
// Execution semantics (both engines implement exactly these):
//  * Each instruction runs on one unit of its core: a DMA engine, the weight-load path of MXU `mxu`,
//    the streaming path of MXU `mxu`, or the VPU.
//  * Instructions of one unit start in stream order (in-order per unit queue). Across units they
//    overlap freely, limited only by `deps` (indices of earlier instructions of the same core
//    stream, which must have *completed*) and by unit occupancy.
//  * DMA instructions are spread over the core's DMA engines (first free engine, stream order).
//  * Background work: a kDmaLoad, kDmaStore, kSend or kVpu marked `async` runs on the core's
//    background DMA, transfer or VPU queue instead of its main one (XLA's asynchronous collectives,
//    e.g. a gradient all-reduce running while the backward pass computes). Each background queue is
//    in order, but independent of its main queue: neither blocks the other's head (a synchronous
//    collective's sends do not wait for a background collective's later ring steps). Both share
//    the physical DMA engines, transfer channels, links, HBM and VPU; an engine gives a background
//    instruction the earliest idle interval at or after its ready time that fits it (the main
//    queue, likewise, fits around background work already placed), so the work interleaves
//    without either queue stalling the other.
//  * MXU weight double buffering is expressed by the compiler with deps (a weight load for tile
//    i+2 depends on the last matmul that used tile i); the sim checks only that at most
//    `mxu.weight_buffers` tiles are resident.
//  * Transfers between cores (kSend/kRecv) run on the core's transfer queue, transfers with the
//    host (kHostLoad/kHostStore) on its host queue: each in order, independent of the other (the
//    host's PCIe DMA does not wait behind the ICI's), both on the core's transfer channels and
//    separate from the HBM<->VMEM DMA engines; a kRecv occupies no unit: it completes when its
//    data has arrived. See sim/ici/ici_timing.h for their timing.
//  * VMEM: `vmem_allocs` lists the core's VMEM buffers; the sim rejects a program whose
//    allocations exceed the configured capacity or overlap while both live.
//  * Repeats (optional, sim/isa/repeat.h): a tile loop's body stored once with its run count.
//    Everything above is about the expanded stream, which stream indices count.
//
// Header-only; JSON serialization via nlohmann::json (to_json/from_json below).
//
// Cheap to copy (a data-parallel compile copies whole streams per replica): an Instr is 120 bytes
// with no heap allocation in the common case: its label is an interned isa::Label (one pointer,
// sim/isa/label.h) and its deps a SmallVector with 4 inline entries (sim/isa/small_vector.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/isa/label.h"
#include "sim/isa/peer_table.h"
#include "sim/isa/repeat.h"
#include "sim/isa/small_vector.h"

namespace tpusim::isa {

enum class Op : uint8_t {
  kDmaLoad,     // HBM (or CMEM, see `mem`) -> VMEM, `bytes`
  kDmaStore,    // VMEM -> HBM (or CMEM), `bytes`
  kMxuWeights,  // push a k x n bf16 weight tile into MXU `mxu` (its weight-load path)
  kMxuMatmul,   // stream `rows` LHS rows (k wide) x `passes` through MXU `mxu` against the
                // resident weight tile; results (rows x n, fp32) land in the result buffer
  kVpu,         // a block of vector work (see VpuWork) on the core's VPU
  kBarrier,     // completes when every core's barrier with the same `barrier_id` is reached
  kSend,        // send `bytes` from this core's HBM to core (peer_chip, peer_core)'s HBM, over the
                // on-chip network (same chip) or the ICI (other chip); matched by `tag`
  kRecv,        // completes when the matching kSend's `bytes` have fully arrived in this core's HBM
  kHostLoad,    // `bytes` from host RAM into this core's HBM over its chip's PCIe link (infeed,
                // parameter upload)
  kHostStore,   // `bytes` from this core's HBM to host RAM over PCIe (outfeed); with `dcn`, on
                // over the data-center network (multislice, below)
};

// The memory side of a DMA: the chip's HBM, or its CMEM (TPU v4's on-chip memory between HBM and
// VMEM; sim/cmem/cmem_timing.h). The plan rejects kCmem on a chip without CMEM.
enum class MemSpace : uint8_t { kHbm, kCmem };

// Vector work counted in vector-register operations (one vreg = sublanes x lanes 32-bit
// elements, 8 x 128 on v2/v3). Each field is the count issued to one kind of VLIW slot; the
// VPU's time is the slot-bound maximum (see sim/vpu/vpu_timing.h).
struct VpuWork {
  uint64_t alu_vregs = 0;  // element-wise arithmetic, compares, selects, converts, adds of partial sums
  uint64_t eup_vregs = 0;  // transcendentals (exp, log, rsqrt, tanh, reciprocal, erf)
  uint64_t xlu_vregs = 0;  // cross-lane work: lane reductions, transposes, permutes
  uint64_t vld_vregs = 0;  // VMEM -> vreg loads
  uint64_t vst_vregs = 0;  // vreg -> VMEM stores

  bool operator==(const VpuWork&) const = default;
};

// The collective an instruction (or kernel) belongs to, set by the compiler (compiler/collectives/collectives.h):
// what the engines' collective statistics (sim/analysis/collective_stats.h) are kept by. kNone: not
// part of a collective (compute, infeed, barriers of the step).
// kCollectivePermute: point-to-point sends of an imported module's collective-permute.
// kDcnAllReduce: the part of a multislice collective that crosses the data-center network (the
// all-reduce of each core's shard across the slices, compiler/collectives/collectives_dcn.cc).
enum class Collective : uint8_t { kNone, kAllReduce, kAllGather, kReduceScatter, kAllToAll, kCollectivePermute, kDcnAllReduce };
inline constexpr uint32_t kCollectiveKinds = 7;  // including kNone

// The mesh axis a collective runs along (Instr::collective_axis), for the engines' statistics per
// axis: 0 none or not known (an imported module's), 1 + the compiler's mesh axis within a slice
// (1 data, 2 fsdp, 3 sequence, 4 tensor: models::MeshAxis), kDcnAxis across slices (a multislice
// collective's data-center-network part).
inline constexpr uint8_t kDcnAxis = 5;
inline constexpr uint32_t kCollectiveAxes = 6;  // including 0

// Indices of earlier instructions in the same core stream (most instructions have 0-3).
using Deps = SmallVector<uint32_t, 4>;

// Fields are ordered for packing (the 32-bit ones together), not by op.
struct Instr {
  Op op = Op::kVpu;
  MemSpace mem = MemSpace::kHbm;  // kDmaLoad / kDmaStore: the memory side (in op's padding)
  bool async = false;             // kDmaLoad / kDmaStore / kSend / kVpu: runs on the background queue (above)
  Collective collective = Collective::kNone;  // any op: the collective it belongs to (in the padding)
  // kMxuWeights / kMxuMatmul
  uint32_t mxu = 0;     // which MXU of the core
  uint32_t rows = 0;    // kMxuMatmul: LHS rows streamed
  uint32_t k = 0;       // contraction depth used (<= mxu rows)
  uint32_t n = 0;       // output columns used (<= mxu cols)
  uint8_t passes = 1;   // bf16 passes: 1 (default), 3 (high), 6 (highest) for fp32 operands
  uint8_t packing = 1;  // LHS rows per row slot: 2 for an int8/fp8 matmul at twice the bf16 rate (MxuParams)
  // kHostStore: a data-center-network send (multislice). The bytes leave this core's HBM over PCIe
  // to its host and go on through the host's network interface to the host of the same chip in the
  // next slice; the store completes when they are in that host's RAM. The slices of a multislice
  // run the same program, so the simulated slice stands for each: when the store completes, the
  // previous slice's same bytes are in this host's RAM, for a kHostLoad to bring in.
  bool dcn = false;
  uint8_t collective_axis = 0;  // any op of a collective: its mesh axis (kCollectiveAxes above; in the padding)
  // kBarrier
  uint32_t barrier_id = 0;
  // kSend / kRecv: the other end and the tag that pairs a send with its receive (a (sender,
  // receiver, tag) triple appears at most once per program).
  uint32_t peer_chip = 0;
  uint32_t peer_core = 0;
  uint32_t tag = 0;
  // kDmaLoad / kDmaStore / transfers
  uint64_t bytes = 0;
  // kVpu
  VpuWork vpu;
  Deps deps;  // indices of earlier instructions in the same core stream
  // For people: the HLO fusion / op this instruction belongs to (trace event name).
  Label label;
};
static_assert(sizeof(Instr) == 120, "Instr layout: see the field order note");

// The ops with a background queue (Instr::async): DMAs, sends and VPU blocks. The compiler marks
// background work with it and the engines' plan refuses async on anything else.
inline constexpr bool has_background_queue(Op op) {
  return op == Op::kDmaLoad || op == Op::kDmaStore || op == Op::kVpu || op == Op::kSend;
}

// Every field but the deps and the transfer peer (peer_chip, peer_core): what two instructions
// share when they are the same work at another place of a loop (compiler/lower/reroll.cc) or on
// another SPMD replica (compiler/collectives/replicas.cc). One list, beside the struct.
inline bool same_work(const Instr& a, const Instr& b) {
  return a.op == b.op && a.mem == b.mem && a.async == b.async && a.collective == b.collective && a.mxu == b.mxu &&
         a.rows == b.rows && a.k == b.k && a.n == b.n && a.passes == b.passes && a.packing == b.packing && a.dcn == b.dcn && a.collective_axis == b.collective_axis &&
         a.barrier_id == b.barrier_id &&
         a.tag == b.tag && a.bytes == b.bytes && a.vpu == b.vpu && a.label == b.label;
}

// What a repeat's body may hold (sim/isa/repeat.h): DMA, MXU and VPU work with at most
// kMaxRepeatDeps deps. Barriers and transfers are matched across cores one by one.
inline bool repeatable(const Instr& in) {
  const bool work = in.op == Op::kDmaLoad || in.op == Op::kDmaStore || in.op == Op::kVpu || in.op == Op::kMxuWeights ||
                    in.op == Op::kMxuMatmul;
  return work && in.deps.size() <= kMaxRepeatDeps;
}

struct VmemAlloc {
  uint64_t offset_bytes = 0;
  uint64_t size_bytes = 0;
  uint32_t first_instr = 0;  // live range [first_instr, last_instr] in stream indices
  uint32_t last_instr = 0;
  Label label;
};

// A kernel of a core stream (an XLA fusion, a collective): the compiler's kernel table, read by
// the engines' op profile (sim/analysis/op_profile.h) and by people; never used for timing. Its
// instructions are the stream indices [first_instr, last_instr]; `flops` and `hbm_bytes` are the
// compiler's accounting of the kernel (ProgramInfo's figures are their sums over core 0's table),
// `vpu` the sum of its kVpu instructions' work (so that a profile need not read the stream).
struct KernelRange {
  Label name;
  uint32_t first_instr = 0;
  uint32_t last_instr = 0;
  uint64_t flops = 0;      // useful floating-point operations (2 per MAC)
  uint64_t hbm_bytes = 0;  // HBM traffic the kernel's schedule moves
  VpuWork vpu;
  Collective collective = Collective::kNone;  // a collective's kernel: which (its instructions carry it too)
};

struct CoreProgram {
  uint32_t chip = 0;
  uint32_t core = 0;  // core index within its chip
  std::vector<Instr> instrs;
  std::vector<VmemAlloc> vmem_allocs;
  // The stream's kernels, in stream order, not overlapping (optional: empty for hand-written
  // programs). Instructions outside every kernel are allowed (e.g. the next batch's infeed).
  std::vector<KernelRange> kernels;
  // SPMD sharing (optional). SPMD replicas run one stream that differs only in whom their
  // transfers talk to; storing it once per slice instead of once per core is what lets a
  // BERT-large step (millions of instructions per core) run on 32 or more cores. When
  // `stream_of` >= 0, this core runs the instructions and VMEM allocations of
  // Program::cores[stream_of] (which must not share itself) and leaves its own `instrs` and
  // `vmem_allocs` empty; its kSend/kRecv talk to `peers` instead: peers[k] is the peer of the
  // stream's k-th kSend/kRecv (stream order), one entry per transfer, stored as runs
  // (sim/isa/peer_table.h: a collective's transfers alternate between two peers).
  int32_t stream_of = -1;
  PeerTable peers;
  // Tile loops stored once (sim/isa/repeat.h; optional). Empty: `instrs` is the stream itself.
  std::vector<Repeat> repeats;

  // Instructions of the expanded stream (what stream indices count).
  size_t stream_size() const { return repeats.empty() ? instrs.size() : instrs.size() + repeat_tree(repeats).extra; }
};

// Instructions by stream index in a stream that may have repeats (the engines' read path): the
// stored instruction of each index, through the plan's map (sim/analysis/program_plan.h).
struct StreamView {
  const Instr* instrs = nullptr;
  const uint32_t* stored = nullptr;  // per stream index, its index in `instrs`; null: no repeats
  const Instr& operator[](size_t i) const { return instrs[stored ? stored[i] : i]; }
  explicit operator bool() const { return instrs != nullptr; }
};

// Walks a core program's expanded stream in stream order: per stream index, the stored instruction
// and its effective deps (repeat.h). Cheap per step: the decoding passes walk tens of millions.
// The program's repeats must be well formed (the plan checks them before walking).
class StreamWalk {
 public:
  explicit StreamWalk(const CoreProgram& p) : p_(p) {
    if (!p.repeats.empty()) span_ = repeat_tree(p.repeats).span;
    enter();
  }
  bool done() const { return stored_ >= p_.instrs.size(); }
  uint32_t index() const { return index_; }    // stream index
  uint32_t stored() const { return stored_; }  // index into instrs
  const Instr& instr() const { return p_.instrs[stored_]; }
  // The effective k-th dep of the current instruction.
  uint32_t dep(size_t k) const {
    uint64_t d = instr().deps[k];
    for (uint32_t l = 0; l < depth_; ++l) {
      const Level& v = level_[l];
      const Repeat& r = p_.repeats[v.rep];
      if (v.shift && !((r.fixed[stored_ - r.first] >> k) & 1)) d += v.shift;
    }
    return uint32_t(d);
  }
  void next() {
    ++index_;
    ++stored_;
    while (depth_ > 0) {  // bodies that end here: run again, or leave
      Level& v = level_[depth_ - 1];
      const Repeat& r = p_.repeats[v.rep];
      if (stored_ != r.first + r.len) break;
      if (++v.run < r.trips) {
        stored_ = r.first;
        v.shift += span_[v.rep];
        next_ = v.rep + 1;  // the repeats inside start again
        break;
      }
      --depth_;
    }
    enter();
  }

 private:
  struct Level {
    uint32_t rep = 0, run = 0;
    uint64_t shift = 0;  // run x span
  };
  void enter() {
    while (next_ < p_.repeats.size() && p_.repeats[next_].first == stored_ && depth_ < kMaxRepeatDepth) {
      if (p_.repeats[next_].len == 0) break;  // malformed: the plan rejects it
      level_[depth_++] = {uint32_t(next_), 0, 0};
      ++next_;
    }
  }
  const CoreProgram& p_;
  std::vector<uint64_t> span_;
  uint32_t index_ = 0, stored_ = 0;
  size_t next_ = 0;  // the next repeat to enter
  Level level_[kMaxRepeatDepth];
  uint32_t depth_ = 0;
};

// `core`'s expanded stream as a plain one (no repeats): for tools and tests that read instructions
// by stream index.
inline std::vector<Instr> expanded_instrs(const CoreProgram& core) {
  if (core.repeats.empty()) return core.instrs;
  std::vector<Instr> out;
  out.reserve(core.stream_size());
  for (StreamWalk w(core); !w.done(); w.next()) {
    Instr in = w.instr();
    for (size_t k = 0; k < in.deps.size(); ++k) in.deps[k] = w.dep(k);
    out.push_back(std::move(in));
  }
  return out;
}

// Compiler-side accounting carried for reports (not used for timing).
struct ProgramInfo {
  uint64_t flops = 0;          // useful floating-point operations (2 per MAC)
  uint64_t hbm_bytes_min = 0;  // compulsory HBM traffic: every input read once, every output written once
  uint64_t hbm_bytes = 0;      // HBM traffic the schedule actually moves
  uint32_t fusions = 0;        // number of HLO fusions (kernels) in the program
  // CMEM (v4; zero otherwise): traffic the schedule moves between CMEM and VMEM, and the most
  // bytes this core's program keeps resident in its chip's CMEM at once.
  uint64_t cmem_bytes = 0;
  uint64_t cmem_resident_bytes = 0;
};

struct Program {
  std::string name;
  std::vector<CoreProgram> cores;
  ProgramInfo info;

  // The core program whose instructions and VMEM allocations core `c` runs (itself unless shared).
  const CoreProgram& stream(size_t c) const {
    const CoreProgram& cp = cores[c];
    return cp.stream_of >= 0 ? cores[size_t(cp.stream_of)] : cp;
  }
};


// `program` with every shared stream copied out (peers translated) and every repeat expanded:
// each core program has its own plain stream. For tools and tests that read streams per core;
// costs a stream per core.
inline Program unshared(const Program& program) {
  Program out = program;
  for (size_t c = 0; c < out.cores.size(); ++c) {
    CoreProgram& cp = out.cores[c];
    if (cp.stream_of < 0) {
      if (!cp.repeats.empty()) {
        cp.instrs = expanded_instrs(cp);
        cp.repeats.clear();
      }
      continue;
    }
    const CoreProgram& src = program.stream(c);
    cp.instrs = expanded_instrs(src);
    cp.vmem_allocs = src.vmem_allocs;
    cp.kernels = src.kernels;
    size_t k = 0, hint = 0;
    for (Instr& i : cp.instrs) {
      if (i.op != Op::kSend && i.op != Op::kRecv) continue;
      if (k < cp.peers.size()) {
        const PeerRef p = cp.peers.at(k, hint);
        i.peer_chip = p.chip;
        i.peer_core = p.core;
      }
      ++k;
    }
    cp.stream_of = -1;
    cp.peers.clear();
  }
  return out;
}

// ---- JSON ----
// A Label is a plain string, Deps a plain array.
inline void to_json(nlohmann::json& j, const Label& l) { j = l.str(); }
inline void from_json(const nlohmann::json& j, Label& l) { l = Label(j.get<std::string>()); }
inline void to_json(nlohmann::json& j, const Deps& d) {
  j = nlohmann::json::array();
  for (uint32_t x : d) j.push_back(x);
}
inline void from_json(const nlohmann::json& j, Deps& d) {
  const auto v = j.get<std::vector<uint32_t>>();
  d.assign(v.begin(), v.end());
}

NLOHMANN_JSON_SERIALIZE_ENUM(Op, {{Op::kDmaLoad, "dma_load"},
                                  {Op::kDmaStore, "dma_store"},
                                  {Op::kMxuWeights, "mxu_weights"},
                                  {Op::kMxuMatmul, "mxu_matmul"},
                                  {Op::kVpu, "vpu"},
                                  {Op::kBarrier, "barrier"},
                                  {Op::kSend, "send"},
                                  {Op::kRecv, "recv"},
                                  {Op::kHostLoad, "host_load"},
                                  {Op::kHostStore, "host_store"}})

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(VpuWork, alu_vregs, eup_vregs, xlu_vregs, vld_vregs,
                                                vst_vregs)
NLOHMANN_JSON_SERIALIZE_ENUM(Collective, {{Collective::kNone, "none"},
                                          {Collective::kAllReduce, "all-reduce"},
                                          {Collective::kAllGather, "all-gather"},
                                          {Collective::kReduceScatter, "reduce-scatter"},
                                          {Collective::kAllToAll, "all-to-all"},
                                          {Collective::kCollectivePermute, "collective-permute"},
                                          {Collective::kDcnAllReduce, "all-reduce-dcn"}})
NLOHMANN_JSON_SERIALIZE_ENUM(MemSpace, {{MemSpace::kHbm, "hbm"}, {MemSpace::kCmem, "cmem"}})

// Instr: every field, missing keys keep their defaults; `mem` is written only when it is not HBM,
// `async` and `collective` only when set, so programs without CMEM, background work or
// collectives serialize exactly as before those fields existed.
#define TPUSIM_INSTR_FIELDS(X) \
  X(op) X(deps) X(bytes) X(mxu) X(rows) X(k) X(n) X(passes) X(vpu) X(barrier_id) X(peer_chip) X(peer_core) X(tag) X(label)
inline void to_json(nlohmann::json& j, const Instr& i) {
  j = nlohmann::json::object();
#define TPUSIM_TO(f) j[#f] = i.f;
  TPUSIM_INSTR_FIELDS(TPUSIM_TO)
#undef TPUSIM_TO
  if (i.mem != MemSpace::kHbm) j["mem"] = i.mem;
  if (i.async) j["async"] = true;
  if (i.collective != Collective::kNone) j["collective"] = i.collective;
  if (i.packing != 1) j["packing"] = i.packing;
  if (i.dcn) j["dcn"] = true;
  if (i.collective_axis) j["collective_axis"] = i.collective_axis;
}
inline void from_json(const nlohmann::json& j, Instr& i) {
  const Instr d{};
#define TPUSIM_FROM(f) i.f = j.value(#f, d.f);
  TPUSIM_INSTR_FIELDS(TPUSIM_FROM)
  TPUSIM_FROM(mem)
  TPUSIM_FROM(async)
  TPUSIM_FROM(collective)
  TPUSIM_FROM(packing)
  TPUSIM_FROM(dcn)
  TPUSIM_FROM(collective_axis)
#undef TPUSIM_FROM
}
#undef TPUSIM_INSTR_FIELDS
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(VmemAlloc, offset_bytes, size_bytes, first_instr,
                                                last_instr, label)
// KernelRange: `collective` is written only when set (as Instr's).
inline void to_json(nlohmann::json& j, const KernelRange& k) {
  j = {{"name", k.name}, {"first_instr", k.first_instr}, {"last_instr", k.last_instr},
       {"flops", k.flops}, {"hbm_bytes", k.hbm_bytes}, {"vpu", k.vpu}};
  if (k.collective != Collective::kNone) j["collective"] = k.collective;
}
inline void from_json(const nlohmann::json& j, KernelRange& k) {
  const KernelRange d{};
  k.name = j.value("name", d.name);
  k.first_instr = j.value("first_instr", d.first_instr);
  k.last_instr = j.value("last_instr", d.last_instr);
  k.flops = j.value("flops", d.flops);
  k.hbm_bytes = j.value("hbm_bytes", d.hbm_bytes);
  k.vpu = j.value("vpu", d.vpu);
  k.collective = j.value("collective", d.collective);
}
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(PeerRef, chip, core)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Repeat, first, len, trips, fixed)
// CoreProgram: `kernels` and `repeats` are written only when not empty (programs without them
// serialize as before they existed); missing keys keep their defaults.
inline void to_json(nlohmann::json& j, const CoreProgram& c) {
  j = {{"chip", c.chip}, {"core", c.core}, {"instrs", c.instrs}, {"vmem_allocs", c.vmem_allocs},
       {"stream_of", c.stream_of}, {"peers", c.peers.expanded()}};
  if (!c.kernels.empty()) j["kernels"] = c.kernels;
  if (!c.repeats.empty()) j["repeats"] = c.repeats;
}
inline void from_json(const nlohmann::json& j, CoreProgram& c) {
  const CoreProgram d{};
  c.chip = j.value("chip", d.chip);
  c.core = j.value("core", d.core);
  c.instrs = j.value("instrs", d.instrs);
  c.vmem_allocs = j.value("vmem_allocs", d.vmem_allocs);
  c.kernels = j.value("kernels", d.kernels);
  c.stream_of = j.value("stream_of", d.stream_of);
  c.peers = PeerTable(j.value("peers", std::vector<PeerRef>{}));
  c.repeats = j.value("repeats", d.repeats);
}
// ProgramInfo: the CMEM figures are written only when nonzero (programs without CMEM serialize as
// before they existed).
inline void to_json(nlohmann::json& j, const ProgramInfo& p) {
  j = {{"flops", p.flops}, {"hbm_bytes_min", p.hbm_bytes_min}, {"hbm_bytes", p.hbm_bytes}, {"fusions", p.fusions}};
  if (p.cmem_bytes) j["cmem_bytes"] = p.cmem_bytes;
  if (p.cmem_resident_bytes) j["cmem_resident_bytes"] = p.cmem_resident_bytes;
}
inline void from_json(const nlohmann::json& j, ProgramInfo& p) {
  const ProgramInfo d{};
  p.flops = j.value("flops", d.flops);
  p.hbm_bytes_min = j.value("hbm_bytes_min", d.hbm_bytes_min);
  p.hbm_bytes = j.value("hbm_bytes", d.hbm_bytes);
  p.fusions = j.value("fusions", d.fusions);
  p.cmem_bytes = j.value("cmem_bytes", d.cmem_bytes);
  p.cmem_resident_bytes = j.value("cmem_resident_bytes", d.cmem_resident_bytes);
}
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Program, name, cores, info)

}  // namespace tpusim::isa
