// Stats of the VPU, shared by the SystemC VPU and the analytical engine (same keys in both).
#pragma once
#include <cstdint>

#include "sim/base/stats.h"
#include "sim/isa/program.h"

namespace tpusim {

struct VpuStats {
  uint64_t busy_cycles = 0;  // issue occupancy (slot-bound), pipeline latency excluded
  uint64_t blocks = 0;       // kVpu instructions
  uint64_t alu_vregs = 0, eup_vregs = 0, xlu_vregs = 0, vld_vregs = 0, vst_vregs = 0;
  uint64_t run_cycles = 0;  // the core's cycles in this run (set when the run ends)

  void reset() { *this = VpuStats{}; }
  void block(const isa::VpuWork& w, uint64_t issue_cycles) {
    ++blocks;
    busy_cycles += issue_cycles;
    alu_vregs += w.alu_vregs;
    eup_vregs += w.eup_vregs;
    xlu_vregs += w.xlu_vregs;
    vld_vregs += w.vld_vregs;
    vst_vregs += w.vst_vregs;
  }
  void declare(StatGroup& g) const {
    g.counter("busy_cycles", &busy_cycles, "cycles", "issue occupancy of vector blocks (busiest slot)");
    g.counter("blocks", &blocks, "instructions", "vector blocks executed");
    g.counter("alu_vregs", &alu_vregs, "vreg ops", "vector ALU slot operations");
    g.counter("eup_vregs", &eup_vregs, "vreg ops", "transcendental (EUP) operations");
    g.counter("xlu_vregs", &xlu_vregs, "vreg ops", "cross-lane (XLU) operations");
    g.counter("vld_vregs", &vld_vregs, "vreg ops", "VMEM -> vreg loads");
    g.counter("vst_vregs", &vst_vregs, "vreg ops", "vreg -> VMEM stores");
    g.derived("utilization", [this] { return run_cycles ? double(busy_cycles) / double(run_cycles) : 0.0; },
              "fraction", "busy_cycles / core cycles of the run");
  }
};

}  // namespace tpusim
