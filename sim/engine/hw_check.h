// What the simulator needs from a hardware config beyond the loader's schema checks: counts that
// must be non-zero (they divide) and names that must be known. Throws ConfigError.
#pragma once
#include "sim/hw/hw_config.h"

namespace tpusim {

void check_hw_for_sim(const HwConfig& hw);

}  // namespace tpusim
