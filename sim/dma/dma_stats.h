// Stats of a core's DMA engines, shared by the SystemC DMA and the analytical engine.
#pragma once
#include <cstdint>

#include "sim/base/stats.h"
#include "sim/isa/program.h"

namespace tpusim {

struct DmaStats {
  uint64_t transfers = 0, loads = 0, stores = 0;
  uint64_t bytes = 0, load_bytes = 0, store_bytes = 0;
  uint64_t busy_cycles = 0;  // summed over engines: start to completion of each transfer
  uint64_t engines = 0;
  uint64_t run_cycles = 0;  // the core's cycles in this run (set when the run ends)

  void reset(uint32_t engine_count) {
    *this = DmaStats{};
    engines = engine_count;
  }
  void transfer(const isa::Instr& ins, uint64_t cycles) {
    ++transfers;
    bytes += ins.bytes;
    busy_cycles += cycles;
    if (ins.op == isa::Op::kDmaLoad) {
      ++loads;
      load_bytes += ins.bytes;
    } else {
      ++stores;
      store_bytes += ins.bytes;
    }
  }
  void declare(StatGroup& g) const {
    g.counter("transfers", &transfers, "transfers", "DMA instructions executed");
    g.counter("loads", &loads, "transfers", "HBM -> VMEM transfers");
    g.counter("stores", &stores, "transfers", "VMEM -> HBM transfers");
    g.counter("bytes", &bytes, "bytes", "bytes moved");
    g.counter("load_bytes", &load_bytes, "bytes", "bytes moved HBM -> VMEM");
    g.counter("store_bytes", &store_bytes, "bytes", "bytes moved VMEM -> HBM");
    g.counter("busy_cycles", &busy_cycles, "cycles", "engine occupancy summed over engines (setup to completion)");
    g.counter("engines", &engines, "engines", "DMA engines of the core");
    g.derived("utilization",
              [this] { return run_cycles && engines ? double(busy_cycles) / (double(engines) * double(run_cycles)) : 0.0; },
              "fraction", "busy_cycles / (engines * core cycles of the run)");
  }
};

}  // namespace tpusim
