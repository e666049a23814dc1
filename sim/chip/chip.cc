#include "sim/chip/chip.h"

#include <string>

namespace tpusim {

Chip::Chip(sc_core::sc_module_name name, const ChipParams& chip) : sc_module(name), sync("sync") {
  for (uint32_t i = 0; i < chip.cores; ++i)
    cores_.push_back(std::make_unique<TensorCore>(("core" + std::to_string(i)).c_str(), chip.core.mxu.count));
  hbm_ = make_hbm(chip.hbm.impl, "hbm");
  for (auto& c : cores_) {
    c->mem.bind(hbm_->target);
    c->sync.bind(sync);
  }
}

void Chip::configure(const ChipParams& chip) {
  for (auto& c : cores_) c->configure(chip);
  hbm_->configure(chip);
}

}  // namespace tpusim
