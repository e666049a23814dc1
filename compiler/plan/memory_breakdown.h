// What a device's HBM holds at the peak of a step (a core's on v2/v3, the chip's on a megacore), by category: what report.json shows so that
// data-parallel and FSDP steps of the same workload can be compared.
#pragma once
#include <cstdint>

#include "compiler/plan/memory_plan.h"

namespace tpusim::compiler {

struct MemoryBreakdown {
  uint64_t parameter_bytes = 0;           // persistent parameters (FSDP: the local slices)
  uint64_t gathered_parameter_bytes = 0;  // FSDP: all-gathered unit parameters live at the peak
  uint64_t gradient_bytes = 0;            // gradients live at the peak (full or reduce-scattered)
  uint64_t optimizer_state_bytes = 0;     // persistent optimizer state (incl. .grad accumulators)
  uint64_t activation_bytes = 0;          // everything else live at the peak: activations, inputs, temporaries
  uint64_t peak_bytes = 0;                // the sum: MemoryPlan::peak_bytes
};

// By the buffers' kinds (the step compiler marks gradients and gathered parameters: SpmdStep).
MemoryBreakdown breakdown_at_peak(const MemoryPlan& m);

}  // namespace tpusim::compiler
