// The decoded form of a Program that both engines execute: every instruction assigned to a unit
// queue, dependency lists (explicit + implicit) in both directions, barrier groups, send/recv
// pairs, and the structural checks of program.h (deps point backwards, MXU weight-buffer
// residency, cores exist, every send has exactly one recv and vice versa).
//
// Decoding is shared so that the SystemC and analytical engines cannot disagree on semantics; only
// timing differs (contention). Buffers are reused across builds: the training driver runs
// thousands of programs on one engine. Cores whose streams have the same structure (SPMD replicas:
// only their transfer peers differ) share one DecodedStream: a later core is compared with the
// first and the latest decoded one, which reads its instructions once, as decoding would, but
// builds no queues or reverse edges and repeats no weight-buffer check.
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/hw/hw_config.h"
#include "sim/isa/program.h"

namespace tpusim {

// Unit queues of a TensorCore. Layout: 0 = DMA (all engines share one issue queue), 1 = VPU,
// 2 = transfer queue (kSend), 3 = sync (barriers, in order, served by the slice), 4 = receives (no
// unit and not in order: each kRecv completes when its data arrived and its deps completed), 5 =
// background DMA and 6 = background VPU (`async` instructions: their own in-order queues on the
// same engines, see program.h), 7 = host queue (kHostLoad, kHostStore: in order, on the transfer
// channels beside the transfer queue's), then per MXU m: 8 + 2m = weight-load path, 9 + 2m =
// streaming path.
struct UnitIndex {
  static constexpr uint32_t kDma = 0;
  static constexpr uint32_t kVpu = 1;
  static constexpr uint32_t kXfer = 2;
  static constexpr uint32_t kSync = 3;
  static constexpr uint32_t kRecv = 4;
  static constexpr uint32_t kDmaAsync = 5;
  static constexpr uint32_t kVpuAsync = 6;
  static constexpr uint32_t kHost = 7;
  static constexpr uint32_t kXferAsync = 8;  // a background collective's sends (their own queue)
  static constexpr uint32_t mxu_weights(uint32_t m) { return 9 + 2 * m; }
  static constexpr uint32_t mxu_stream(uint32_t m) { return 10 + 2 * m; }
  static constexpr uint32_t count(uint32_t mxus) { return 9 + 2 * mxus; }
  static constexpr bool is_mxu_weights(uint32_t u) { return u >= 9 && (u - 9) % 2 == 0; }
  static constexpr bool is_transfer(uint32_t u) { return u == kXfer || u == kXferAsync || u == kHost; }
  static constexpr bool is_dma(uint32_t u) { return u == kDma || u == kDmaAsync; }
  static constexpr bool is_vpu(uint32_t u) { return u == kVpu || u == kVpuAsync; }
  static constexpr bool is_async(uint32_t u) { return u == kDmaAsync || u == kVpuAsync || u == kXferAsync; }
  // Queues without a unit behind them (no issue port).
  static constexpr bool is_virtual(uint32_t u) { return u == kSync || u == kRecv; }
};

inline constexpr uint32_t kNoIndex = UINT32_MAX;
// DecodedStream::position: the mark of a barrier's position (a stream has < 2^31 instructions).
inline constexpr uint32_t kBarrierPos = 1u << 31;

// Compressed sparse rows: row r is items[begin[r] .. begin[r+1]).
struct Csr {
  std::vector<uint32_t> begin;
  std::vector<uint32_t> items;
  uint32_t size(uint32_t r) const { return begin[r + 1] - begin[r]; }
  const uint32_t* row(uint32_t r) const { return items.data() + begin[r]; }
};

// A read-only view of a Csr.
struct CsrView {
  std::span<const uint32_t> begin;
  std::span<const uint32_t> items;
  CsrView() = default;
  CsrView(const Csr& c) : begin(c.begin), items(c.items) {}
  uint32_t size(uint32_t r) const { return begin[r + 1] - begin[r]; }
  const uint32_t* row(uint32_t r) const { return items.data() + begin[r]; }
};

// What decoding a core stream yields that depends only on its structure (ops, MXUs, deps). SPMD
// programs run the same stream on every core (only the peers of their transfers differ), so
// identical streams share one.
// Per instruction, the position of the few that have one (a kSend/kRecv's in sends_recvs, a
// barrier's in barriers with kBarrierPos set), in a rank bitmap: a bit per instruction and a count
// per 64, under half a byte per instruction where a 4-byte table per instruction was a tenth of a
// long stream's plan. The engines look these up per visit (a binary search over a pod's tens of
// thousands of transfers was a tenth of a full-pod simulation).
struct PositionIndex {
  std::vector<uint64_t> bits;   // bit i % 64 of word i / 64: instruction i has a position
  std::vector<uint32_t> rank;   // per word: positions before it
  std::vector<uint32_t> value;  // the positions, stream order
};
struct PositionView {
  std::span<const uint64_t> bits;
  std::span<const uint32_t> rank;
  std::span<const uint32_t> value;
  PositionView() = default;
  PositionView(const PositionIndex& p) : bits(p.bits), rank(p.rank), value(p.value) {}
  uint32_t operator[](uint32_t i) const {
    const uint64_t w = bits[i >> 6], bit = uint64_t(1) << (i & 63);
    return w & bit ? value[rank[i >> 6] + uint32_t(__builtin_popcountll(w & (bit - 1)))] : kNoIndex;
  }
};

struct DecodedStream {
  std::vector<uint8_t> unit;          // per instruction: its unit queue (UnitIndex; at most 256)
  Csr deps;                           // per instruction: effective deps (explicit + implicit weight dep)
  Csr succs;                          // reverse of `deps` (PlanOptions::successors; else empty)
  Csr queues;                         // per unit: its instructions in stream order
  std::vector<uint8_t> op;            // per instruction: isa::Op
  std::vector<uint8_t> role;          // per instruction: collective_role() (collective_stats.h)
  std::vector<uint8_t> axis;          // per instruction: collective_axis() (collective_stats.h)
  std::vector<uint8_t> implicit;      // per instruction: its last dep is the implicit weight dep
  // The few instructions later passes look at, so that they need not read the stream again
  // (decoding is bound by reading the instructions from memory).
  std::vector<uint32_t> barriers;     // kBarrier, stream order
  std::vector<uint32_t> sends_recvs;  // kSend and kRecv, stream order
  // Per instruction: a kSend/kRecv's position in sends_recvs, a barrier's in barriers with
  // kBarrierPos set, else kNoIndex.
  PositionIndex position;
  bool has_transfers = false;         // any kSend, kRecv, kHostLoad or kHostStore
  // Streams with repeats (sim/isa/repeat.h): per stream index, the stored instruction
  // (CoreProgram::instrs index), and the repeats it was decoded with. Both empty without repeats.
  std::vector<uint32_t> stored;
  std::vector<isa::Repeat> repeats;
};

class ProgramPlan;

struct CorePlan {
  const ProgramPlan* plan = nullptr;    // the plan this core belongs to
  uint32_t slot = 0;                    // index in ProgramPlan::cores()
  const isa::CoreProgram* prog = nullptr;  // the stream the core runs (another core's when shared)
  uint32_t chip = 0;
  uint32_t core = 0;
  std::string name;                     // "slice.chip0.core1"
  // Views of the core's DecodedStream (possibly shared with other cores).
  std::span<const uint8_t> unit;        // per instruction: its unit queue (UnitIndex)
  CsrView deps;                         // per instruction: effective deps (explicit + implicit weight dep)
  CsrView succs;                        // reverse of `deps`: who waits for instruction i (only
                                        // with PlanOptions::successors: the SystemC sequencer's)
  CsrView queues;                       // per unit: its instructions in stream order
  std::span<const uint8_t> op;          // per instruction: isa::Op
  std::span<const uint8_t> role;        // per instruction: collective_role() (collective_stats.h)
  std::span<const uint8_t> axis;        // per instruction: collective_axis() (collective_stats.h)
  std::span<const uint32_t> barriers;   // kBarrier instructions, stream order
  std::span<const uint32_t> sends_recvs;  // kSend and kRecv instructions, stream order
  PositionView position;                  // DecodedStream::position
  std::span<const uint32_t> stored;       // DecodedStream::stored
  bool has_transfers = false;           // any kSend, kRecv, kHostLoad or kHostStore
  // Per kSend/kRecv (position in `sends_recvs`): the peer (a sharing core's peer table in the
  // Program, not copied; else `own_peers`, from the instructions; runs: sim/isa/peer_table.h), and the
  // matching instruction's position in the peer's sends_recvs (SPMD replicas of one stream match at
  // the same positions: the cores of a stream share one table, `own_match_pos` only where a core's
  // differs; a 70B-class step over 256 chips has ~10^6 transfers per core). The peer's slot is
  // peer_slot(). Per barrier (position in `barriers`): its group. Sized by those few instructions,
  // not by the stream. The views into the Program are valid while it is.
  const isa::PeerTable* peers = nullptr;
  isa::PeerTable own_peers;
  // Per kSend/kRecv: its tag and bytes, kept once per stream (the passes over every core's
  // transfers read these, not the 120-byte instructions: a cache line each).
  std::span<const uint32_t> transfer_tag;
  std::span<const uint64_t> transfer_bytes;
  std::span<const uint32_t> match_pos_at;
  std::vector<uint32_t> own_match_pos;
  std::vector<uint32_t> barrier_group_at;

  // The instruction at stream index i (of a repeat's body: the stored one; its deps are run 0's,
  // the effective ones are `deps`).
  const isa::Instr& instr(uint32_t i) const { return prog->instrs[stored.empty() ? i : stored[i]]; }
  isa::StreamView view() const { return {prog->instrs.data(), stored.empty() ? nullptr : stored.data()}; }
  uint32_t size() const { return uint32_t(unit.size()); }  // instructions of the (expanded) stream

  // Per instruction i (kNoIndex when i is not a kSend/kRecv, resp. not a barrier).
  uint32_t transfer_pos(uint32_t i) const {
    const uint32_t p = position[i];
    return p & kBarrierPos ? kNoIndex : p;
  }
  uint32_t barrier_pos(uint32_t i) const {
    const uint32_t p = position[i];
    return p == kNoIndex || !(p & kBarrierPos) ? kNoIndex : p & ~kBarrierPos;
  }
  isa::PeerRef peer(uint32_t i) const { return peer_at(transfer_pos(i)); }  // i must be a kSend/kRecv
  // The peer of transfer position `pos`; with `hint`, a run index kept between reads in order
  // (isa::PeerTable::at).
  isa::PeerRef peer_at(uint32_t pos) const { return (*peers)[pos]; }
  isa::PeerRef peer_at(uint32_t pos, size_t& hint) const { return peers->at(pos, hint); }
  // Every position's peer in order, one next() each (loops over all of a core's transfers).
  isa::PeerTable::Reader peer_reader() const { return peers->reader(); }
  uint32_t match_instr(uint32_t i) const;
  // The slot (ProgramPlan::cores() index) of the peer of transfer position `pos` (kNoIndex: the
  // peer core has no stream in the program), and of kSend/kRecv i.
  uint32_t peer_slot(uint32_t pos) const;
  uint32_t peer_slot(uint32_t pos, size_t& hint) const;
  uint32_t match_slot(uint32_t i) const {
    const uint32_t pos = transfer_pos(i);
    return pos == kNoIndex ? kNoIndex : peer_slot(pos);
  }
  uint32_t barrier_group(uint32_t i) const { return at(barrier_group_at, barrier_pos(i)); }

 private:
  static uint32_t at(const std::vector<uint32_t>& v, uint32_t pos) { return pos == kNoIndex ? kNoIndex : v[pos]; }
};

// "slice.chip0.core1 instruction #3 'label' (send)": how errors name an instruction.
std::string describe_instr(const CorePlan& cp, uint32_t instr);
const char* op_name(isa::Op op);

// What a plan builds beyond what both engines read.
struct PlanOptions {
  // CorePlan::succs, the reverse dependency lists: the SystemC sequencer wakes an instruction's
  // dependents through them; the analytical engine rescans instead (10 bytes an instruction).
  bool successors = false;
};

class ProgramPlan {
 public:
  // Decodes and checks `program` for `hw`. Throws SimError ("invalid program: ...") when the
  // program breaks the contract of program.h or does not fit the hardware's structure.
  void build(const isa::Program& program, const HwConfig& hw, PlanOptions options = {});

  const std::vector<CorePlan>& cores() const { return cores_; }
  // Barrier group g completes when `barrier_participants()[g]` cores reached it.
  const std::vector<uint32_t>& barrier_participants() const { return barrier_participants_; }
  size_t instructions() const { return instructions_; }
  // The slot of core (chip, core), kNoIndex when the program has no stream for it (or it is not in
  // the slice).
  uint32_t slot_of(isa::PeerRef p) const {
    const size_t g = size_t(p.chip) * per_chip_ + p.core;
    return p.core < per_chip_ && g < slot_of_.size() ? slot_of_[g] : kNoIndex;
  }
  // Deadlock report for core `slot`, given which of its instructions completed: names the first
  // instruction that never completed and the unsatisfied wait (a recv whose send never ran, a
  // barrier not reached by every participant) that holds it. Empty when all completed.
  std::string deadlock_report(uint32_t slot, const std::vector<uint8_t>& done) const;

 private:
  void decode(CorePlan& cp, const isa::CoreProgram& prog, const HwConfig& hw);
  void translate_peers(CorePlan& cp, const isa::CoreProgram& own, const isa::Program& program);
  void transfer_sizes(CorePlan& cp);
  void decode_into(DecodedStream& d, const CorePlan& cp, const isa::CoreProgram& prog, const HwConfig& hw);
  static uint32_t check_repeats(const std::string& core, const isa::CoreProgram& prog);
  static bool same_structure(const DecodedStream& d, const isa::CoreProgram& prog, const ChipParams& chip);
  void check_weight_buffers(const CorePlan& cp, const HwConfig& hw);
  void match_transfers(const isa::Program& program, const HwConfig& hw);
  bool happens_before(const CorePlan& cp, uint32_t user, uint32_t load, uint32_t mxu);

  std::vector<CorePlan> cores_;
  std::vector<uint32_t> slot_of_;  // global core index (chip x cores per chip + core) -> slot
  uint32_t per_chip_ = 1;
  // This build's per-stream matching positions (CorePlan::match_pos_at), the first core's of each stream.
  std::unordered_map<const isa::CoreProgram*, std::vector<uint32_t>> match_of_;
  std::vector<uint32_t> barrier_participants_;
  size_t instructions_ = 0;
  // Decoded streams, reused across builds: the first `decoded_used_` belong to this build.
  std::vector<std::unique_ptr<DecodedStream>> decoded_;
  size_t decoded_used_ = 0;
  // This build's shared streams: the stream's core program -> its DecodedStream.
  std::unordered_map<const isa::CoreProgram*, const DecodedStream*> decoded_of_;
  // This build's per-stream transfer tags and bytes (CorePlan::transfer_tag, transfer_bytes).
  struct TransferSizes {
    std::vector<uint32_t> tag;
    std::vector<uint64_t> bytes;
    // No two sends (receives) of the stream carry one tag: a core running it cannot have two sends
    // (receives) of one (sender, receiver, tag) triple, whatever its peers (match_transfers).
    bool distinct_tags = false;
  };
  std::unordered_map<const isa::CoreProgram*, TransferSizes> sizes_of_;
  PlanOptions options_;
  // Scratch reused across builds: sized by an MXU's weight loads (last_user_) and by the stream
  // distance a weight-buffer check searches (stamp_), not by the stream.
  std::vector<uint32_t> last_user_, stamp_, stack_, tmp_;
  uint32_t epoch_ = 0;
};

inline uint32_t CorePlan::peer_slot(uint32_t pos) const { return plan->slot_of(peer_at(pos)); }
inline uint32_t CorePlan::peer_slot(uint32_t pos, size_t& hint) const { return plan->slot_of(peer_at(pos, hint)); }

inline uint32_t CorePlan::match_instr(uint32_t i) const {
  const uint32_t pos = transfer_pos(i);
  if (pos == kNoIndex || match_pos_at[pos] == kNoIndex) return kNoIndex;
  return plan->cores()[peer_slot(pos)].sends_recvs[match_pos_at[pos]];
}

}  // namespace tpusim
