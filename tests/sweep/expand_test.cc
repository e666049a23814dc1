// Expansion of a sweep into points: ranges, crossed and zipped axes, point ids, constraints, shards.
#include <gtest/gtest.h>

#include <set>

#include "sweep/expand.h"
#include "tests/sweep/sweep_test_util.h"

namespace tpusim::testing {
namespace {

using sweep::expand;
using sweep::SweepPoint;

std::vector<std::string> displays(const sweep::SweepConfig& c, size_t axis) {
  std::vector<std::string> out;
  for (const auto& v : sweep::axis_values(c, axis)) out.push_back(v.display);
  return out;
}

// "a=1 b=x" per point, for compact expectations.
std::vector<std::string> rows(const sweep::SweepConfig& c, const std::vector<SweepPoint>& pts) {
  std::vector<std::string> out;
  for (const auto& p : pts) {
    std::string s = std::to_string(p.id) + ":";
    for (size_t i = 0; i < c.axes.size(); ++i) s += " " + c.axes[i].name + "=" + p.values[i].display;
    out.push_back(s);
  }
  return out;
}

TEST(SweepExpand, ArithmeticRangeIncludesStopAndDoesNotAccumulateRoundingError) {
  auto c = sweep_text(kKernelBase + "axes:\n  - {path: a.x, range: {start: 64, stop: 256, step: 64}}\n"
                                    "  - {path: a.y, range: {start: 0.1, stop: 0.5, step: 0.1}}\n"
                                    "  - {path: a.z, range: {start: 1, stop: 10, step: 4}}\n");
  EXPECT_EQ(displays(c, 0), (std::vector<std::string>{"64", "128", "192", "256"}));
  EXPECT_EQ(displays(c, 1), (std::vector<std::string>{"0.1", "0.2", "0.3", "0.4", "0.5"}));
  EXPECT_EQ(displays(c, 2), (std::vector<std::string>{"1", "5", "9"}));  // 13 > stop
}

TEST(SweepExpand, GeometricRange) {
  auto c = sweep_text(kKernelBase + "axes:\n  - {path: a.x, range: {start: 32, stop: 512, mul: 2}}\n"
                                    "  - {path: a.y, range: {start: 1, stop: 100, mul: 10}}\n");
  EXPECT_EQ(displays(c, 0), (std::vector<std::string>{"32", "64", "128", "256", "512"}));
  EXPECT_EQ(displays(c, 1), (std::vector<std::string>{"1", "10", "100"}));
}

TEST(SweepExpand, CrossedAxesFirstSlowest) {
  auto c = sweep_text(kKernelBase + "axes:\n  - {path: a.x, values: [1, 2]}\n  - {path: a.y, values: [p, q, r]}\n");
  const auto e = expand(c);
  EXPECT_EQ(e.grid_points, 6u);
  EXPECT_EQ(rows(c, e.points), (std::vector<std::string>{"0: x=1 y=p", "1: x=1 y=q", "2: x=1 y=r", "3: x=2 y=p",
                                                         "4: x=2 y=q", "5: x=2 y=r"}));
}

TEST(SweepExpand, ZippedAxesVaryTogetherAndCrossTheRest) {
  // rows and cols zipped (one dimension of 3), crossed with count (2): 6 points, not 18.
  auto c = sweep_text(kKernelBase + R"(axes:
  - {path: chip.core.mxu.rows, values: [64, 128, 256], zip: square}
  - {path: chip.core.mxu.count, values: [1, 2]}
  - {path: chip.core.mxu.cols, values: [64, 128, 256], zip: square}
)");
  const auto e = expand(c);
  EXPECT_EQ(e.grid_points, 6u);
  EXPECT_EQ(rows(c, e.points),
            (std::vector<std::string>{"0: rows=64 count=1 cols=64", "1: rows=64 count=2 cols=64",
                                      "2: rows=128 count=1 cols=128", "3: rows=128 count=2 cols=128",
                                      "4: rows=256 count=1 cols=256", "5: rows=256 count=2 cols=256"}));
}

TEST(SweepExpand, ZipGroupsNeedEqualLengths) {
  auto c = sweep_text(kKernelBase + "axes:\n  - {path: a.x, values: [1, 2], zip: g}\n  - {path: a.y, values: [1], zip: g}\n");
  std::string what;
  const auto e = config_error_of([&] { expand(c); }, &what);
  EXPECT_EQ(e.yaml_path, "axes[1].values");
  EXPECT_EQ(e.line, 6);
  EXPECT_TRUE(contains(e.rule, "has 1 values but axis 'x' of the same zip group 'g' has 2")) << what;
}

TEST(SweepExpand, ConstraintsSkipPointsAndKeepIds) {
  auto c = sweep_text(kKernelBase + R"Y(axes:
  - {path: a.rows, values: [64, 128, 256]}
  - {path: a.padding, values: [max_length, longest]}
constraints:
  - "rows * 2 <= 256"
  - "not (rows == 128 and padding == 'longest')"
)Y");
  const auto e = expand(c);
  EXPECT_EQ(e.grid_points, 6u);
  EXPECT_EQ(rows(c, e.points),
            (std::vector<std::string>{"0: rows=64 padding=max_length", "1: rows=64 padding=longest",
                                      "2: rows=128 padding=max_length"}));
}

TEST(SweepExpand, LabelsAreWhatResultsAndConstraintsSee) {
  auto c = sweep_text(kKernelBase + R"(axes:
  - path: hw.slice.topology.wraparound
    values: [[false, false], [true, true]]
    labels: [mesh, torus]
constraints: ["wraparound == 'torus'"]
)");
  const auto e = expand(c);
  ASSERT_EQ(e.points.size(), 1u);
  EXPECT_EQ(e.points[0].id, 1u);
  EXPECT_EQ(e.points[0].values[0].display, "torus");
  EXPECT_EQ(e.points[0].values[0].set_value, "[true, true]");
}

TEST(SweepExpand, FileAxesResolveRelativeToTheSweepFile) {
  auto c = sweep_text(kKernelBase + "axes:\n  - {path: workload, values: [../workloads/kernel_matmul_512.yaml]}\n");
  const auto v = sweep::axis_values(c, 0);
  EXPECT_EQ(v[0].set_value, std::string(TPUSIM_SOURCE_DIR) + "/configs/workloads/kernel_matmul_512.yaml");
  EXPECT_EQ(v[0].display, "kernel_matmul_512");
}

TEST(SweepExpand, ConstraintErrorsPointAtTheConstraint) {
  auto c = sweep_text(kKernelBase + "axes:\n  - {path: a.rows, values: [64]}\nconstraints: [\"rowz > 1\"]\n");
  std::string what;
  auto e = config_error_of([&] { expand(c); }, &what);
  EXPECT_EQ(e.yaml_path, "constraints[0]");
  EXPECT_EQ(e.line, 6);
  EXPECT_EQ(e.value, "rowz > 1");
  EXPECT_TRUE(contains(what, "did you mean 'rows'")) << what;
  EXPECT_TRUE(contains(what, "column 1")) << what;
  c = sweep_text(kKernelBase + "axes:\n  - {path: a.p, values: [longest]}\nconstraints: [\"p < 3\"]\n");
  e = config_error_of([&] { expand(c); }, &what);
  EXPECT_TRUE(contains(what, "cannot order 'longest' and 3")) << what;
  EXPECT_TRUE(contains(what, "at the point p=longest")) << what;
}

TEST(SweepExpand, RefusesHugeGrids) {
  auto c = sweep_text(kKernelBase + "axes:\n  - {path: a.x, range: {start: 1, stop: 2000, step: 1}}\n"
                                    "  - {path: a.y, range: {start: 1, stop: 2000, step: 1}}\n");
  std::string what;
  const auto e = config_error_of([&] { expand(c); }, &what);
  EXPECT_EQ(e.yaml_path, "axes");
  EXPECT_TRUE(contains(e.rule, "more than 1000000 points")) << what;
}

TEST(SweepExpand, ShardsPartitionThePointsRoundRobin) {
  auto c = sweep_text(kKernelBase + "axes:\n  - {path: a.x, range: {start: 1, stop: 10, step: 1}}\n"
                                    "constraints: [\"x % 3 != 0\"]\n");
  const auto pts = expand(c).points;  // ids 0 1 3 4 6 7 9 (x = id + 1)
  ASSERT_EQ(pts.size(), 7u);
  std::multiset<uint64_t> all;
  for (uint64_t i = 0; i < 3; ++i) {
    const auto s = sweep::shard(pts, i, 3);
    EXPECT_GE(s.size(), 2u);  // balanced although the constraint left gaps in the ids
    for (const auto& p : s) all.insert(p.id);
  }
  std::multiset<uint64_t> want;
  for (const auto& p : pts) want.insert(p.id);
  EXPECT_EQ(all, want);  // every point in exactly one shard
  EXPECT_EQ(sweep::shard(pts, 0, 1).size(), pts.size());
}

}  // namespace
}  // namespace tpusim::testing
