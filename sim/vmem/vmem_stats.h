// Stats of VMEM (static allocation plan of the program), shared by both engines.
#pragma once
#include "sim/base/stats.h"
#include "sim/vmem/vmem_check.h"

namespace tpusim {

inline void declare_vmem_stats(StatGroup& g, const VmemUsage* u) {
  g.counter("capacity_bytes", &u->capacity_bytes, "bytes", "VMEM capacity of the core");
  g.counter("allocs", &u->allocs, "buffers", "VMEM buffers of the program");
  g.counter("peak_bytes", &u->peak_bytes, "bytes", "largest sum of live buffer sizes");
  g.derived("peak_utilization",
            [u] { return u->capacity_bytes ? double(u->peak_bytes) / double(u->capacity_bytes) : 0.0; }, "fraction",
            "peak_bytes / capacity_bytes");
}

}  // namespace tpusim
