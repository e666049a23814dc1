// unit: engines and HBM variants are chosen by name; unknown names are ConfigErrors listing the
// known ones (STYLE rule 3).
#include <gtest/gtest.h>

#include "base/config_error.h"
#include "sim/engine/engine.h"
#include "tests/sim/test_hw.h"

namespace tpusim {
namespace {

TEST(EngineRegistry, ListsTheEngines) {
  EXPECT_EQ(engine_names(), (std::vector<std::string>{"analytical", "systemc"}));
  EXPECT_EQ(make_engine("analytical", test::v3_8_like())->name(), "analytical");
}

TEST(EngineRegistry, UnknownEngineListsTheKnownOnes) {
  try {
    make_engine("spice", test::v3_8_like());
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.info().yaml_path, "engine");
    EXPECT_EQ(e.info().value, "spice");
    EXPECT_NE(std::string(e.what()).find("known engines: analytical, systemc"), std::string::npos) << e.what();
  }
}

// The SystemC engine builds the HBM variant by name: an unknown one is refused before anything
// is elaborated. (A loaded config never names one: the schema lists the variants. The rest of
// what the engines need of a config is the schema's too: tests/config/hw_config_test.cc.)
TEST(EngineRegistry, UnknownHbmImplListsTheKnownOnes) {
  HwConfig hw = test::v3_8_like();
  hw.chip.hbm.impl = "detailed";
  try {
    make_engine("systemc", hw);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.info().yaml_path, "chip.hbm.impl");
    EXPECT_NE(std::string(e.what()).find("value 'detailed' unknown HBM model; known models: simple"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tpusim
