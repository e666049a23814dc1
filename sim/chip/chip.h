// Chip: its TensorCores, its HBM, its CMEM (v4; present but idle on chips without one), the on-chip network (NoC), the ICI router with its links, and
// its PCIe link. The chip binds every core's memory sockets to the HBM target (the DMA sockets
// first, then the transfer units', each in core order: socket index mod cores = core index), the
// cores' transfer ports to the NoC, router and PCIe link and those blocks' delivery ports back to
// the cores; it passes up the cores' barrier ports, the router's ICI ports (`ici_out`, `ici_in`)
// and the PCIe link's host port, which the slice binds.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>
#include <systemc>

#include "sim/base/core_ifs.h"
#include "sim/base/sc_support.h"
#include "sim/cmem/cmem.h"
#include "sim/core/tensor_core.h"
#include "sim/hbm/hbm.h"
#include "sim/hw/resolved_hw.h"
#include "sim/ici/router.h"
#include "sim/ici/train.h"
#include "sim/noc/noc.h"
#include "sim/pcie/pcie.h"

namespace tpusim {

class Chip : public sc_core::sc_module {
 public:
  sc_core::sc_port<BarrierIf> sync;   // the cores' barrier ports, bound by the slice to its sync service
  sc_core::sc_vector<Router::OptionalPort> ici_out;  // per ICI port index: the neighbour's `ici_in`
  sc_core::sc_export<TrainIf> ici_in;  // the router's input, for the neighbours' links
  sc_core::sc_port<TrainIf> host;      // the PCIe link's far end: this chip's host

  // Structure (cores, MXUs per core, HBM variant, wired ICI ports) is fixed here; configure()
  // applies the rest. `id`: the chip's index in the slice (its position in the topology).
  Chip(sc_core::sc_module_name name, const HwConfig& hw, uint32_t id);

  void configure(const HwConfig& hw, const ResolvedHw& r);
  // Network blocks: every run (cheap); they report stats only when they carried something.
  void begin_run(const RunContext* run);
  void end_run(uint64_t run_cycles);
  void dump_network_stats(nlohmann::json& out) const;

  TensorCore& core(uint32_t i) { return *cores_[i]; }
  uint32_t cores() const { return uint32_t(cores_.size()); }
  Hbm& hbm() { return *hbm_; }
  Cmem& cmem() { return cmem_; }
  Router& router() { return router_; }

 private:
  std::vector<std::unique_ptr<TensorCore>> cores_;
  std::unique_ptr<Hbm> hbm_;
  Cmem cmem_;
  Noc noc_;
  Router router_;
  Pcie pcie_;
};

}  // namespace tpusim
