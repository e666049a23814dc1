// Sweep files for tests: YAML text loaded as if it were configs/sweeps/test.yaml of the source tree,
// so that `hw: ../hw/v3-8.yaml` resolves to the shipped configs.
#pragma once
#include <string>

#include "sweep/sweep_config.h"
#include "tests/config/test_util.h"

namespace tpusim::testing {

inline const std::string kTestSweepFile = std::string(TPUSIM_SOURCE_DIR) + "/configs/sweeps/test.yaml";

// A kernel sweep header: the v3-8 and the 1024^3 matmul, analytical.
inline const std::string kKernelBase =
    "hw: ../hw/v3-8.yaml\nworkload: ../workloads/kernel_matmul_1024.yaml\nengine: analytical\n";

inline sweep::SweepConfig sweep_text(const std::string& yaml) {
  return sweep::load_sweep_config_text(yaml, kTestSweepFile);
}

}  // namespace tpusim::testing
