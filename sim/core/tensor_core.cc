#include "sim/core/tensor_core.h"

#include <string>

namespace tpusim {
namespace {

// Depth of each sequencer -> unit queue. Timing does not depend on it as long as it is >= 1:
// the sequencer refills a queue the moment its unit takes an instruction (same time, next delta),
// so an instruction still starts at max(deps completed, unit free). 4 keeps wake-ups rare.
constexpr int kIssueQueueDepth = 4;

}  // namespace

TensorCore::TensorCore(sc_core::sc_module_name name, uint32_t mxus)
    : sc_module(name),
      mem("mem"),
      xfer_mem("xfer_mem"),
      cmem("cmem"),
      sync("sync"),
      noc("noc"),
      ici("ici"),
      pcie("pcie"),
      rx("rx"),
      seq_("sequencer", UnitIndex::count(mxus)),
      vpu_("vpu"),
      vmem_("vmem"),
      dma_("dma"),
      xfer_("xfer") {
  for (uint32_t m = 0; m < mxus; ++m) mxus_.push_back(std::make_unique<Mxu>(("mxu" + std::to_string(m)).c_str()));

  // A queue for each unit fed through one (DMA, transfer queue), named after it; the MXU paths
  // and the VPU are issued to directly.
  for (uint32_t u : {UnitIndex::kDma, UnitIndex::kXfer, UnitIndex::kHost}) {
    const char* q = u == UnitIndex::kDma ? "dma_queue" : u == UnitIndex::kXfer ? "xfer_queue" : "host_queue";
    queues_.push_back(std::make_unique<sc_core::sc_fifo<uint32_t>>(q, kIssueQueueDepth));
    seq_.issue[Sequencer::fifo_port_of(u)].bind(*queues_.back());
  }
  auto queue = [&](uint32_t unit) -> sc_core::sc_fifo<uint32_t>& { return *queues_[Sequencer::fifo_port_of(unit)]; };
  dma_.in.bind(queue(UnitIndex::kDma));
  xfer_.in.bind(queue(UnitIndex::kXfer));
  xfer_.host_in.bind(queue(UnitIndex::kHost));
  seq_.direct[Sequencer::direct_port_of(UnitIndex::kVpu)].bind(vpu_.in);
  for (uint32_t m = 0; m < mxus; ++m) {
    seq_.direct[Sequencer::direct_port_of(UnitIndex::mxu_weights(m))].bind(mxus_[m]->weights_in);
    seq_.direct[Sequencer::direct_port_of(UnitIndex::mxu_stream(m))].bind(mxus_[m]->stream_in);
  }
  dma_.done.bind(seq_);
  xfer_.done.bind(seq_);
  dma_.mem.bind(mem);     // hierarchical: the chip binds `mem` to its HBM
  dma_.cmem.bind(cmem);   // ... and `cmem` to its CMEM
  xfer_.hbm.bind(xfer_mem);
  xfer_.noc.bind(noc);    // hierarchical: the chip binds the network ports and `rx`
  xfer_.ici.bind(ici);
  xfer_.pcie.bind(pcie);
  rx.bind(xfer_.rx);
  seq_.sync.bind(sync);   // hierarchical: the chip binds `sync` to the slice's sync service
}

void TensorCore::configure(const HwConfig& hw, const ResolvedHw& r) {
  const ChipParams& chip = hw.chip;
  seq_.configure(chip.core.sequencer.launch_cycles);
  for (auto& m : mxus_) m->configure(chip.core.mxu);
  vpu_.configure(chip.core.vpu);
  vmem_.configure(chip.core.vmem);
  dma_.configure(chip, r);
  xfer_.configure(hw, r);
}

void TensorCore::begin_run(const CorePlan* plan, const RunContext* run) {
  for (auto& m : mxus_) m->begin_run(plan->view(), run);
  vpu_.begin_run(plan->view(), run, plan->queues.size(UnitIndex::kVpu), plan->queues.size(UnitIndex::kVpuAsync));
  dma_.begin_run(plan->view(), run);
  xfer_.begin_run(plan, run);
  seq_.begin_run(plan, run);
}

void TensorCore::end_run() {
  seq_.end_run();
  const uint64_t cycles = seq_.end_cycle();
  for (auto& m : mxus_) m->end_run(cycles);
  vpu_.end_run(cycles);
  dma_.end_run(cycles);
  xfer_.end_run(cycles);
}

void TensorCore::dump_stats(nlohmann::json& out) const {
  out[seq_.stats().name()] = seq_.stats().dump();
  for (const auto& m : mxus_) out[m->stats().name()] = m->stats().dump();
  out[vpu_.stats().name()] = vpu_.stats().dump();
  out[vmem_.stats().name()] = vmem_.stats().dump();
  out[dma_.stats().name()] = dma_.stats().dump();
  if (xfer_.used()) out[xfer_.stats().name()] = xfer_.stats().dump();
}

}  // namespace tpusim
