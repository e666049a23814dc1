// Sweep file schema: good files parse with their derived defaults; bad ones fail with the file,
// line, YAML path, value, rule and suggestion.
#include <gtest/gtest.h>

#include "sweep/sweep_config.h"
#include "tests/sweep/sweep_test_util.h"

namespace tpusim::testing {
namespace {

using sweep::SweepConfig;

TEST(SweepConfig, ParsesAxesRangesPlotsAndDefaults) {
  const SweepConfig c = sweep_text(kKernelBase + R"(axes:
  - path: workload.shape.n
    range: {start: 64, stop: 256, mul: 2}
  - path: hw.slice.topology.wraparound
    values: [[false, false], [true, true]]
    labels: [mesh, torus]
    zip: topo
constraints: ["n > 64"]
plots:
  - name: roof
    kind: roofline
  - name: breakdown
    kind: stacked_bar
    x: [n]
)");
  EXPECT_EQ(c.name, "test");  // the file stem
  ASSERT_EQ(c.axes.size(), 2u);
  EXPECT_EQ(c.axes[0].name, "n");  // the last key of the path
  ASSERT_TRUE(c.axes[0].range.has_value());
  EXPECT_EQ(c.axes[0].range->mul, 2);
  EXPECT_FALSE(c.axes[1].range.has_value());
  EXPECT_EQ(c.axes[1].name, "wraparound");
  ASSERT_EQ(c.axes[1].values.size(), 2u);
  EXPECT_EQ(c.axes[1].values[1].text, "[true, true]");  // a list value, kept as --set VALUE text
  EXPECT_EQ(c.axes[1].zip, "topo");
  EXPECT_EQ(c.plots[0].x, std::vector<std::string>{"flops_per_byte"});
  EXPECT_EQ(c.plots[0].y, std::vector<std::string>{"achieved_tflop_per_s"});
  EXPECT_EQ(c.plots[1].y.front(), "breakdown_compile_s");  // the training breakdown by default
  EXPECT_EQ(c.plots[1].kind, "stacked_bar");
  EXPECT_EQ(c.timeout_s, 0);
}

TEST(SweepConfig, QuotesScalarsThatYamlWouldMisread) {
  const SweepConfig c = sweep_text(kKernelBase + "axes:\n  - path: workload.padding\n    values: [max_length, 'multiple_of:32']\n");
  EXPECT_EQ(c.axes[0].values[0].text, "max_length");
  EXPECT_EQ(c.axes[0].values[1].text, "\"multiple_of:32\"");  // reads back as the same scalar
  EXPECT_EQ(c.axes[0].values[1].display(), "multiple_of:32");
}

struct BadCase {
  const char* name;
  std::string yaml;
  int line;
  std::string yaml_path, value, rule_part, suggestion_part;
};

class SweepConfigErrors : public ::testing::TestWithParam<BadCase> {};

TEST_P(SweepConfigErrors, NamesFileLinePathValueRuleAndSuggestion) {
  const BadCase& b = GetParam();
  std::string what;
  const ConfigErrorInfo e = config_error_of([&] { sweep_text(b.yaml); }, &what);
  EXPECT_EQ(e.file, kTestSweepFile) << what;
  EXPECT_EQ(e.line, b.line) << what;
  EXPECT_EQ(e.yaml_path, b.yaml_path) << what;
  EXPECT_EQ(e.value, b.value) << what;
  EXPECT_TRUE(contains(e.rule, b.rule_part)) << what;
  EXPECT_TRUE(contains(e.suggestion, b.suggestion_part)) << what;
}

const std::string kAxis = "axes:\n  - path: chip.core.mxu.rows\n    values: [64, 128]\n";

INSTANTIATE_TEST_SUITE_P(
    Cases, SweepConfigErrors,
    ::testing::Values(
        BadCase{"unknown_top_key", kKernelBase + "axis:\n  - path: x\n", 4, "axis", "", "unknown key", "did you mean 'axes'"},
        BadCase{"missing_axes", kKernelBase, 1, "axes", "", "missing required", ""},
        BadCase{"empty_axes", kKernelBase + "axes: []\n", 4, "axes", "[]", "list of 1 to 64", ""},
        BadCase{"axes_as_map", kKernelBase + "axes:\n  path: x\n", 4, "axes", "{path: x}", "list of", "- "},
        BadCase{"unknown_axis_key", kKernelBase + "axes:\n  - path: x\n    valuse: [1]\n", 6, "axes[0].valuse", "",
                "unknown key in 'axes[0]'", "did you mean 'values'"},
        BadCase{"values_and_range", kKernelBase + kAxis + "    range: {start: 1, stop: 2, step: 1}\n", 7,
                "axes[0].range", "", "exactly one of values", "e.g."},
        BadCase{"neither", kKernelBase + "axes:\n  - path: chip.core.mxu.rows\n", 5, "axes[0].values", "",
                "exactly one of values", ""},
        BadCase{"range_without_step", kKernelBase + "axes:\n  - path: a.b\n    range: {start: 1, stop: 4}\n", 6,
                "axes[0].range.step", "", "exactly one of step", "mul: 2"},
        BadCase{"range_shrinks", kKernelBase + "axes:\n  - path: a.b\n    range: {start: 8, stop: 64, mul: 0.5}\n", 6,
                "axes[0].range.mul", "0.5", "must be > 1", ""},
        BadCase{"range_backwards", kKernelBase + "axes:\n  - path: a.b\n    range: {start: 8, stop: 4, step: 1}\n", 6,
                "axes[0].range.stop", "4", "must be >= start", ""},
        BadCase{"labels_count", kKernelBase + kAxis + "    labels: [a]\n", 7, "axes[0].labels", "[a]", "one label per value", ""},
        BadCase{"bad_name", kKernelBase + kAxis + "    name: mxu size\n", 7, "axes[0].name", "mxu size", "letters, digits", ""},
        BadCase{"name_is_column", kKernelBase + "axes:\n  - path: a.status\n    values: [1]\n", 5, "axes[0].path", "a.status",
                "clash with the results column", "name: status_axis"},
        BadCase{"duplicate_names", kKernelBase + kAxis + "  - path: shape.m\n    name: rows\n    values: [1]\n", 8,
                "axes[1].name", "rows", "two axes are named 'rows'", "set name:"},
        BadCase{"timeout_with_unit", kKernelBase + "timeout_s: 5s\n" + kAxis, 4, "timeout_s", "5s", "number >= 0",
                "unit is part of the key name"},
        BadCase{"plot_kind", kKernelBase + kAxis + "plots:\n  - name: p\n    kind: lines\n    x: [rows]\n    y: [flops]\n", 9,
                "plots[0].kind", "lines", "must be one of", "did you mean 'line'"},
        BadCase{"plot_needs_y", kKernelBase + kAxis + "plots:\n  - name: p\n    x: [rows]\n", 8, "plots[0].y", "", "needs y", ""},
        BadCase{"plot_column", kKernelBase + kAxis + "plots:\n  - name: p\n    x: [rowz]\n    y: [flops]\n", 9,
                "plots[0].x[0]", "rowz", "not an axis name or a results column", "did you mean 'rows'"},
        BadCase{"plot_file_name", kKernelBase + kAxis + "plots:\n  - name: a/b\n    x: [rows]\n    y: [flops]\n", 8,
                "plots[0].name", "a/b", "file stem", ""}),
    [](const ::testing::TestParamInfo<BadCase>& i) { return std::string(i.param.name); });

TEST(SweepConfig, MarkdownDocumentsEveryKeyAndColumn) {
  const std::string md = sweep::sweep_schema_markdown();
  for (const char* needle : {"`axes[]` — Axis", "`axes[].range` — Axis range", "`plots[]` — Plot", "| `zip` |",
                             "| `timeout_s` | number | s |", "| `steady_step_time_s` | training | s |",
                             "| `flops_per_byte` | kernel | flop/byte | *derived* |"})
    EXPECT_TRUE(contains(md, needle)) << needle << "\n" << md;
}

TEST(SweepConfig, DumpWritesListsOfSections) {
  const SweepConfig c = sweep_text(kKernelBase + kAxis);
  const std::string y = sweep::sweep_schema().dump(c);
  EXPECT_TRUE(contains(y, "axes:")) << y;
  EXPECT_TRUE(contains(y, "  - path: chip.core.mxu.rows")) << y;
  EXPECT_TRUE(contains(y, "    values: [64, 128]")) << y;
  EXPECT_TRUE(contains(y, "plots: []")) << y;
  // The dump is YAML that loads back to an equal config.
  const SweepConfig again = sweep::load_sweep_config_text(y, kTestSweepFile);
  EXPECT_TRUE(sweep::sweep_schema().equal(c, again)) << y;
}

}  // namespace
}  // namespace tpusim::testing
