#include "compiler/collectives/replicas.h"

#include <stdexcept>

namespace tpusim::compiler {

namespace {

bool same_except_peer(const isa::Instr& a, const isa::Instr& b) { return isa::same_work(a, b) && a.deps == b.deps; }

bool same_alloc(const isa::VmemAlloc& a, const isa::VmemAlloc& b) {
  return a.offset_bytes == b.offset_bytes && a.size_bytes == b.size_bytes && a.first_instr == b.first_instr &&
         a.last_instr == b.last_instr && a.label == b.label;
}

// Appends the peer of every kSend/kRecv of [first, last), in stream order.
void append_peers(const isa::Instr* first, const isa::Instr* last, isa::PeerTable& peers) {
  for (const isa::Instr* i = first; i != last; ++i)
    if (i->op == isa::Op::kSend || i->op == isa::Op::kRecv) peers.push_back({i->peer_chip, i->peer_core});
}

}  // namespace

ReplicaStreams::ReplicaStreams(isa::Program& prog, const std::vector<CoreId>& cores, uint64_t vmem_bytes)
    : prog_(prog), vmem_bytes_(vmem_bytes) {
  if (cores.empty()) throw std::invalid_argument("ReplicaStreams: no cores");
  prog_.cores.assign(cores.size(), {});
  for (size_t i = 0; i < cores.size(); ++i) {
    prog_.cores[i].chip = cores[i].chip;
    prog_.cores[i].core = cores[i].core;
  }
  recorded_.resize(cores.size());
  dropped_.resize(cores.size());
  keep_.assign(cores.size(), 0);
  main_ = std::make_unique<ProgramBuilder>(prog_.cores[0], vmem_bytes_);
}

ReplicaStreams::~ReplicaStreams() = default;

std::vector<ProgramBuilder*> ReplicaStreams::begin_section() {
  if (in_section_) throw std::logic_error("ReplicaStreams: sections do not nest");
  in_section_ = true;
  Section s;
  s.from = prog_.cores[0].instrs.size();
  s.start = main_->size();
  s.alloc_from = prog_.cores[0].vmem_allocs.size();
  sections_.push_back(s);
  open_.clear();
  main_->set_reroll(false);  // a section is stored unrolled on every core (replicas.h)
  std::vector<ProgramBuilder*> b = {main_.get()};
  for (size_t c = 1; c < prog_.cores.size(); ++c) {
    recorded_[c].emplace_back();
    dropped_[c].emplace_back();
    open_.push_back(std::make_unique<ProgramBuilder>(recorded_[c].back(), vmem_bytes_, uint32_t(s.start)));
    open_.back()->set_reroll(false);
    if (share_) {
      const size_t k = sections_.size() - 1;
      open_.back()->set_end_kernel_hook([this, c, k](ProgramBuilder& pb) { check_and_drop(c, k, pb); });
      if (mirror_)
        open_.back()->set_mirror_hook(
            [this, c, k](ProgramBuilder& pb, std::vector<isa::PeerRef>& peers) { return mirror(c, k, pb, peers); });
    }
    b.push_back(open_.back().get());
  }
  return b;
}

void ReplicaStreams::end_section() {
  if (!in_section_) throw std::logic_error("ReplicaStreams: end_section without begin_section");
  in_section_ = false;
  Section& s = sections_.back();
  s.len = prog_.cores[0].instrs.size() - s.from;
  s.alloc_len = prog_.cores[0].vmem_allocs.size() - s.alloc_from;
  open_.clear();
  main_->set_reroll(true);
}

// A replica whose sections are core 0's but for the peers shares core 0's stream through a peer
// table (program.h: one entry per send and receive): the common case, which keeps one copy of a
// multi-million-instruction stream per slice. Otherwise core c's stream is core 0's with each section's span replaced by core c's
// recording, likewise for the VMEM allocations.
void ReplicaStreams::check_and_drop(size_t c, size_t k, ProgramBuilder& b) {
  if (keep_[c]) return;
  const isa::CoreProgram& src = prog_.cores[0];
  isa::CoreProgram& rec = recorded_[c][k];
  Dropped& d = dropped_[c][k];
  const size_t at = sections_[k].from + d.instrs, alloc_at = sections_[k].alloc_from + d.allocs;
  bool same = src.instrs.size() >= at + rec.instrs.size() && src.vmem_allocs.size() >= alloc_at + rec.vmem_allocs.size();
  for (size_t i = 0; same && i < rec.instrs.size(); ++i) same = same_except_peer(src.instrs[at + i], rec.instrs[i]);
  for (size_t a = 0; same && a < rec.vmem_allocs.size(); ++a) same = same_alloc(src.vmem_allocs[alloc_at + a], rec.vmem_allocs[a]);
  if (!same) {
    keep_[c] = 1;
    return;
  }
  append_peers(rec.instrs.data(), rec.instrs.data() + rec.instrs.size(), d.peers);
  d.instrs += rec.instrs.size();
  d.allocs += rec.vmem_allocs.size();
  b.drop_recorded();
}

// Replica c's kernel, which the emitter found to be core 0's latest kernel but for the peers:
// what check_and_drop() would keep of it had it been emitted (its peers), or 0 when it cannot be
// taken so (c keeps its recording, or core 0's kernel is not the one just emitted before it).
uint32_t ReplicaStreams::mirror(size_t c, size_t k, ProgramBuilder& b, std::vector<isa::PeerRef>& peers) {
  if (keep_[c]) return 0;
  const isa::CoreProgram& src = prog_.cores[0];
  const isa::CoreProgram& rec = recorded_[c][k];
  Dropped& d = dropped_[c][k];
  const size_t at = sections_[k].from + d.instrs, alloc_at = sections_[k].alloc_from + d.allocs;
  if (!rec.instrs.empty() || !rec.vmem_allocs.empty() || src.kernels.empty() || src.kernels.back().first_instr != b.size())
    return 0;
  const isa::KernelRange& kernel = src.kernels.back();
  const size_t len = size_t(kernel.last_instr) - kernel.first_instr + 1;
  if (src.instrs.size() != at + len || src.vmem_allocs.size() < alloc_at) return 0;  // not core 0's latest
  if (mirrored_at_ != kernel.first_instr) {
    mirrored_at_ = kernel.first_instr;
    mirrored_transfers_ = 0;
    for (size_t i = at; i < at + len; ++i)
      mirrored_transfers_ += src.instrs[i].op == isa::Op::kSend || src.instrs[i].op == isa::Op::kRecv;
  }
  if (peers.size() != mirrored_transfers_) return 0;
  for (const isa::PeerRef& p : peers) d.peers.push_back(p);
  d.instrs += len;
  d.allocs += src.vmem_allocs.size() - alloc_at;
  return uint32_t(len);
}

// Puts the dropped front of each of replica c's section recordings back: core 0's instructions and
// allocations there (checked equal but for the peers) with c's peers.
void ReplicaStreams::restore_dropped(size_t c) {
  const isa::CoreProgram& src = prog_.cores[0];
  for (size_t k = 0; k < sections_.size(); ++k) {
    Dropped& d = dropped_[c][k];
    if (d.instrs == 0 && d.allocs == 0) continue;
    isa::CoreProgram& rec = recorded_[c][k];
    const Section& s = sections_[k];
    std::vector<isa::Instr> front(src.instrs.begin() + long(s.from), src.instrs.begin() + long(s.from + d.instrs));
    size_t p = 0, hint = 0;
    for (isa::Instr& i : front) {
      if (i.op != isa::Op::kSend && i.op != isa::Op::kRecv) continue;
      const isa::PeerRef peer = d.peers.at(p++, hint);
      i.peer_chip = peer.chip;
      i.peer_core = peer.core;
    }
    rec.instrs.insert(rec.instrs.begin(), front.begin(), front.end());
    rec.vmem_allocs.insert(rec.vmem_allocs.begin(), src.vmem_allocs.begin() + long(s.alloc_from),
                           src.vmem_allocs.begin() + long(s.alloc_from + d.allocs));
    d = Dropped{};
  }
}

bool ReplicaStreams::can_share(size_t c, isa::PeerTable& peers) const {
  const isa::CoreProgram& src = prog_.cores[0];
  peers.clear();
  for (size_t k = 0; k < sections_.size(); ++k) {
    const Section& s = sections_[k];
    const isa::CoreProgram& sec = recorded_[c][k];
    if (sec.instrs.size() != s.len || sec.vmem_allocs.size() != s.alloc_len)
      throw std::logic_error("ReplicaStreams: replica streams diverged in a collective section");
    const isa::Instr* own = src.instrs.data() + s.from;
    for (size_t i = 0; i < s.len; ++i)
      if (!same_except_peer(own[i], sec.instrs[i])) return false;
    for (size_t a = 0; a < s.alloc_len; ++a)
      if (!same_alloc(src.vmem_allocs[s.alloc_from + a], sec.vmem_allocs[a])) return false;
    append_peers(sec.instrs.data(), sec.instrs.data() + s.len, peers);
  }
  return true;
}

void ReplicaStreams::finish() {
  if (in_section_) throw std::logic_error("ReplicaStreams: finish inside a section");
  const isa::CoreProgram& src = prog_.cores[0];
  isa::PeerTable peers;
  for (size_t c = 1; c < prog_.cores.size(); ++c) {
    auto& dst = prog_.cores[c];
    bool all_dropped = !keep_[c];
    for (size_t k = 0; all_dropped && k < sections_.size(); ++k)
      all_dropped = recorded_[c][k].instrs.empty() && recorded_[c][k].vmem_allocs.empty() &&
                    dropped_[c][k].instrs == sections_[k].len && dropped_[c][k].allocs == sections_[k].alloc_len;
    if (share_ && all_dropped) {  // every kernel of every section checked: share
      dst.stream_of = 0;
      dst.peers.clear();
      for (const Dropped& d : dropped_[c]) dst.peers.append(d.peers);
      recorded_[c].clear();
      dropped_[c].clear();
      continue;
    }
    restore_dropped(c);
    if (share_ && can_share(c, peers)) {
      dst.stream_of = 0;
      dst.peers = peers;
      recorded_[c].clear();
      continue;
    }
    auto& instrs = dst.instrs;
    auto& allocs = dst.vmem_allocs;
    reserve_instrs(instrs, src.instrs.size());
    allocs.reserve(src.vmem_allocs.size());
    size_t at = 0, alloc_at = 0;
    for (size_t k = 0; k < sections_.size(); ++k) {
      const Section& s = sections_[k];
      const isa::CoreProgram& sec = recorded_[c][k];
      if (sec.instrs.size() != s.len || sec.vmem_allocs.size() != s.alloc_len)
        throw std::logic_error("ReplicaStreams: replica streams diverged in a collective section");
      instrs.insert(instrs.end(), src.instrs.begin() + long(at), src.instrs.begin() + long(s.from));
      instrs.insert(instrs.end(), sec.instrs.begin(), sec.instrs.end());
      at = s.from + s.len;
      allocs.insert(allocs.end(), src.vmem_allocs.begin() + long(alloc_at), src.vmem_allocs.begin() + long(s.alloc_from));
      allocs.insert(allocs.end(), sec.vmem_allocs.begin(), sec.vmem_allocs.end());
      alloc_at = s.alloc_from + s.alloc_len;
    }
    instrs.insert(instrs.end(), src.instrs.begin() + long(at), src.instrs.end());
    allocs.insert(allocs.end(), src.vmem_allocs.begin() + long(alloc_at), src.vmem_allocs.end());
    dst.kernels = src.kernels;  // the sections line up with core 0's kernel by kernel
    dst.repeats = src.repeats;  // sections are stored unrolled and as long as core 0's: the same layout
    recorded_[c].clear();
  }
}

CollectiveResult emit_collective_after_kernel(ReplicaStreams& streams, const std::vector<CoreId>& cores,
                                              const HwConfig& hw, CollectiveKind kind, uint64_t bytes,
                                              const CollectiveOptions& opt, uint32_t previous) {
  const isa::Deps entry = streams.main().entry_deps();
  std::vector<uint32_t> wait(entry.begin(), entry.end());
  if (opt.background && previous != kNoInstr) wait.push_back(previous);
  const std::vector<std::vector<uint32_t>> after(cores.size(), wait);
  std::vector<ProgramBuilder*> b = streams.begin_section();
  const CollectiveResult r = emit_collective(kind, b, cores, hw, bytes, after, opt);
  streams.end_section();
  if (opt.background) streams.main().set_entry_deps(entry);
  return r;
}

}  // namespace tpusim::compiler
