#include "sim/slice/slice.h"

#include <string>

namespace tpusim {

Slice::Slice(sc_core::sc_module_name name, const HwConfig& hw) : sc_module(name), sync_("sync") {
  for (uint32_t i = 0; i < hw.slice.chips(); ++i) {
    chips_.push_back(std::make_unique<Chip>(("chip" + std::to_string(i)).c_str(), hw.chip));
    chips_.back()->sync.bind(sync_);
  }
}

void Slice::configure(const HwConfig& hw) {
  for (auto& c : chips_) c->configure(hw.chip);
}

}  // namespace tpusim
