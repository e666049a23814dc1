// VMEM: the core's software-managed vector memory. The compiler places every buffer statically,
// so the block has no timing of its own (loads/stores are VPU vld/vst slots, DMA writes are
// accounted on the DMA/HBM side); it enforces capacity and live-overlap of the program's
// allocation plan when a program is loaded, and reports its occupancy.
#pragma once
#include <systemc>

#include "sim/base/stats.h"
#include "sim/hw/vmem_params.h"
#include "sim/isa/program.h"
#include "sim/vmem/vmem_check.h"
#include "sim/vmem/vmem_stats.h"

namespace tpusim {

class Vmem : public sc_core::sc_module {
 public:
  explicit Vmem(sc_core::sc_module_name name) : sc_module(name), group_(this->name()) {
    declare_vmem_stats(group_, &usage_);
  }

  void configure(const VmemParams& p) { p_ = p; }
  // Checks the allocation plan of `prog`; throws SimError (label, size, free bytes) when it does
  // not fit. Called for every core before any core starts, so a failing run leaves no state.
  void load(const isa::CoreProgram& prog) { usage_ = check_vmem(p_, prog, name()); }
  const StatGroup& stats() const { return group_; }

 private:
  VmemParams p_;
  VmemUsage usage_;
  StatGroup group_;
};

}  // namespace tpusim
