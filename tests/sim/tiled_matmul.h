// A synthetic double-buffered tiled matmul Program (what the compiler emits for C = A * B, bf16),
// used by the fidelity tests and the speed measurements.
//
// C[M, N] = A[M, K] * B[K, N]. A is loaded into VMEM once (one DMA per 128-deep column block).
// Output column panels j (128 wide) alternate between the MXUs; for panel j every k block i
// loads the 128x128 weight tile B[i, j] into the MXU and streams the M rows of A[:, i] through it
// (accumulating in the MXU result buffer). The VPU then converts the fp32 panel to bf16 and a DMA
// stores it. B panels and C panels each rotate through `panel_buffers` VMEM buffers, so loads of
// later panels overlap compute (double/quad buffering); MXU weights are double buffered with deps.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/isa/program.h"

namespace tpusim::test {

struct TiledMatmul {
  uint32_t m = 1024, k = 1024, n = 1024;
  uint32_t mxus = 2;
  uint32_t panel_buffers = 4;
  uint32_t weight_buffers = 2;
};

inline isa::CoreProgram tiled_matmul_stream(const TiledMatmul& t, uint32_t chip = 0, uint32_t core = 0) {
  isa::CoreProgram p;
  p.chip = chip;
  p.core = core;
  const uint32_t kb = t.k / 128, nb = t.n / 128;
  const uint64_t a_block = uint64_t(t.m) * 128 * 2, b_panel = uint64_t(t.k) * 128 * 2, c_panel = uint64_t(t.m) * 128 * 2;
  auto add = [&](isa::Instr i, std::vector<uint32_t> deps, std::string label) {
    i.deps = std::move(deps);
    i.label = std::move(label);
    p.instrs.push_back(std::move(i));
    return uint32_t(p.instrs.size() - 1);
  };
  auto dma = [&](isa::Op op, uint64_t bytes, std::vector<uint32_t> deps, std::string label) {
    isa::Instr i;
    i.op = op;
    i.bytes = bytes;
    return add(i, std::move(deps), std::move(label));
  };

  std::vector<uint32_t> a_load(kb);
  for (uint32_t i = 0; i < kb; ++i) a_load[i] = dma(isa::Op::kDmaLoad, a_block, {}, "load_a");
  std::vector<uint32_t> b_load(nb), last_weights(nb), store(nb);
  for (uint32_t j = 0; j < std::min(nb, t.panel_buffers); ++j) b_load[j] = dma(isa::Op::kDmaLoad, b_panel, {}, "load_b");

  // Per MXU: the matmuls in tile order (for weight-buffer reuse deps).
  std::vector<std::vector<uint32_t>> mxu_matmuls(t.mxus);
  for (uint32_t j = 0; j < nb; ++j) {
    const uint32_t mxu = j % t.mxus;
    uint32_t last_mm = 0;
    for (uint32_t i = 0; i < kb; ++i) {
      std::vector<uint32_t> wdeps = {b_load[j]};
      auto& mms = mxu_matmuls[mxu];
      if (mms.size() >= t.weight_buffers) wdeps.push_back(mms[mms.size() - t.weight_buffers]);
      isa::Instr w;
      w.op = isa::Op::kMxuWeights;
      w.mxu = mxu;
      w.k = 128;
      w.n = 128;
      const uint32_t wi = add(w, wdeps, "weights");
      isa::Instr mm;
      mm.op = isa::Op::kMxuMatmul;
      mm.mxu = mxu;
      mm.rows = t.m;
      mm.k = 128;
      mm.n = 128;
      last_mm = add(mm, {wi, a_load[i]}, "matmul");
      mms.push_back(last_mm);
      last_weights[j] = wi;
    }
    // fp32 -> bf16 of the M x 128 panel: M*128/1024 vregs through the ALU and the store slot.
    isa::Instr v;
    v.op = isa::Op::kVpu;
    v.vpu.alu_vregs = uint64_t(t.m) * 128 / 1024;
    v.vpu.vst_vregs = uint64_t(t.m) * 128 / 1024;
    std::vector<uint32_t> vdeps = {last_mm};
    if (j >= t.panel_buffers) vdeps.push_back(store[j - t.panel_buffers]);  // C buffer reuse
    const uint32_t vi = add(v, vdeps, "convert");
    store[j] = dma(isa::Op::kDmaStore, c_panel, {vi}, "store_c");
    if (j + t.panel_buffers < nb)  // B buffer of panel j is free once its weights are in the MXU
      b_load[j + t.panel_buffers] = dma(isa::Op::kDmaLoad, b_panel, {last_weights[j]}, "load_b");
  }
  const uint32_t last = uint32_t(p.instrs.size() - 1);
  uint64_t off = 0;
  auto alloc = [&](uint64_t size, const std::string& label) {
    p.vmem_allocs.push_back({off, size, 0, last, label});
    off += size;
  };
  alloc(a_block * kb, "A");
  for (uint32_t b = 0; b < t.panel_buffers; ++b) alloc(b_panel, "B" + std::to_string(b));
  for (uint32_t b = 0; b < t.panel_buffers; ++b) alloc(c_panel, "C" + std::to_string(b));
  return p;
}

}  // namespace tpusim::test
