// Smoke: every shipped hardware config and kernel workload loads, validates and round-trips.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "config/hw_loader.h"
#include "config/hw_schema.h"
#include "config/tree.h"
#include "workloads/config/workload_config.h"

namespace tpusim {
namespace {

const std::string kConfigs = std::string(TPUSIM_SOURCE_DIR) + "/configs";

TEST(ShippedConfigs, EveryHwConfigLoads) {
  const auto files = config::yaml_files_in(kConfigs + "/hw");
  EXPECT_GE(files.size(), 2u);
  for (const auto& f : files) {
    SCOPED_TRACE(f);
    try {
      const HwConfig hw = load_hw_config(f);
      EXPECT_EQ(hw.name, config::file_stem(f));
      EXPECT_TRUE(hw_schema().equal(hw, load_hw_config_text(dump_hw_config(hw), f, "")));
    } catch (const ConfigError& e) {
      ADD_FAILURE() << e.what();
    }
  }
}

TEST(ShippedConfigs, EveryChipFileLoads) {
  for (const auto& f : config::yaml_files_in(kConfigs + "/hw/chips")) {
    SCOPED_TRACE(f);
    try {
      load_chip_params(f);
    } catch (const ConfigError& e) {
      ADD_FAILURE() << e.what();
    }
  }
}

TEST(ShippedConfigs, EveryKernelWorkloadLoads) {
  int kernels = 0;
  for (const auto& f : config::yaml_files_in(kConfigs + "/workloads")) {
    std::ifstream in(f);
    std::stringstream ss;
    ss << in.rdbuf();
    if (ss.str().find("kind: kernel") == std::string::npos) continue;  // other kinds: tested by their owners
    SCOPED_TRACE(f);
    ++kernels;
    try {
      const WorkloadConfig w = load_workload_config(f);
      EXPECT_EQ(w.name, config::file_stem(f));
    } catch (const ConfigError& e) {
      ADD_FAILURE() << e.what();
    }
  }
  EXPECT_GE(kernels, 7);
}

}  // namespace
}  // namespace tpusim
