// VMEM allocation check shared by the SystemC VMEM block and the analytical engine.
//
// The compiler assigns VMEM buffers statically (offset, size, live range in stream indices); the
// hardware has no allocator, so a bad plan is a failure of the workload on this hardware: an
// allocation beyond the capacity, or two buffers overlapping in address while both are live.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sim/hw/vmem_params.h"
#include "sim/isa/program.h"

namespace tpusim {

struct VmemUsage {
  uint64_t capacity_bytes = 0;
  uint64_t allocs = 0;
  uint64_t peak_bytes = 0;  // largest sum of live buffer sizes at any instruction
};

// Throws SimError naming the block, the buffer label, its size and the bytes free while it is
// live. `block` is the hierarchical name, e.g. "slice.chip0.core0.vmem". `scratch` is reused.
VmemUsage check_vmem(const VmemParams& p, const isa::CoreProgram& prog, const std::string& block);

}  // namespace tpusim
