// Hardware config: the shipped files, the schema's rules and cross-field checks, include:, --set.
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

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string replace(std::string s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? s : s.replace(at, from.size(), to);
}

int line_of(const std::string& text, const std::string& needle) {
  const size_t at = text.find(needle);
  EXPECT_NE(at, std::string::npos) << needle;
  return 1 + int(std::count(text.begin(), text.begin() + at, '\n'));
}

// v3-8 from memory: the slice text and the chip file (possibly edited) as an embedded include.
struct V38 {
  std::string slice = read(kHwDir + "/v3-8.yaml");
  std::string chip = read(kHwDir + "/chips/tpu_v3.yaml");
  HwConfig load(const std::vector<Override>& ovs = {}) const {
    const std::map<std::string, std::string> files = {{"chips/tpu_v3.yaml", chip}};
    return load_hw_config_text(slice, "mem/v3-8.yaml", "mem", ovs, &files);
  }
};

TEST(HwConfig, LoadsV38WithTheDocumentedValues) {
  const HwConfig hw = load_hw_config(kHwDir + "/v3-8.yaml");
  EXPECT_EQ(hw.name, "v3-8");
  EXPECT_EQ(hw.chip.generation, "v3");
  EXPECT_EQ(hw.chip.cores, 2u);
  EXPECT_DOUBLE_EQ(hw.chip.core.clock_mhz, 940);
  EXPECT_EQ(hw.chip.core.mxu.count, 2u);
  EXPECT_EQ(hw.chip.core.mxu.rows, 128u);
  EXPECT_EQ(hw.chip.core.vpu.sublanes, 8u);
  EXPECT_EQ(hw.chip.core.vmem.size_bytes(), 16ull << 20);
  EXPECT_EQ(hw.chip.hbm.size_gib, 32u);
  EXPECT_DOUBLE_EQ(hw.chip.hbm.bandwidth_gbyte_per_s, 900);
  EXPECT_EQ(hw.chip.hbm.channels, 32u);
  EXPECT_EQ(hw.chip.hbm.ownership, HbmOwnership::kPerCore);
  EXPECT_DOUBLE_EQ(hw.chip.ici.bandwidth_gbyte_per_s_per_direction, 82);
  EXPECT_EQ(hw.slice.topology.dims, (std::vector<uint32_t>{2, 2}));
  EXPECT_EQ(hw.slice.topology.wraparound, (std::vector<bool>{false, false}));
  EXPECT_EQ(hw.slice.chips(), 4u);
  EXPECT_EQ(hw.host.cpus, 96u);
  EXPECT_EQ(hw.host.ram_gib, 317u);  // 340 GB = 316.7 GiB
}

TEST(HwConfig, EmbeddedIncludeMatchesDisk) {
  EXPECT_TRUE(hw_schema().equal(V38().load(), load_hw_config(kHwDir + "/v3-8.yaml")));
}

TEST(HwConfig, DumpRoundTrips) {
  for (const char* f : {"v2-8.yaml", "v3-8.yaml", "v4-8.yaml"}) {
    const HwConfig hw = load_hw_config(kHwDir + "/" + f);
    const std::string y = dump_hw_config(hw);
    EXPECT_TRUE(contains(y, "clock_mhz: ")) << y;
    EXPECT_TRUE(contains(y, "# MHz — core clock")) << y;
    EXPECT_TRUE(contains(y, "# GB/s — peak bandwidth per chip")) << y;
    const HwConfig back = load_hw_config_text(y, "dump.yaml", "");
    EXPECT_TRUE(hw_schema().equal(hw, back)) << f << "\n" << y;
    EXPECT_EQ(dump_hw_config(back), y);
  }
}

TEST(HwConfig, ErrorInIncludedFileNamesThatFileAndLine) {
  V38 v;
  v.chip = replace(v.chip, "count: 2  ", "count: 0  ");
  std::string what;
  auto e = config_error_of([&] { v.load(); }, &what);
  EXPECT_EQ(e.file, "mem/chips/tpu_v3.yaml");
  EXPECT_EQ(e.line, line_of(v.chip, "count: 0"));
  EXPECT_EQ(e.yaml_path, "chip.core.mxu.count");
  EXPECT_EQ(e.value, "0");
  EXPECT_EQ(e.rule, "must be an integer in [1, 16]");
  EXPECT_TRUE(contains(what, "mem/chips/tpu_v3.yaml:")) << what;
}

TEST(HwConfig, UnknownKeySuggests) {
  V38 v;
  v.chip = replace(v.chip, "clock_mhz:", "clok_mhz:");
  auto e = config_error_of([&] { v.load(); });
  EXPECT_EQ(e.yaml_path, "chip.core.clok_mhz");
  EXPECT_EQ(e.suggestion, "did you mean 'clock_mhz'?");
  v = V38();
  v.chip = replace(v.chip, "bandwidth_gbyte_per_s: 900", "bandwidth: 900");
  e = config_error_of([&] { v.load(); });
  EXPECT_EQ(e.suggestion, "did you mean 'bandwidth_gbyte_per_s'?");
}

TEST(HwConfig, LocalKeysOverrideTheInclude) {
  V38 v;
  v.slice = replace(v.slice, "  include: chips/tpu_v3.yaml", "  include: chips/tpu_v3.yaml\n  core:\n    mxu: {count: 4}");
  const HwConfig hw = v.load();
  EXPECT_EQ(hw.chip.core.mxu.count, 4u);
  EXPECT_EQ(hw.chip.core.mxu.rows, 128u);  // deep merge keeps the included siblings
  EXPECT_DOUBLE_EQ(hw.chip.core.clock_mhz, 940);
}

TEST(HwConfig, MissingIncludeNamesTheIncludingFile) {
  V38 v;
  v.slice = replace(v.slice, "chips/tpu_v3.yaml", "chips/tpu_v33.yaml");
  std::string what;
  auto e = config_error_of([&] { v.load(); }, &what);
  EXPECT_EQ(e.file, "mem/v3-8.yaml");
  EXPECT_EQ(e.line, line_of(v.slice, "include:"));
  EXPECT_EQ(e.yaml_path, "chip.include");
  EXPECT_EQ(e.value, "chips/tpu_v33.yaml");
  EXPECT_TRUE(contains(e.rule, "included file not found")) << what;
  // On disk, the suggestion names the closest file beside it.
  const std::string tmp = (std::filesystem::temp_directory_path() / "tpusim_cfg_test_inc").string();
  std::filesystem::create_directories(tmp + "/chips");
  std::ofstream(tmp + "/chips/tpu_v3.yaml") << v.chip;
  std::ofstream(tmp + "/s.yaml") << v.slice;
  e = config_error_of([&] { load_hw_config(tmp + "/s.yaml"); });
  EXPECT_EQ(e.file, tmp + "/s.yaml");
  EXPECT_TRUE(contains(e.suggestion, "did you mean '" + tmp + "/chips/tpu_v3.yaml'?")) << e.suggestion;
  std::filesystem::remove_all(tmp);
}

TEST(HwConfig, SyntaxErrorInIncludedFile) {
  V38 v;
  v.chip = replace(v.chip, "  mxu:\n", "  mxu: [\n");
  std::string what;
  auto e = config_error_of([&] { v.load(); }, &what);
  EXPECT_EQ(e.file, "mem/chips/tpu_v3.yaml");
  EXPECT_GE(e.line, line_of(v.chip, "mxu: ["));
  EXPECT_TRUE(contains(what, "YAML syntax error")) << what;
}

TEST(HwConfig, IncludeCycleIsAnError) {
  const std::map<std::string, std::string> files = {{"a.yaml", "include: b.yaml\n"}, {"b.yaml", "include: a.yaml\n"}};
  auto e = config_error_of([&] { load_hw_config_text("include: a.yaml\n", "top.yaml", "", {}, &files); });
  EXPECT_TRUE(contains(e.rule, "include cycle")) << e.rule;
}

// An include bomb: eight files each including the next eight times would be 8^8 loads.
TEST(HwConfig, IncludeBombIsAnError) {
  std::map<std::string, std::string> files;
  for (int i = 0; i < 8; ++i) {
    // Appended piece by piece: GCC 12 warns (-Wrestrict, falsely) on "f" + std::to_string(...).
    std::string list = "include: [", next = std::to_string(i + 1), self = std::to_string(i);
    for (int k = 0; k < 8; ++k) {
      if (k) list += ", ";
      list += 'f';
      list += next;
      list += ".yaml";
    }
    list += "]\n";
    std::string name = "f";
    name += self;
    name += ".yaml";
    files[name] = list;
  }
  files["f8.yaml"] = "name: x\n";
  auto e = config_error_of([&] { load_hw_config_text("include: f0.yaml\n", "top.yaml", "", {}, &files); });
  EXPECT_TRUE(contains(e.rule, "a config includes at most 256 files in all")) << e.rule;
  EXPECT_EQ(e.suggestion, "include each file once");
}

TEST(HwConfig, MissingFileSuggestsShippedConfigs) {
  std::string what;
  auto e = config_error_of([] { load_hw_config(kHwDir + "/v3_8.yaml"); }, &what);
  EXPECT_EQ(e.rule, "file not found");
  EXPECT_EQ(e.suggestion, "did you mean '" + kHwDir + "/v3-8.yaml'?") << what;
  e = config_error_of([] { load_hw_config(kHwDir + "/tpu-pod.yaml"); });
  EXPECT_TRUE(contains(e.suggestion, "available: ")) << e.suggestion;
  EXPECT_TRUE(contains(e.suggestion, "v3-8.yaml")) << e.suggestion;
}

TEST(HwConfig, CrossFieldChecks) {
  V38 v;
  auto e = config_error_of([&] { v.load({{"slice.topology.wraparound", "[true]"}}); });
  EXPECT_EQ(e.yaml_path, "slice.topology.wraparound");
  EXPECT_EQ(e.rule, "must have one entry per dimension of dims (2)");
  e = config_error_of([&] { v.load({{"slice.chips_per_host", "2"}}); });
  EXPECT_EQ(e.yaml_path, "slice.hosts");
  EXPECT_TRUE(contains(e.rule, "hosts × chips_per_host = 1 × 2 = 2 must equal the chips of topology.dims (4)")) << e.rule;
  e = config_error_of([&] { v.load({{"chip.hbm.channels", "31"}}); });
  EXPECT_EQ(e.yaml_path, "chip.hbm.channels");
  EXPECT_EQ(e.value, "31");
  EXPECT_TRUE(contains(e.rule, "divisible by cores (2)")) << e.rule;
  EXPECT_NO_THROW(v.load({{"chip.hbm.channels", "31"}, {"chip.hbm.ownership", "shared"}}));
  e = config_error_of([&] { v.load({{"chip.ici.links", "1"}}); });
  EXPECT_EQ(e.yaml_path, "chip.ici.links");
  e = config_error_of([&] { v.load({{"chip.core.mxu.weight_load_rows_per_cycle", "129"}}); });
  EXPECT_EQ(e.rule, "must be <= rows (128)");
}

TEST(HwConfig, OneOfAndRanges) {
  V38 v;
  auto e = config_error_of([&] { v.load({{"chip.hbm.impl", "detailed"}}); });
  EXPECT_EQ(e.rule, "must be one of: simple");
  e = config_error_of([&] { v.load({{"chip.hbm.ownership", "per-core"}}); });
  EXPECT_EQ(e.suggestion, "did you mean 'per_core'?");
  e = config_error_of([&] { v.load({{"chip.hbm.efficiency", "1.5"}}); });
  EXPECT_EQ(e.rule, "must be a number in (0, 1]");
  e = config_error_of([&] { v.load({{"chip.hbm.efficiency", "0"}}); });
  EXPECT_EQ(e.rule, "must be a number in (0, 1]");
  e = config_error_of([&] { v.load({{"chip.generation", "v9"}}); });
  EXPECT_EQ(e.rule, "must be one of: v2, v3, v4, v5e, v5p, v6e");
}

// What the simulator needs of a config (counts that divide, names it knows, the network it
// builds) is the schema's to check, once, when the config is loaded: the engines check nothing
// again. Each case breaks one such rule; the error names its key.
TEST(HwConfig, TheSimulatorsNeedsAreSchemaRules) {
  const std::vector<std::pair<std::vector<Override>, std::string>> cases = {
      {{{"chip.core.clock_mhz", "0"}}, "chip.core.clock_mhz"},
      {{{"chip.cores", "0"}}, "chip.cores"},
      {{{"chip.core.mxu.count", "0"}}, "chip.core.mxu.count"},
      {{{"chip.core.mxu.rows", "0"}}, "chip.core.mxu.rows"},
      {{{"chip.core.mxu.cols", "0"}}, "chip.core.mxu.cols"},
      {{{"chip.core.mxu.weight_buffers", "0"}}, "chip.core.mxu.weight_buffers"},
      {{{"chip.core.mxu.weight_load_rows_per_cycle", "0"}}, "chip.core.mxu.weight_load_rows_per_cycle"},
      {{{"chip.core.mxu.lhs_rows_per_cycle", "0"}}, "chip.core.mxu.lhs_rows_per_cycle"},
      {{{"chip.core.vpu.alu_slots", "0"}}, "chip.core.vpu.alu_slots"},
      {{{"chip.core.vpu.vld_slots", "0"}}, "chip.core.vpu.vld_slots"},
      {{{"chip.core.vpu.vst_slots", "0"}}, "chip.core.vpu.vst_slots"},
      {{{"chip.core.dma.engines", "0"}}, "chip.core.dma.engines"},
      {{{"chip.core.dma.chunk_bytes", "0"}}, "chip.core.dma.chunk_bytes"},
      {{{"chip.core.xfer.channels", "0"}}, "chip.core.xfer.channels"},
      {{{"chip.hbm.impl", "detailed"}}, "chip.hbm.impl"},
      {{{"chip.hbm.ownership", "private"}}, "chip.hbm.ownership"},
      {{{"chip.hbm.bandwidth_gbyte_per_s", "0"}}, "chip.hbm.bandwidth_gbyte_per_s"},
      {{{"chip.hbm.efficiency", "0"}}, "chip.hbm.efficiency"},
      {{{"chip.hbm.latency_ns", "-1"}}, "chip.hbm.latency_ns"},
      {{{"chip.hbm.channels", "0"}}, "chip.hbm.channels"},
      {{{"chip.hbm.channels", "1"}}, "chip.hbm.channels"},  // per_core: every core owns channels / cores
      {{{"chip.cmem.size_mib", "128"}, {"chip.cmem.bandwidth_gbyte_per_s", "0"}, {"chip.cmem.latency_ns", "100"}},
       "chip.cmem.bandwidth_gbyte_per_s"},
      {{{"chip.cmem.size_mib", "128"}, {"chip.cmem.bandwidth_gbyte_per_s", "100"}, {"chip.cmem.latency_ns", "-1"}},
       "chip.cmem.latency_ns"},
      {{{"slice.topology.dims", "[]"}}, "slice.topology.dims"},
      {{{"slice.topology.dims", "[1, 1, 1, 1]"}}, "slice.topology.dims"},
      {{{"slice.topology.dims", "[0, 2]"}}, "slice.topology.dims"},
      {{{"slice.topology.wraparound", "[false]"}}, "slice.topology.wraparound"},
      {{{"chip.ici.packet_bytes", "0"}}, "chip.ici.packet_bytes"},
      {{{"chip.ici.bandwidth_gbyte_per_s_per_direction", "0"}}, "chip.ici.bandwidth_gbyte_per_s_per_direction"},
      {{{"chip.noc.bandwidth_gbyte_per_s", "0"}}, "chip.noc.bandwidth_gbyte_per_s"},
      {{{"chip.pcie.bandwidth_gbyte_per_s", "0"}}, "chip.pcie.bandwidth_gbyte_per_s"},
      {{{"slice.hosts", "2"}}, "slice.hosts"},
  };
  V38 v;
  for (const auto& [overrides, key] : cases) {
    const ConfigErrorInfo e = config_error_of([&] { v.load(overrides); });
    EXPECT_EQ(e.yaml_path.rfind(key, 0), 0u) << key << ": the error is at " << e.yaml_path << ": " << e.rule;
  }
}

TEST(HwConfig, OverridesSweepTheSlice) {
  const HwConfig hw = V38().load({parse_override("slice.topology.dims=[4,4]"), parse_override("slice.hosts=4"),
                                  parse_override("slice.topology.wraparound=[true, true]"),
                                  parse_override("chip.core.mxu.rows=256"), parse_override("name=what-if")});
  EXPECT_EQ(hw.slice.chips(), 16u);
  EXPECT_EQ(hw.slice.topology.wraparound, (std::vector<bool>{true, true}));
  EXPECT_EQ(hw.chip.core.mxu.rows, 256u);
  EXPECT_EQ(hw.name, "what-if");
}

TEST(HwConfig, OverrideErrors) {
  V38 v;
  std::string what;
  auto e = config_error_of([&] { v.load({parse_override("chip.core.mxu.cuont=4")}); }, &what);
  EXPECT_EQ(e.file, "--set");
  EXPECT_EQ(e.yaml_path, "chip.core.mxu.cuont");
  EXPECT_EQ(e.suggestion, "did you mean 'count'?");
  e = config_error_of([&] { v.load({parse_override("chip.core.mxu.count=lots")}); }, &what);
  EXPECT_EQ(what, "--set: chip.core.mxu.count: value 'lots' must be an integer in [1, 16]");
  e = config_error_of([&] { v.load({parse_override("slice.topology.dims=[4,x]")}); }, &what);
  EXPECT_EQ(e.yaml_path, "slice.topology.dims[1]");
  EXPECT_EQ(e.file, "--set");
}

TEST(HwConfig, NameDefaultsToFileStem) {
  V38 v;
  v.slice = replace(v.slice, "name: v3-8\n", "");
  EXPECT_EQ(v.load().name, "v3-8");
}

TEST(HwConfig, ChipFileValidatesAlone) {
  const ChipParams c = load_chip_params(kHwDir + "/chips/tpu_v2.yaml");
  EXPECT_EQ(c.generation, "v2");
  EXPECT_DOUBLE_EQ(c.core.clock_mhz, 700);
}

TEST(HwConfig, JsonHasEveryKey) {
  const auto j = hw_schema().to_json(V38().load());
  EXPECT_EQ(j["chip"]["core"]["mxu"]["count"], 2);
  EXPECT_EQ(j["slice"]["topology"]["dims"], nlohmann::json::array({2, 2}));
}

}  // namespace
}  // namespace tpusim
