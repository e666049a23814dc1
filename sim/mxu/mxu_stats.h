// Stats of one MXU, shared by the SystemC MXU and the analytical engine (same keys in both).
#pragma once
#include <cstdint>

#include "sim/base/stats.h"
#include "sim/hw/mxu_params.h"
#include "sim/isa/program.h"

namespace tpusim {

struct MxuStats {
  uint64_t busy_cycles = 0;         // streaming-path occupancy
  uint64_t weight_load_cycles = 0;  // weight-path occupancy
  uint64_t matmuls = 0;
  uint64_t weight_loads = 0;
  uint64_t rows = 0;                // LHS row slots streamed (rows x passes)
  uint64_t flops = 0;               // useful: 2 * rows * k * n per matmul, passes not counted
  uint64_t run_cycles = 0;          // the core's cycles in this run (set when the run ends)
  double peak_flops_per_cycle = 0;  // 2 * R * C

  void reset(const MxuParams& p) {
    *this = MxuStats{};
    peak_flops_per_cycle = 2.0 * p.rows * p.cols;
  }
  void weights(uint64_t cycles) {
    ++weight_loads;
    weight_load_cycles += cycles;
  }
  void matmul(const isa::Instr& ins, uint64_t stream_cycles) {
    ++matmuls;
    busy_cycles += stream_cycles;
    rows += mxu_row_slots(ins.rows, ins.passes, ins.packing);
    flops += 2ull * ins.rows * ins.k * ins.n;
  }
  void declare(StatGroup& g) const {
    g.counter("busy_cycles", &busy_cycles, "cycles", "streaming path busy (LHS rows x passes entering the array)");
    g.counter("weight_load_cycles", &weight_load_cycles, "cycles", "weight-load path busy");
    g.counter("matmuls", &matmuls, "instructions", "matmul streams executed");
    g.counter("weight_loads", &weight_loads, "instructions", "weight tiles loaded");
    g.counter("rows", &rows, "rows", "LHS row slots streamed (rows x bf16 passes)");
    g.counter("flops", &flops, "flop", "useful floating-point operations, 2*rows*k*n per matmul");
    g.derived("utilization", [this] { return run_cycles ? double(flops) / (peak_flops_per_cycle * double(run_cycles)) : 0.0; },
              "fraction", "flops / (2*R*C * core cycles of the run)");
    g.derived("stream_utilization", [this] { return run_cycles ? double(busy_cycles) / double(run_cycles) : 0.0; },
              "fraction", "busy_cycles / core cycles of the run");
  }
};

}  // namespace tpusim
