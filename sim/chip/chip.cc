#include "sim/chip/chip.h"

#include <string>

#include "sim/ici/ici_timing.h"

namespace tpusim {

Chip::Chip(sc_core::sc_module_name name, const HwConfig& hw, uint32_t id)
    : sc_module(name),
      sync("sync"),
      ici_out("ici_out", ici_port_count(hw.slice.topology)),
      ici_in("ici_in"),
      host("host"),
      cmem_("cmem"),
      noc_("noc", hw.chip.cores),
      router_("ici", id, hw),
      pcie_("pcie", hw.chip.cores) {
  const ChipParams& chip = hw.chip;
  for (uint32_t i = 0; i < chip.cores; ++i)
    cores_.push_back(std::make_unique<TensorCore>(("core" + std::to_string(i)).c_str(), chip.core.mxu.count));
  hbm_ = make_hbm(chip.hbm.impl, "hbm");
  for (auto& c : cores_) {
    c->mem.bind(hbm_->target);
    c->cmem.bind(cmem_.target);
    c->sync.bind(sync);
  }
  for (uint32_t i = 0; i < chip.cores; ++i) {
    TensorCore& c = *cores_[i];
    c.xfer_mem.bind(hbm_->target);  // after every DMA socket: index chip.cores + i
    c.noc.bind(noc_.in);
    c.ici.bind(router_.in);
    c.pcie.bind(pcie_.in);
    noc_.to_core[i].bind(c.rx);
    router_.to_core[i].bind(c.rx);
    pcie_.to_core[i].bind(c.rx);
  }
  pcie_.host.bind(host);
  ici_in.bind(router_.in);
  for (uint32_t p = 0; p < ici_out.size(); ++p)
    if (router_.wired(p)) router_.out[p].bind(ici_out[p]);
}

void Chip::configure(const HwConfig& hw, const ResolvedHw& r) {
  for (auto& c : cores_) c->configure(hw, r);
  hbm_->configure(hw.chip, r);
  cmem_.configure(hw.chip, r);
  noc_.configure(r);
  router_.configure(r);
  pcie_.configure(r);
}

void Chip::begin_run(const RunContext* run) {
  noc_.begin_run(run);
  router_.begin_run(run);
  pcie_.begin_run(run);
}

void Chip::end_run(uint64_t run_cycles) {
  noc_.end_run(run_cycles);
  router_.end_run(run_cycles);
  pcie_.end_run(run_cycles);
}

void Chip::dump_network_stats(nlohmann::json& out) const {
  router_.dump_stats(out);
  noc_.dump_stats(out);
  pcie_.dump_stats(out);
}

}  // namespace tpusim
