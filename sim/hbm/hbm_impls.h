// Names of the HBM model variants (`chip.hbm.impl`), without pulling in SystemC.
#pragma once
#include <string>
#include <vector>

namespace tpusim {

std::vector<std::string> hbm_impl_names();
// Throws ConfigError (path chip.hbm.impl, listing the known names) for an unknown variant.
void check_hbm_impl(const std::string& impl);

}  // namespace tpusim
