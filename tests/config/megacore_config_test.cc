// Hardware config: `chip.megacore` (TPU v4: the chip's two TensorCores are one device): set on
// v4, false (absent) on v2/v3, and its rules (shared HBM, at least two cores).
#include <gtest/gtest.h>

#include "config/hw_loader.h"
#include "config/hw_schema.h"
#include "tests/config/test_util.h"

namespace tpusim {
namespace {

using testing::config_error_of;
using testing::contains;

const std::string kHwDir = std::string(TPUSIM_SOURCE_DIR) + "/configs/hw";

TEST(MegacoreConfig, V4ChipsAreOneDevice) {
  for (const char* f : {"v4-8.yaml", "v4-16.yaml", "v4-32.yaml"}) {
    const HwConfig hw = load_hw_config(kHwDir + "/" + f);
    EXPECT_TRUE(hw.chip.megacore) << f;
    EXPECT_EQ(devices_per_chip(hw.chip), 1u) << f;
    EXPECT_EQ(cores_per_device(hw.chip), 2u) << f;
    EXPECT_TRUE(contains(dump_hw_config(hw), "megacore: true")) << f;
  }
  const HwConfig v4_16 = load_hw_config(kHwDir + "/v4-16.yaml");
  EXPECT_EQ(v4_16.slice.chips(), 8u);
  EXPECT_EQ(v4_16.slice.hosts, 2u);
}

TEST(MegacoreConfig, V2AndV3CoresAreDevices) {
  for (const char* f : {"v2-8.yaml", "v3-8.yaml", "v3-32.yaml"}) {
    const HwConfig hw = load_hw_config(kHwDir + "/" + f);
    EXPECT_FALSE(hw.chip.megacore) << f;
    EXPECT_EQ(devices_per_chip(hw.chip), 2u) << f;
    EXPECT_EQ(cores_per_device(hw.chip), 1u) << f;
  }
}

TEST(MegacoreConfig, NeedsSharedHbm) {
  std::string what;
  auto e = config_error_of([] { load_hw_config(kHwDir + "/v3-8.yaml", {parse_override("chip.megacore=true")}); }, &what);
  EXPECT_EQ(e.yaml_path, "chip.megacore");
  EXPECT_TRUE(contains(e.rule, "needs hbm.ownership: shared (is per_core)")) << what;
  EXPECT_TRUE(contains(e.suggestion, "megacore: false")) << e.suggestion;
  EXPECT_NO_THROW(load_hw_config(kHwDir + "/v3-8.yaml",
                                 {parse_override("chip.megacore=true"), parse_override("chip.hbm.ownership=shared")}));
  e = config_error_of([] { load_hw_config(kHwDir + "/v4-8.yaml", {parse_override("chip.hbm.ownership=per_core")}); });
  EXPECT_EQ(e.yaml_path, "chip.megacore");
}

TEST(MegacoreConfig, NeedsTwoCores) {
  auto e = config_error_of([] { load_hw_config(kHwDir + "/v4-8.yaml", {parse_override("chip.cores=1")}); });
  EXPECT_EQ(e.yaml_path, "chip.megacore");
  EXPECT_TRUE(contains(e.rule, "at least 2 cores")) << e.rule;
  EXPECT_NO_THROW(load_hw_config(kHwDir + "/v4-8.yaml", {parse_override("chip.cores=1"), parse_override("chip.megacore=false")}));
}

TEST(MegacoreConfig, OffByOverride) {
  const HwConfig hw = load_hw_config(kHwDir + "/v4-8.yaml", {parse_override("chip.megacore=false")});
  EXPECT_FALSE(hw.chip.megacore);
  EXPECT_EQ(devices_per_chip(hw.chip), 2u);
}

TEST(MegacoreConfig, Documented) {
  EXPECT_TRUE(hw_schema().has_path("chip.megacore"));
}

}  // namespace
}  // namespace tpusim
