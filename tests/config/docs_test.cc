// The schema reference in docs/config-*.md must match the schemas declared in code, and
// docs/report-fields.md the report field catalogue.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "tests/config/config_docs.h"

namespace tpusim::testing {
namespace {

TEST(ConfigDocs, GeneratedReferenceIsCurrent) {
  for (const auto& d : generated_docs()) {
    const std::string path = std::string(TPUSIM_SOURCE_DIR) + "/" + d.relative_path;
    std::ifstream in(path);
    ASSERT_TRUE(in) << path << " is missing; " << kRegenerateHint;
    std::ostringstream ss;
    ss << in.rdbuf();
    const auto section = generated_section(ss.str());
    ASSERT_TRUE(section) << path << " has no generated section markers; " << kRegenerateHint;
    EXPECT_TRUE(*section == d.reference) << path << " is stale (the schema changed); " << kRegenerateHint;
  }
}

TEST(ConfigDocs, ReferenceListsEveryKeyWithUnit) {
  const std::string md = hw_schema_markdown();
  EXPECT_NE(md.find("`chip.core.mxu`"), std::string::npos);
  EXPECT_NE(md.find("| `clock_mhz` | number | MHz | required |"), std::string::npos) << md;
  EXPECT_NE(md.find("`per_core`, `shared`"), std::string::npos);
  const std::string wl = workload_schema_markdown();
  EXPECT_NE(wl.find("| `dtype` | string |  | `f32` | `f32`, `bf16` |"), std::string::npos) << wl;
}

}  // namespace
}  // namespace tpusim::testing
