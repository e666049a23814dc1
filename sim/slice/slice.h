// Slice: the top module ("slice"): chips (count = product of topology dims) and the barrier
// service. Built once per process from the config's structure; numeric parameters are applied by
// configure(). Idle chips and cores cost nothing at run time: their processes never wake.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include <systemc>

#include "sim/chip/chip.h"
#include "sim/slice/slice_params.h"
#include "sim/slice/sync.h"

namespace tpusim {

class Slice : public sc_core::sc_module {
 public:
  Slice(sc_core::sc_module_name name, const HwConfig& hw);

  void configure(const HwConfig& hw);
  Chip& chip(uint32_t i) { return *chips_[i]; }
  uint32_t chips() const { return uint32_t(chips_.size()); }
  Sync& sync() { return sync_; }

 private:
  std::vector<std::unique_ptr<Chip>> chips_;
  Sync sync_;
};

}  // namespace tpusim
