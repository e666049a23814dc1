// Emits one core's instruction stream kernel by kernel: VMEM allocation per kernel, and the
// kernel-boundary dependencies (XLA runs a program's kernels one after another on a core: the
// first instructions of a kernel wait for the previous kernel's last ones), and the core's kernel
// table (isa::CoreProgram::kernels: each kernel's instruction range; its flops and HBM bytes are
// added by the lowering, add_kernel_costs()).
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/lower/instr_buffer.h"
#include "compiler/lower/kernel_cache.h"
#include "compiler/lower/reroll.h"
#include "sim/base/sim_error.h"
#include "sim/isa/program.h"

namespace tpusim::compiler {

// Whether builders made from now on cache kernels (compiler/lower/kernel_cache.h): on, except
// where tests compile both ways to compare.
inline bool& kernel_cache_default() {
  static bool on = true;
  return on;
}

// Each kernel's tile loops are rerolled when it ends (compiler/lower/reroll.h): the core program
// stores a loop's body once, and stream indices count the expanded stream. A collective's kernels
// and the sections of ReplicaStreams are left unrolled (set_reroll), so that the replicas' streams
// line up instruction by instruction.
//
// `first_index` is the stream index of the first instruction the builder appends: nonzero when
// `core` receives only a later section of the stream and its prefix is spliced in front later
// (data-parallel replicas: compiled once, see data_parallel.cc). Indices (returned, deps, VMEM
// live ranges) are stream indices either way.
class ProgramBuilder {
 public:
  ProgramBuilder(isa::CoreProgram& core, uint64_t vmem_bytes, uint32_t first_index = 0)
      : core_(core), vmem_bytes_(vmem_bytes), base_(first_index) {}

  // `collective`: the kernel is (part of) a collective of that kind; it and its instructions are
  // marked so (isa::Collective, what the engines' collective statistics are kept by), with the mesh
  // axis set_collective_axis() gave (a DCN part's: isa::kDcnAxis).
  void begin_kernel(const std::string& name, isa::Collective collective = isa::Collective::kNone) {
    kernel_ = name;
    collective_ = collective;
    collective_axis_ = collective == isa::Collective::kNone           ? 0
                       : collective == isa::Collective::kDcnAllReduce ? isa::kDcnAxis
                                                                      : axis_;
    labels_.clear();
    kernel_first_ = size();
    vmem_top_ = 0;
    first_alloc_ = core_.vmem_allocs.size();
    isa::KernelRange k;
    k.name = label_of_kernel();
    k.first_instr = kernel_first_;
    k.collective = collective;
    core_.kernels.push_back(k);
    in_kernel_ = true;
  }

  // Ends the kernel: closes its VMEM live ranges and records its sinks (instructions nothing in
  // the kernel depends on) as the entry dependencies of the next kernel.
  void end_kernel() {
    const uint32_t end = size();
    for (size_t a = first_alloc_; a < core_.vmem_allocs.size(); ++a) {
      core_.vmem_allocs[a].first_instr = kernel_first_;
      core_.vmem_allocs[a].last_instr = end > kernel_first_ ? end - 1 : kernel_first_;
    }
    // The kernel is still stored unrolled: stream index i is stored at i - base_ - extra_.
    const uint32_t stored_first = kernel_first_ - base_ - uint32_t(extra_);
    used_.assign(end - kernel_first_, false);
    for (uint32_t i = kernel_first_; i < end; ++i)
      for (uint32_t d : core_.instrs[i - kernel_first_ + stored_first].deps)
        if (d >= kernel_first_) used_[d - kernel_first_] = true;
    entry_deps_.clear();
    for (uint32_t i = kernel_first_; i < end; ++i)
      if (!used_[i - kernel_first_]) entry_deps_.push_back(i);
    if (reroll_ && collective_ == isa::Collective::kNone && end - kernel_first_ >= kMinRerollKernel)
      extra_ += reroll_tail(core_, stored_first);
    in_kernel_ = false;
    collective_ = isa::Collective::kNone;
    collective_axis_ = 0;
    if (!core_.kernels.empty() && core_.kernels.back().first_instr == kernel_first_) {
      if (end > kernel_first_)
        core_.kernels.back().last_instr = end - 1;
      else
        core_.kernels.pop_back();  // no instructions: not in the table
    }
    if (end_kernel_hook_) end_kernel_hook_(*this);
  }

  // Adds to the last ended kernel's accounting in the kernel table (the lowering's per-kernel
  // share of ProgramInfo::flops and hbm_bytes).
  void add_kernel_costs(uint64_t flops, uint64_t hbm_bytes) {
    if (core_.kernels.empty()) return;
    core_.kernels.back().flops += flops;
    core_.kernels.back().hbm_bytes += hbm_bytes;
  }

  // Called at the end of every kernel (ReplicaStreams checks and drops a replica's recording).
  void set_end_kernel_hook(std::function<void(ProgramBuilder&)> hook) { end_kernel_hook_ = std::move(hook); }

  // Mirrors (ReplicaStreams' replicas): a kernel the emitter knows to be the main stream's latest
  // kernel but for the peers of its transfers is taken from those peers alone, without emitting
  // it. The hook returns the kernel's stream length, or 0 when it cannot take it so (then the
  // kernel is emitted as usual); it is given the peers, in stream order.
  using MirrorHook = std::function<uint32_t(ProgramBuilder&, std::vector<isa::PeerRef>&)>;
  void set_mirror_hook(MirrorHook hook) { mirror_hook_ = std::move(hook); }
  bool mirrors() const { return bool(mirror_hook_); }
  // Right after begin_kernel: takes the kernel as mirrored with `peers`, leaves the builder as
  // emitting it, ending it and dropping the recording would have (next kernel waits for `sinks`,
  // the main stream's). False: nothing changed, emit the kernel.
  bool mirror_kernel(std::vector<isa::PeerRef>& peers, const isa::Deps& sinks) {
    if (!mirror_hook_ || !in_kernel_ || size() != kernel_first_ || core_.vmem_allocs.size() != first_alloc_ ||
        core_.instrs.size() != 0 || core_.kernels.size() != 1)
      return false;
    const uint32_t len = mirror_hook_(*this, peers);
    if (len == 0) return false;
    core_.kernels.clear();  // begin_kernel's entry
    base_ = size() + len;
    entry_deps_ = sinks;
    in_kernel_ = false;
    collective_ = isa::Collective::kNone;
    collective_axis_ = 0;
    return true;
  }
  // Between kernels: forgets the instructions, VMEM allocations and kernels recorded so far (their stream
  // indices stay taken: size() is unchanged). The core program then holds only what follows; its
  // buffers are released (a cleared vector would keep its capacity, pages already touched).
  void drop_recorded() {
    base_ = size();
    extra_ = 0;
    std::vector<isa::Repeat>().swap(core_.repeats);
    std::vector<isa::Instr>().swap(core_.instrs);
    std::vector<isa::VmemAlloc>().swap(core_.vmem_allocs);
    std::vector<isa::KernelRange>().swap(core_.kernels);
  }

  // Reserves VMEM for the current kernel. The tiling search sizes buffers to fit; overflowing
  // here means no tiling fits at all.
  uint64_t alloc(uint64_t bytes, const std::string& label) {
    bytes = vmem_rounded(bytes);
    if (vmem_top_ + bytes > vmem_available())
      throw SimError("VMEM overflow compiling kernel '" + kernel_ + "': buffer '" + label + "' needs " +
                     std::to_string(bytes) + " bytes, " + std::to_string(vmem_available() - vmem_top_) + " of " +
                     std::to_string(vmem_available()) + " bytes free" +
                     (vmem_reserved_ ? " (" + std::to_string(vmem_reserved_) + " more are reserved for background work)" : ""));
    uint64_t off = vmem_top_;
    vmem_top_ += bytes;
    core_.vmem_allocs.push_back({off, bytes, 0, 0, kernel_ + "." + label});
    return off;
  }

  // Background work (an asynchronous collective) runs while later kernels compute, so its VMEM
  // must stay out of theirs: it allocates from the top of VMEM (alloc_top) and the kernels that
  // may run meanwhile are compiled with the top `bytes` reserved (0: none).
  void reserve_vmem_top(uint64_t bytes) { vmem_reserved_ = std::min(vmem_rounded(bytes), vmem_bytes_); }
  uint64_t vmem_available() const { return vmem_bytes_ - vmem_reserved_; }
  uint64_t alloc_top(uint64_t bytes, const std::string& label) {
    bytes = vmem_rounded(bytes);
    if (bytes > vmem_bytes_ || vmem_top_ > vmem_bytes_ - bytes)
      throw SimError("VMEM overflow compiling kernel '" + kernel_ + "': buffer '" + label + "' needs " +
                     std::to_string(bytes) + " bytes at the top of the " + std::to_string(vmem_bytes_) +
                     "-byte VMEM");
    const uint64_t off = vmem_bytes_ - bytes;
    core_.vmem_allocs.push_back({off, bytes, 0, 0, kernel_ + "." + label});
    return off;
  }

  // While on, DMAs and VPU blocks are emitted on the core's background queues (isa::Instr::async).
  void set_async(bool on) { async_ = on; }
  // The mesh axis of the collective kernels begun from now on (isa::Instr::collective_axis; 0: none).
  void set_collective_axis(uint8_t axis) { axis_ = axis; }

  uint32_t emit(isa::Instr in) {
    if (in.deps.empty()) in.deps = entry_deps_;
    if (async_ && isa::has_background_queue(in.op)) in.async = true;
    if (in.label.empty()) in.label = label_of_kernel();
    in.collective = collective_;
    in.collective_axis = collective_axis_;
    if (in.op == isa::Op::kVpu && in_kernel_ && !core_.kernels.empty()) {
      isa::VpuWork& w = core_.kernels.back().vpu;
      w.alu_vregs += in.vpu.alu_vregs;
      w.eup_vregs += in.vpu.eup_vregs;
      w.xlu_vregs += in.vpu.xlu_vregs;
      w.vld_vregs += in.vpu.vld_vregs;
      w.vst_vregs += in.vpu.vst_vregs;
    }
    append_instr(core_.instrs, std::move(in));
    return size() - 1;
  }

  // `mem`: the memory side (HBM, or CMEM for a buffer the memory plan placed there).
  uint32_t dma_load(uint64_t bytes, const isa::Deps& deps, std::string_view what,
                    isa::MemSpace mem = isa::MemSpace::kHbm) {
    return dma_labeled(isa::Op::kDmaLoad, bytes, deps, label("load ", what), mem);
  }
  uint32_t dma_store(uint64_t bytes, const isa::Deps& deps, std::string_view what,
                     isa::MemSpace mem = isa::MemSpace::kHbm) {
    return dma_labeled(isa::Op::kDmaStore, bytes, deps, label("store ", what), mem);
  }
  uint32_t vpu(const isa::VpuWork& w, const isa::Deps& deps, std::string_view what) {
    isa::Instr i;
    i.op = isa::Op::kVpu;
    i.vpu = w;
    i.deps = deps;
    i.label = label("", what);
    return emit(std::move(i));
  }
  uint32_t mxu_weights(uint32_t mxu, uint32_t k, uint32_t n, const isa::Deps& deps) {
    isa::Instr i;
    i.op = isa::Op::kMxuWeights;
    i.mxu = mxu;
    i.k = k;
    i.n = n;
    i.deps = deps;
    i.label = label("", "weights");
    return emit(std::move(i));
  }
  uint32_t mxu_matmul(uint32_t mxu, uint32_t rows, uint32_t k, uint32_t n, uint32_t passes, const isa::Deps& deps,
                      uint32_t packing = 1) {
    isa::Instr i;
    i.op = isa::Op::kMxuMatmul;
    i.mxu = mxu;
    i.rows = rows;
    i.k = k;
    i.n = n;
    i.passes = uint8_t(passes);
    i.packing = uint8_t(packing);
    i.deps = deps;
    i.label = label("", "matmul");
    return emit(std::move(i));
  }

  uint32_t dma(isa::Op op, uint64_t bytes, const isa::Deps& deps, std::string_view what) {
    return dma_labeled(op, bytes, deps, label("", what));
  }

  // A core-to-core transfer endpoint (kSend or kRecv) with core (peer_chip, peer_core).
  uint32_t transfer(isa::Op op, uint64_t bytes, uint32_t peer_chip, uint32_t peer_core, uint32_t tag,
                    const isa::Deps& deps, std::string_view what) {
    isa::Instr i;
    i.op = op;
    i.bytes = bytes;
    i.peer_chip = peer_chip;
    i.peer_core = peer_core;
    i.tag = tag;
    i.deps = deps;
    i.label = label("", what);
    return emit(std::move(i));
  }

  // A transfer with the host (kHostLoad or kHostStore); `dcn`: a store on over the data-center
  // network to the next slice (isa::Instr::dcn).
  uint32_t host_transfer(isa::Op op, uint64_t bytes, bool dcn, const isa::Deps& deps, std::string_view what) {
    isa::Instr i;
    i.op = op;
    i.bytes = bytes;
    i.dcn = dcn;
    i.deps = deps;
    i.label = label("", what);
    return emit(std::move(i));
  }

  uint32_t size() const { return base_ + uint32_t(core_.instrs.size() + extra_); }  // the next stream index
  // Off: kernels are stored unrolled (ReplicaStreams' sections); on by default.
  void set_reroll(bool on) { reroll_ = on; }
  bool rerolls() const { return reroll_; }
  bool async() const { return async_; }

  // Kernels lowered once (compiler/lower/kernel_cache.h): the records of this builder's kernels.
  KernelCache& kernel_cache() { return cache_; }
  // Off (kernel_cache_default() when the builder was made): every kernel is lowered.
  bool caches_kernels() const { return cache_on_; }
  // A kernel lowered now can be recorded: between kernels, and no end-of-kernel hook (a section
  // of ReplicaStreams may drop what it recorded).
  bool can_record() const { return !in_kernel_ && !end_kernel_hook_; }
  struct Mark {
    uint32_t first = 0;
    size_t stored = 0, repeats = 0, allocs = 0, kernels = 0;
  };
  Mark mark() const {
    return {size(), core_.instrs.size(), core_.repeats.size(), core_.vmem_allocs.size(), core_.kernels.size()};
  }
  // What was lowered since `m`, one kernel, into `r` (its instructions, repeats, buffers, kernel
  // table entry, sinks and labels; not its costs). False when it was not exactly one kernel.
  bool record_since(const Mark& m, KernelRecord& r) const {
    if (in_kernel_ || kernel_first_ != m.first || core_.instrs.size() < m.stored || core_.repeats.size() < m.repeats ||
        core_.vmem_allocs.size() < m.allocs || core_.kernels.size() < m.kernels || core_.kernels.size() > m.kernels + 1)
      return false;
    r.first = m.first;
    r.stream_len = size() - m.first;
    r.stored_first = uint32_t(m.stored);
    r.instrs.assign(core_.instrs.begin() + long(m.stored), core_.instrs.end());
    r.repeats.assign(core_.repeats.begin() + long(m.repeats), core_.repeats.end());
    for (const isa::Repeat& rep : r.repeats)
      if (rep.first < m.stored) return false;
    r.allocs.assign(core_.vmem_allocs.begin() + long(m.allocs), core_.vmem_allocs.end());
    r.alloc_suffixes.clear();
    for (const isa::VmemAlloc& a : r.allocs) {
      const std::string_view text = a.label.view();
      if (text.size() <= kernel_.size() || text.substr(0, kernel_.size()) != kernel_ || text[kernel_.size()] != '.') return false;
      r.alloc_suffixes.emplace_back(text.substr(kernel_.size() + 1));
    }
    r.in_table = core_.kernels.size() == m.kernels + 1;
    if (r.in_table) {
      r.range = core_.kernels.back();
      if (r.range.first_instr != m.first || r.range.name != kernel_label_) return false;
    }
    r.sinks = entry_deps_;
    r.vmem_top = vmem_top_;
    r.labels.clear();
    for (const CachedLabel& l : labels_) r.labels.push_back({std::string(l.prefix), l.what, -1});
    r.instr_label.resize(r.instrs.size());
    for (size_t k = 0; k < r.instrs.size(); ++k) {
      const isa::Label& l = r.instrs[k].label;
      int32_t at = l == kernel_label_ ? -1 : -2;
      for (size_t j = 0; at == -2 && j < labels_.size(); ++j)
        if (labels_[j].label == l) at = int32_t(j);
      if (at == -2) return false;  // a label made elsewhere: not renamed by a replay
      r.instr_label[k] = at;
    }
    return true;
  }
  // Appends kernel `r`, renamed: the kernel `name`, r.labels[j] renamed `labels[j]`. Its stream
  // indices move by where it begins now; its entry deps must lie as far before that as r's did
  // (the key, compiler/lower/kernel_key.h).
  void replay(const KernelRecord& r, const std::string& name, const std::vector<isa::Label>& labels) {
    const uint32_t first = size();
    const uint32_t shift = first - r.first;
    const uint32_t stored = uint32_t(core_.instrs.size());
    kernel_ = name;
    kernel_label_ = isa::Label(name);
    labels_.clear();
    kernel_first_ = first;
    first_alloc_ = core_.vmem_allocs.size();
    for (size_t k = 0; k < r.instrs.size(); ++k) {
      isa::Instr in = r.instrs[k];
      for (uint32_t& d : in.deps) d += shift;
      in.label = r.instr_label[k] < 0 ? kernel_label_ : labels[size_t(r.instr_label[k])];
      append_instr(core_.instrs, std::move(in));
    }
    for (isa::Repeat rep : r.repeats) {
      rep.first = rep.first - r.stored_first + stored;
      core_.repeats.push_back(std::move(rep));
    }
    for (size_t k = 0; k < r.allocs.size(); ++k) {
      isa::VmemAlloc a = r.allocs[k];
      a.first_instr += shift;
      a.last_instr += shift;
      a.label = isa::Label(name + "." + r.alloc_suffixes[k]);
      core_.vmem_allocs.push_back(std::move(a));
    }
    if (r.in_table) {
      isa::KernelRange k = r.range;
      k.name = kernel_label_;
      k.first_instr += shift;
      k.last_instr += shift;
      core_.kernels.push_back(std::move(k));
    }
    extra_ += r.stream_len - r.instrs.size();
    entry_deps_ = r.sinks;
    for (uint32_t& d : entry_deps_) d += shift;
    vmem_top_ = r.vmem_top;
    in_kernel_ = false;
    collective_ = isa::Collective::kNone;
    collective_axis_ = 0;
  }
  // What the next kernel's first instructions will wait for (the previous kernel's sinks).
  const isa::Deps& entry_deps() const { return entry_deps_; }
  // Overrides it: after background work, the next kernel waits for the kernel before it instead.
  void set_entry_deps(const isa::Deps& deps) { entry_deps_ = deps; }

 private:
  uint32_t dma_labeled(isa::Op op, uint64_t bytes, const isa::Deps& deps, isa::Label label,
                       isa::MemSpace mem = isa::MemSpace::kHbm) {
    isa::Instr i;
    i.op = op;
    i.mem = mem;
    i.bytes = bytes;
    i.deps = deps;
    i.label = label;
    return emit(std::move(i));
  }

  static uint64_t vmem_rounded(uint64_t bytes) { return (bytes + 511) / 512 * 512; }

  isa::Label label_of_kernel() {
    if (kernel_label_ != kernel_) kernel_label_ = isa::Label(kernel_);
    return kernel_label_;
  }
  // The label "<kernel>:<prefix><what>". A kernel uses a handful of distinct labels for many
  // instructions: they are looked up in a per-kernel list before interning.
  isa::Label label(std::string_view prefix, std::string_view what) {
    for (const auto& e : labels_)
      if (e.prefix == prefix && e.what == what) return e.label;
    std::string text = kernel_;
    text.append(":").append(prefix).append(what);
    labels_.push_back({prefix, std::string(what), isa::Label(text)});
    return labels_.back().label;
  }
  struct CachedLabel {
    std::string_view prefix;  // always a string literal
    std::string what;
    isa::Label label;
  };

  isa::CoreProgram& core_;
  uint64_t vmem_bytes_;
  uint32_t base_;  // stream index of core_.instrs[0]
  uint64_t extra_ = 0;  // stream instructions the core program's repeats hold beyond their bodies
  bool reroll_ = true;
  std::string kernel_;
  isa::Label kernel_label_;
  std::vector<CachedLabel> labels_;  // of the current kernel
  uint32_t kernel_first_ = 0;
  uint64_t vmem_top_ = 0;
  uint64_t vmem_reserved_ = 0;  // top of VMEM kept for background work
  bool async_ = false;
  isa::Collective collective_ = isa::Collective::kNone;  // of the current kernel
  uint8_t collective_axis_ = 0;                          // ... and its mesh axis
  uint8_t axis_ = 0;                                     // set_collective_axis
  bool in_kernel_ = false;  // between begin_kernel and end_kernel
  size_t first_alloc_ = 0;
  isa::Deps entry_deps_;
  std::vector<bool> used_;  // end_kernel scratch
  std::function<void(ProgramBuilder&)> end_kernel_hook_;
  MirrorHook mirror_hook_;
  KernelCache cache_;
  bool cache_on_ = kernel_cache_default();
};

}  // namespace tpusim::compiler
