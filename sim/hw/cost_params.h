// The price of the hardware (docs/energy.md, "Cost"). Optional: a chip without a `cost:` block
// reports no cost.
#pragma once

namespace tpusim {

struct CostParams {
  double usd_per_chip_hour = 0;  // on-demand list price of one chip for one hour
};

}  // namespace tpusim
