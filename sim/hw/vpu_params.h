// Parameters of the vector unit (VPU) and its VLIW slots.
#pragma once
#include <cstdint>

namespace tpusim {

struct VpuParams {
  uint32_t sublanes = 0;                // rows of a vector register (8)
  uint32_t lanes = 0;                   // columns of a vector register (128)
  uint32_t alu_slots = 0;               // vector ALU ops issued per cycle (2 ALUs per slot)
  uint32_t vld_slots = 0;               // VMEM->vreg loads issued per cycle
  uint32_t vst_slots = 0;               // vreg->VMEM stores issued per cycle
  uint32_t eup_cycles_per_vreg = 0;     // transcendental unit: cycles per vreg (throughput)
  uint32_t xlu_cycles_per_vreg = 0;     // cross-lane unit (reduce/transpose/permute): cycles per vreg
  uint32_t pipeline_latency_cycles = 0; // from issue of a vector block to its last result
};

}  // namespace tpusim
