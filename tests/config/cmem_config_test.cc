// Hardware config: the optional `chip.cmem` block (TPU v4's CMEM): present on v4, absent on v2/v3,
// its rules, and turning it off or on with --set.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "config/hw_loader.h"
#include "config/hw_schema.h"
#include "tests/config/test_util.h"

namespace tpusim {
namespace {

using testing::config_error_of;
using testing::contains;

const std::string kHwDir = std::string(TPUSIM_SOURCE_DIR) + "/configs/hw";

HwConfig v4(const std::vector<Override>& ovs = {}) { return load_hw_config(kHwDir + "/v4-8.yaml", ovs); }

TEST(CmemConfig, V4HasIt) {
  for (const char* f : {"v4-8.yaml", "v4-32.yaml"}) {
    const HwConfig hw = load_hw_config(kHwDir + "/" + f);
    ASSERT_TRUE(hw.chip.cmem.has_value()) << f;
    EXPECT_EQ(hw.chip.cmem->size_mib, 128u);
    EXPECT_TRUE(has_cmem(hw.chip));
    EXPECT_EQ(cmem_size_bytes(hw.chip), 128ull << 20);
    EXPECT_GT(hw.chip.cmem->bandwidth_gbyte_per_s, hw.chip.hbm.bandwidth_gbyte_per_s);
    EXPECT_LT(hw.chip.cmem->latency_ns, hw.chip.hbm.latency_ns);
  }
}

TEST(CmemConfig, V2AndV3HaveNone) {
  for (const char* f : {"v2-8.yaml", "v3-8.yaml", "v3-32.yaml"}) {
    const HwConfig hw = load_hw_config(kHwDir + "/" + f);
    EXPECT_FALSE(hw.chip.cmem.has_value()) << f;
    EXPECT_FALSE(has_cmem(hw.chip)) << f;
    EXPECT_EQ(cmem_size_bytes(hw.chip), 0u) << f;
    EXPECT_FALSE(contains(dump_hw_config(hw), "cmem:")) << f;  // nothing filled in
  }
}

TEST(CmemConfig, SizeZeroDisablesIt) {
  const HwConfig hw = v4({parse_override("chip.cmem.size_mib=0")});
  ASSERT_TRUE(hw.chip.cmem.has_value());
  EXPECT_FALSE(has_cmem(hw.chip));
}

TEST(CmemConfig, DumpRoundTrips) {
  const HwConfig hw = v4();
  const std::string y = dump_hw_config(hw);
  EXPECT_TRUE(contains(y, "cmem:")) << y;
  EXPECT_TRUE(contains(y, "size_mib: 128")) << y;
  const HwConfig back = load_hw_config_text(y, "dump.yaml", "");
  EXPECT_TRUE(hw_schema().equal(hw, back));
  EXPECT_EQ(hw_schema().to_json(hw)["chip"]["cmem"]["size_mib"], 128);
}

TEST(CmemConfig, Errors) {
  std::string what;
  auto e = config_error_of([&] { v4({parse_override("chip.cmem.bandwidth_gbyte_per_s=0")}); }, &what);
  EXPECT_EQ(e.yaml_path, "chip.cmem.bandwidth_gbyte_per_s");
  EXPECT_TRUE(contains(e.rule, "> 0") || contains(e.rule, "(0,")) << e.rule;
  e = config_error_of([&] { v4({parse_override("chip.cmem.latency_ns=-1")}); });
  EXPECT_EQ(e.yaml_path, "chip.cmem.latency_ns");
  e = config_error_of([&] { v4({parse_override("chip.cmem.size_mib=lots")}); }, &what);
  EXPECT_EQ(e.yaml_path, "chip.cmem.size_mib");
  EXPECT_TRUE(contains(what, "must be an integer")) << what;
  e = config_error_of([&] { v4({parse_override("chip.cmem.size_mb=64")}); });
  EXPECT_EQ(e.yaml_path, "chip.cmem.size_mb");
  EXPECT_EQ(e.suggestion, "did you mean 'size_mib'?");
  e = config_error_of([&] { v4({parse_override("chip.cmme.size_mib=64")}); });
  EXPECT_EQ(e.suggestion, "did you mean 'cmem'?");
  // Adding a CMEM to a v3 (a what-if) needs every key: a lone size names the missing one.
  e = config_error_of([&] { load_hw_config(kHwDir + "/v3-8.yaml", {parse_override("chip.cmem.size_mib=64")}); }, &what);
  EXPECT_TRUE(contains(e.yaml_path, "chip.cmem")) << e.yaml_path;
  EXPECT_TRUE(contains(what, "bandwidth_gbyte_per_s")) << what;
  EXPECT_NO_THROW(load_hw_config(kHwDir + "/v3-8.yaml", {parse_override("chip.cmem={size_mib: 64, "
                                                                          "bandwidth_gbyte_per_s: 1800, latency_ns: 100}")}));
}

TEST(CmemConfig, DocsListTheBlock) {
  const std::string md = hw_schema_markdown();
  EXPECT_TRUE(contains(md, "`chip.cmem`")) << md;
  EXPECT_TRUE(contains(md, "| `size_mib` | integer (32-bit) | MiB |")) << md;
}

}  // namespace
}  // namespace tpusim
