// TensorCore: sequencer + MXUs + VPU + VMEM + DMA engines + transfer queue, wired by issue queues
// (sc_fifo of instruction indices, sequencer -> DMA and transfer queue) and issue ports
// (IssueIf, sequencer -> MXU paths and VPU), completion ports (DMA and transfer queue ->
// sequencer), the
// DMA's and the transfer queue's memory sockets (exported to the chip, which binds them to its
// HBM, and the DMA's CMEM socket to its CMEM), the transfer queue's network ports and receive export (bound by the chip to its NoC,
// router and PCIe link) and the sequencer's barrier port (bound to the slice's sync service).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>
#include <systemc>
#include <tlm>

#include "sim/analysis/program_plan.h"
#include "sim/base/core_ifs.h"
#include "sim/base/sc_support.h"
#include "sim/core/sequencer.h"
#include "sim/dma/dma.h"
#include "sim/hw/resolved_hw.h"
#include "sim/mxu/mxu.h"
#include "sim/vmem/vmem.h"
#include "sim/vpu/vpu.h"
#include "sim/xfer/xfer.h"

namespace tpusim {

class TensorCore : public sc_core::sc_module {
 public:
  tlm::tlm_initiator_socket<> mem;       // the DMA engines' path to the chip's HBM
  tlm::tlm_initiator_socket<> xfer_mem;  // the transfer queue's path to the chip's HBM
  tlm::tlm_initiator_socket<> cmem;      // the DMA engines' path to the chip's CMEM
  sc_core::sc_port<BarrierIf> sync;
  sc_core::sc_port<TrainIf> noc;         // transfer queue -> the chip's NoC
  sc_core::sc_port<TrainIf> ici;         // transfer queue -> the chip's ICI router
  sc_core::sc_port<TrainIf> pcie;        // transfer queue -> the chip's PCIe link
  sc_core::sc_export<TrainIf> rx;        // trains delivered to this core (its transfer unit)

  // `mxus`: the one structural parameter (modules cannot be added after elaboration); every
  // other parameter is applied by configure() and may change between runs.
  TensorCore(sc_core::sc_module_name name, uint32_t mxus);

  void configure(const HwConfig& hw, const ResolvedHw& r);
  // Checks what can make the program fail on this core (VMEM plan); throws SimError.
  void load(const CorePlan& plan) { vmem_.load(*plan.prog); }
  void begin_run(const CorePlan* plan, const RunContext* run);
  void end_run();
  bool finished() const { return seq_.finished(); }
  std::string stuck_report() const { return seq_.stuck_report(); }
  uint64_t end_cycle() const { return seq_.end_cycle(); }
  OpProfile op_profile(const HwConfig& hw, const ResolvedHw& r) const { return seq_.op_profile(hw, r); }
  CollectiveStats collective_stats(const HwConfig& hw) const { return seq_.collective_stats(hw); }
  void dump_stats(nlohmann::json& out) const;

 private:
  Sequencer seq_;
  std::vector<std::unique_ptr<Mxu>> mxus_;
  Vpu vpu_;
  Vmem vmem_;
  Dma dma_;
  Xfer xfer_;
  std::vector<std::unique_ptr<sc_core::sc_fifo<uint32_t>>> queues_;  // indexed by Sequencer::fifo_port_of
};

}  // namespace tpusim
