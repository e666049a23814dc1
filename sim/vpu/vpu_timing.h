// VPU timing formula, shared by the SystemC VPU and the analytical engine.
//
// The TensorCore is a VLIW machine: each cycle it can issue `alu_slots` vector ALU ops, `vld_slots`
// loads and `vst_slots` stores, while the transcendental (EUP) and cross-lane (XLU) units accept a
// vreg every `*_cycles_per_vreg`. A block of vector work software-pipelines across these slots, so
// its occupancy is the busiest slot's count (slot-bound). Its result is ready
// `pipeline_latency_cycles` after the last issue. (Norrie et al., IEEE Micro 2021, §TensorCore.)
#pragma once
#include <algorithm>
#include <cstdint>

#include "sim/hw/vpu_params.h"
#include "sim/isa/program.h"

namespace tpusim {

inline uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

inline uint64_t vpu_issue_cycles(const VpuParams& p, const isa::VpuWork& w) {
  uint64_t c = ceil_div(w.alu_vregs, p.alu_slots);
  c = std::max(c, w.eup_vregs * p.eup_cycles_per_vreg);
  c = std::max(c, w.xlu_vregs * p.xlu_cycles_per_vreg);
  c = std::max(c, ceil_div(w.vld_vregs, p.vld_slots));
  c = std::max(c, ceil_div(w.vst_vregs, p.vst_slots));
  return c;
}

}  // namespace tpusim
