// Emits one core's instruction stream kernel by kernel: VMEM allocation per kernel, and the
// kernel-boundary dependencies (XLA runs a program's kernels one after another on a core: the
// first instructions of a kernel wait for the previous kernel's last ones).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sim/base/sim_error.h"
#include "sim/isa/program.h"

namespace tpusim::compiler {

class ProgramBuilder {
 public:
  ProgramBuilder(isa::CoreProgram& core, uint64_t vmem_bytes) : core_(core), vmem_bytes_(vmem_bytes) {}

  void begin_kernel(const std::string& name) {
    kernel_ = name;
    kernel_first_ = uint32_t(core_.instrs.size());
    vmem_top_ = 0;
    first_alloc_ = core_.vmem_allocs.size();
  }

  // Ends the kernel: closes its VMEM live ranges and records its sinks (instructions nothing in
  // the kernel depends on) as the entry dependencies of the next kernel.
  void end_kernel() {
    const uint32_t end = uint32_t(core_.instrs.size());
    for (size_t a = first_alloc_; a < core_.vmem_allocs.size(); ++a) {
      core_.vmem_allocs[a].first_instr = kernel_first_;
      core_.vmem_allocs[a].last_instr = end > kernel_first_ ? end - 1 : kernel_first_;
    }
    std::vector<bool> used(end - kernel_first_, false);
    for (uint32_t i = kernel_first_; i < end; ++i)
      for (uint32_t d : core_.instrs[i].deps)
        if (d >= kernel_first_) used[d - kernel_first_] = true;
    entry_deps_.clear();
    for (uint32_t i = kernel_first_; i < end; ++i)
      if (!used[i - kernel_first_]) entry_deps_.push_back(i);
  }

  // Reserves VMEM for the current kernel. The tiling search sizes buffers to fit; overflowing
  // here means no tiling fits at all.
  uint64_t alloc(uint64_t bytes, const std::string& label) {
    bytes = (bytes + 511) / 512 * 512;
    if (vmem_top_ + bytes > vmem_bytes_)
      throw SimError("VMEM overflow compiling kernel '" + kernel_ + "': buffer '" + label + "' needs " +
                     std::to_string(bytes) + " bytes, " + std::to_string(vmem_bytes_ - vmem_top_) + " of " +
                     std::to_string(vmem_bytes_) + " bytes free");
    uint64_t off = vmem_top_;
    vmem_top_ += bytes;
    core_.vmem_allocs.push_back({off, bytes, 0, 0, kernel_ + "." + label});
    return off;
  }

  uint32_t emit(isa::Instr in) {
    if (in.deps.empty()) in.deps = entry_deps_;
    if (in.label.empty()) in.label = kernel_;
    core_.instrs.push_back(std::move(in));
    return uint32_t(core_.instrs.size() - 1);
  }

  uint32_t dma_load(uint64_t bytes, std::vector<uint32_t> deps, const std::string& what) {
    return dma(isa::Op::kDmaLoad, bytes, std::move(deps), "load " + what);
  }
  uint32_t dma_store(uint64_t bytes, std::vector<uint32_t> deps, const std::string& what) {
    return dma(isa::Op::kDmaStore, bytes, std::move(deps), "store " + what);
  }
  uint32_t vpu(const isa::VpuWork& w, std::vector<uint32_t> deps, const std::string& what) {
    isa::Instr i;
    i.op = isa::Op::kVpu;
    i.vpu = w;
    i.deps = std::move(deps);
    i.label = kernel_ + ":" + what;
    return emit(std::move(i));
  }
  uint32_t mxu_weights(uint32_t mxu, uint32_t k, uint32_t n, std::vector<uint32_t> deps) {
    isa::Instr i;
    i.op = isa::Op::kMxuWeights;
    i.mxu = mxu;
    i.k = k;
    i.n = n;
    i.deps = std::move(deps);
    i.label = kernel_ + ":weights";
    return emit(std::move(i));
  }
  uint32_t mxu_matmul(uint32_t mxu, uint32_t rows, uint32_t k, uint32_t n, uint32_t passes,
                      std::vector<uint32_t> deps) {
    isa::Instr i;
    i.op = isa::Op::kMxuMatmul;
    i.mxu = mxu;
    i.rows = rows;
    i.k = k;
    i.n = n;
    i.passes = passes;
    i.deps = std::move(deps);
    i.label = kernel_ + ":matmul";
    return emit(std::move(i));
  }

  uint32_t dma(isa::Op op, uint64_t bytes, std::vector<uint32_t> deps, const std::string& what) {
    isa::Instr i;
    i.op = op;
    i.bytes = bytes;
    i.deps = std::move(deps);
    i.label = kernel_ + ":" + what;
    return emit(std::move(i));
  }

  // A core-to-core transfer endpoint (kSend or kRecv) with core (peer_chip, peer_core).
  uint32_t transfer(isa::Op op, uint64_t bytes, uint32_t peer_chip, uint32_t peer_core, uint32_t tag,
                    std::vector<uint32_t> deps, const std::string& what) {
    isa::Instr i;
    i.op = op;
    i.bytes = bytes;
    i.peer_chip = peer_chip;
    i.peer_core = peer_core;
    i.tag = tag;
    i.deps = std::move(deps);
    i.label = kernel_ + ":" + what;
    return emit(std::move(i));
  }

  uint32_t size() const { return uint32_t(core_.instrs.size()); }
  // What the next kernel's first instructions will wait for (the previous kernel's sinks).
  const std::vector<uint32_t>& entry_deps() const { return entry_deps_; }

 private:
  isa::CoreProgram& core_;
  uint64_t vmem_bytes_;
  std::string kernel_;
  uint32_t kernel_first_ = 0;
  uint64_t vmem_top_ = 0;
  size_t first_alloc_ = 0;
  std::vector<uint32_t> entry_deps_;
};

}  // namespace tpusim::compiler
