// Hardware config: the TPU v5e, v5p and v6e chip and slice files. Their clocks are derived from the
// published bf16 peaks (docs/hardware.md), so the peaks the simulator computes back from clock and MXUs
// must equal the published figures; the slices must have the published shapes; v5e-8 is v5litepod-8.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "config/hw_loader.h"
#include "config/hw_schema.h"
#include "tests/config/test_util.h"

namespace tpusim {
namespace {

using testing::config_error_of;
using testing::contains;

const std::string kHwDir = std::string(TPUSIM_SOURCE_DIR) + "/configs/hw";

HwConfig load(const std::string& stem) { return load_hw_config(kHwDir + "/" + stem + ".yaml"); }

// Every core's MXUs, one multiply-accumulate (2 flop) per array cell per cycle.
double chip_peak_tflop_per_s(const ChipParams& c) {
  return 2.0 * c.cores * c.core.mxu.count * c.core.mxu.rows * c.core.mxu.cols * c.core.clock_mhz * 1e6 / 1e12;
}

struct Published {
  const char* slice;
  const char* generation;
  double tflop_per_s;  // bf16 per chip (Cloud TPU pages)
  double hbm_gib, hbm_gbyte_per_s;
  uint32_t cores, mxu_size, links;
  double ici_gbyte_per_s, usd_per_chip_hour;
};

const Published kChips[] = {
    {"v5litepod-8", "v5e", 197, 16, 819, 1, 128, 4, 45, 1.20},
    {"v5p-8", "v5p", 459, 95, 2765, 2, 128, 6, 90, 4.20},
    {"v6e-8", "v6e", 918, 32, 1640, 1, 256, 4, 90, 2.70},
};

TEST(GenerationsConfig, DerivedPeaksEqualThePublishedFigures) {
  for (const Published& p : kChips) {
    const HwConfig hw = load(p.slice);
    const ChipParams& c = hw.chip;
    EXPECT_EQ(c.generation, p.generation) << p.slice;
    // The clocks are rounded (1500 / 1750 MHz): the peak agrees with the published (rounded) one to 0.5%.
    EXPECT_NEAR(chip_peak_tflop_per_s(c), p.tflop_per_s, 0.005 * p.tflop_per_s) << p.slice;
    EXPECT_EQ(c.hbm.size_gib, p.hbm_gib) << p.slice;
    EXPECT_EQ(c.hbm.bandwidth_gbyte_per_s, p.hbm_gbyte_per_s) << p.slice;
    EXPECT_EQ(c.cores, p.cores) << p.slice;
    EXPECT_EQ(c.core.mxu.rows, p.mxu_size) << p.slice;
    EXPECT_EQ(c.core.mxu.cols, p.mxu_size) << p.slice;
    EXPECT_EQ(c.ici.links, p.links) << p.slice;
    EXPECT_EQ(c.ici.bandwidth_gbyte_per_s_per_direction, p.ici_gbyte_per_s) << p.slice;
    EXPECT_FALSE(c.cmem.has_value()) << p.slice;   // none in public sources
    EXPECT_FALSE(c.power.has_value()) << p.slice;  // no published power: energy null (docs/energy.md)
    ASSERT_TRUE(c.cost.has_value()) << p.slice;
    EXPECT_EQ(c.cost->usd_per_chip_hour, p.usd_per_chip_hour) << p.slice;
    // The v3-calibrated launch time (1000 cycles at 940 MHz = 1.06 us) kept as a time at this clock.
    EXPECT_NEAR(c.core.sequencer.launch_cycles / c.core.clock_mhz, 1000.0 / 940.0, 0.01) << p.slice;
  }
}

TEST(GenerationsConfig, DevicesPerChip) {
  const HwConfig v5p = load("v5p-8");  // megacore, like v4
  EXPECT_TRUE(v5p.chip.megacore);
  EXPECT_EQ(v5p.chip.hbm.ownership, HbmOwnership::kShared);
  EXPECT_EQ(devices_per_chip(v5p.chip), 1u);
  EXPECT_EQ(cores_per_device(v5p.chip), 2u);
  for (const char* s : {"v5litepod-8", "v6e-8"}) {  // one core per chip: each chip one device with all the HBM
    const HwConfig hw = load(s);
    EXPECT_FALSE(hw.chip.megacore) << s;
    EXPECT_EQ(devices_per_chip(hw.chip), 1u) << s;
    EXPECT_EQ(cores_per_device(hw.chip), 1u) << s;
  }
}

TEST(GenerationsConfig, SliceShapes) {
  struct Shape {
    const char* slice;
    std::vector<uint32_t> dims;
    bool torus;
    uint32_t hosts, chips_per_host;
  };
  const Shape shapes[] = {
      {"v5litepod-1", {1, 1}, false, 1, 1},     {"v5litepod-4", {2, 2}, false, 1, 4},
      {"v5litepod-8", {2, 4}, false, 1, 8},     {"v5litepod-16", {4, 4}, false, 2, 8},
      {"v5litepod-256", {16, 16}, true, 32, 8}, {"v5p-8", {2, 2, 1}, false, 1, 4},
      {"v5p-16", {2, 2, 2}, false, 2, 4},       {"v5p-32", {2, 2, 4}, false, 4, 4},
      {"v5p-128", {4, 4, 4}, true, 16, 4},      {"v6e-1", {1, 1}, false, 1, 1},
      {"v6e-4", {2, 2}, false, 1, 4},           {"v6e-8", {2, 4}, false, 1, 8},
      {"v6e-256", {16, 16}, true, 32, 8},
  };
  for (const Shape& s : shapes) {
    const HwConfig hw = load(s.slice);
    EXPECT_EQ(hw.name, s.slice);
    EXPECT_EQ(hw.slice.topology.dims, s.dims) << s.slice;
    for (bool w : hw.slice.topology.wraparound) EXPECT_EQ(w, s.torus) << s.slice;
    EXPECT_EQ(hw.slice.hosts, s.hosts) << s.slice;
    EXPECT_EQ(hw.slice.chips_per_host, s.chips_per_host) << s.slice;
  }
}

TEST(GenerationsConfig, V5e8IsV5litepod8) {
  const HwConfig alias = load("v5e-8"), pod = load("v5litepod-8");
  EXPECT_EQ(alias.name, "v5e-8");
  HwConfig renamed = alias;
  renamed.name = pod.name;  // the name is the only difference
  EXPECT_EQ(dump_hw_config(renamed), dump_hw_config(pod));
  // And as a built-in name, served from the embedded files (the binary embeds configs/hw/**).
  std::map<std::string, std::string> embedded;
  for (const char* f : {"v5e-8.yaml", "v5litepod-8.yaml", "chips/tpu_v5e.yaml"}) {
    std::ifstream in(kHwDir + "/" + f);
    std::ostringstream ss;
    ss << in.rdbuf();
    embedded["configs/hw/" + std::string(f)] = ss.str();
  }
  std::string origin;
  const HwConfig builtin = load_builtin_hw("v5e-8", embedded, {}, &origin);
  EXPECT_EQ(origin, "(embedded) configs/hw/v5e-8.yaml");
  EXPECT_EQ(builtin.name, "v5e-8");
  EXPECT_EQ(builtin.chip.generation, "v5e");
  EXPECT_EQ(builtin.slice.chips(), 8u);

  // Loaded again (from the cache of built-in loads): the same config, unless the overrides differ.
  const std::vector<Override> faster = {{"chip.hbm.bandwidth_gbyte_per_s", "1000"}};
  const HwConfig changed = load_builtin_hw("v5e-8", embedded, faster, &origin);
  EXPECT_EQ(changed.chip.hbm.bandwidth_gbyte_per_s, 1000);
  EXPECT_EQ(dump_hw_config(load_builtin_hw("v5e-8", embedded, faster, &origin)), dump_hw_config(changed));
  EXPECT_EQ(dump_hw_config(load_builtin_hw("v5e-8", embedded, {}, &origin)), dump_hw_config(builtin));
  EXPECT_NE(builtin.chip.hbm.bandwidth_gbyte_per_s, 1000);
  // Another map with other contents under the same name is not served from the cache.
  std::string& text = embedded["configs/hw/v5e-8.yaml"];
  text.replace(text.find("name: v5e-8"), 11, "name: renamed");
  EXPECT_EQ(load_builtin_hw("v5e-8", embedded, {}, &origin).name, "renamed");
}

TEST(GenerationsConfig, GenerationIsChecked) {
  std::string what;
  const auto e = config_error_of([] { load_hw_config(kHwDir + "/v6e-8.yaml", {parse_override("chip.generation=v7")}); }, &what);
  EXPECT_EQ(e.yaml_path, "chip.generation");
  EXPECT_TRUE(contains(what, "v5e")) << what;  // the known generations are listed
}

}  // namespace
}  // namespace tpusim

namespace tpusim {
namespace {

// The source tree's configs/hw/ as the binary embeds it.
const std::map<std::string, std::string>& source_hw_files() {
  static const std::map<std::string, std::string> m = [] {
    std::map<std::string, std::string> files;
    const std::filesystem::path root(TPUSIM_SOURCE_DIR);
    for (const auto& e : std::filesystem::recursive_directory_iterator(root / kBuiltinHwDir))
      if (e.is_regular_file() && e.path().extension() == ".yaml") {
        std::ifstream f(e.path());
        std::stringstream ss;
        ss << f.rdbuf();
        files[std::filesystem::relative(e.path(), root).string()] = ss.str();
      }
    return files;
  }();
  return m;
}

// The rules reproduce every shipped slice file they name (topology, rings, hosts), so that the
// generated slices are the shipped ones' continuation.
TEST(SliceRules, AgreeWithEveryShippedSliceTheyName) {
  int checked = 0;
  for (const auto& [path, text] : source_hw_files()) {
    const std::string stem = std::filesystem::path(path).stem().string();
    if (path.find("/chips/") != std::string::npos) continue;
    const std::optional<RuleSlice> rule = slice_by_rule(stem);
    if (!rule) continue;
    const HwConfig hw = load(stem);
    EXPECT_EQ(std::vector<int64_t>(hw.slice.topology.dims.begin(), hw.slice.topology.dims.end()), rule->dims) << stem;
    EXPECT_EQ(std::vector<bool>(hw.slice.topology.wraparound.begin(), hw.slice.topology.wraparound.end()), rule->wraparound) << stem;
    EXPECT_EQ(int64_t(hw.slice.hosts), rule->hosts) << stem;
    EXPECT_EQ(int64_t(hw.slice.chips_per_host), rule->chips_per_host) << stem;
    ++checked;
  }
  EXPECT_GE(checked, 12);  // v5litepod-1/4/8/16/256, v6e-1/4/8/256, v5p-8/16/32/128
}

// Every listed rule name loads as a built-in, generated from its template; the Cloud shapes of a few;
// names no rule has are refused with the rules in the message.
TEST(SliceRules, EveryPublicSliceLoads) {
  for (const std::string& name : rule_slice_names()) {
    std::string origin;
    const HwConfig hw = load_hw_ref(name, "", source_hw_files(), {}, &origin, {"--hw", "", 0, "", "", ""});
    const RuleSlice r = *slice_by_rule(name);
    int64_t chips = 1;
    for (int64_t d : r.dims) chips *= d;
    EXPECT_EQ(int64_t(hw.slice.hosts * hw.slice.chips_per_host), std::max<int64_t>(chips, hw.slice.chips_per_host)) << name;
    EXPECT_EQ(hw.name, name) << origin;
  }
  auto dims = [](const char* n) { return slice_by_rule(n)->dims; };
  EXPECT_EQ(dims("v6e-64"), (std::vector<int64_t>{8, 8}));
  EXPECT_EQ(dims("v5p-384"), (std::vector<int64_t>{4, 4, 12}));
  EXPECT_EQ(dims("v5p-1152"), (std::vector<int64_t>{4, 12, 12}));
  EXPECT_EQ(dims("v5p-4096"), (std::vector<int64_t>{8, 16, 16}));
  EXPECT_EQ(dims("v5p-12288"), (std::vector<int64_t>{16, 16, 24}));
  std::string origin;
  load_hw_ref("v6e-16", "", source_hw_files(), {}, &origin, {"--hw", "", 0, "", "", ""});
  EXPECT_EQ(origin, "(generated) configs/hw/v6e-16.yaml");
  for (const char* bad : {"v6e-2", "v5p-12", "v5p-12296", "v5litepod-512", "v6e-016"}) {
    EXPECT_FALSE(slice_by_rule(bad)) << bad;
    std::string what;
    config_error_of([&] { load_hw_ref(bad, "", source_hw_files(), {}, &origin, {"--hw", "", 0, "", "", ""}); }, &what);
    EXPECT_TRUE(contains(what, "by rule")) << what;
  }
}

}  // namespace
}  // namespace tpusim
