// `tpusim compare`'s numbers (workloads/report/run_compare.h) on two known reports: differences against the
// first run, rows left out when every run has 0, kernels matched by their grouped name, a kernel run
// against a training run, and the table's width.
#include <gtest/gtest.h>

#include <sstream>

#include <nlohmann/json.hpp>

#include "workloads/report/run_compare.h"

namespace tpusim {
namespace {

using nlohmann::json;

json training(double total, double step, uint64_t compiles, double mfu, double layer0, double layer1, double extra) {
  json r = json::parse(R"({"workload": {"kind": "training", "name": "t"}, "summary": {}})");
  r["summary"]["total_time_s"] = total;
  r["summary"]["steady_step_time_s"] = step;
  r["summary"]["compiles"] = compiles;
  r["summary"]["mfu"] = mfu;
  r["summary"]["mxu_utilization"] = 0.5;
  r["summary"]["breakdown_s"] = {{"compile", 0.0}, {"host", total}};
  r["summary"]["memory"] = {{"gathered_parameter_bytes", 0}, {"parameter_bytes", 1ull << 30}};
  json ops = json::array({{{"name", "bert.encoder.layer.0.output.dense"}, {"time_s", layer0}},
                          {{"name", "bert.encoder.layer.1.output.dense"}, {"time_s", layer1}}});
  if (extra > 0) ops.push_back({{"name", "softmax"}, {"time_s", extra}});
  // The eval program runs less often: its profile is not the one compared.
  r["programs"] = json::array({{{"graph", "eval"}, {"executions", 1}, {"op_profile", {{{"name", "eval_only"}, {"time_s", 9.0}}}}},
                               {{"graph", "train"}, {"executions", 10}, {"op_profile", ops}}});
  return r;
}

const CompareRow* row(const RunComparison& c, const std::string& name) {
  for (const CompareRow& r : c.rows)
    if (r.name == name) return &r;
  return nullptr;
}

TEST(RunCompare, DifferencesAgainstTheFirstRun) {
  const RunComparison c = compare_reports(
      {"a", "b"}, {training(100, 0.2, 3, 0.25, 0.004, 0.006, 0), training(80, 0.25, 4, 0.2, 0.002, 0.002, 0.001)});
  const CompareRow* total = row(c, "total time");
  ASSERT_TRUE(total);
  EXPECT_DOUBLE_EQ(*total->diff(1), -20);
  EXPECT_DOUBLE_EQ(*total->rel_diff(1), -0.2);
  EXPECT_FALSE(total->diff(0).has_value() && *total->diff(0) != 0);
  EXPECT_DOUBLE_EQ(*row(c, "steady step time")->rel_diff(1), 0.25);
  EXPECT_DOUBLE_EQ(*row(c, "compiles")->diff(1), 1);
  EXPECT_NEAR(*row(c, "MFU")->diff(1), -0.05, 1e-12);
  // A figure that is 0 (or absent) in every run says nothing: no row.
  EXPECT_FALSE(row(c, "compile"));
  EXPECT_FALSE(row(c, "gathered parameters"));
  EXPECT_FALSE(row(c, "warm-up"));
  EXPECT_TRUE(row(c, "parameters"));
  // A layer's copies are one kernel row: 4 + 6 ms against 2 + 2 ms; a kernel of one run only has
  // no value (and no difference) in the other. The eval program's profile is not compared.
  const CompareRow* dense = row(c, "bert.encoder.layer.*.output.dense");
  ASSERT_TRUE(dense);
  EXPECT_DOUBLE_EQ(*dense->values[0], 0.010);
  EXPECT_DOUBLE_EQ(*dense->values[1], 0.004);
  EXPECT_DOUBLE_EQ(*dense->rel_diff(1), -0.6);
  const CompareRow* softmax = row(c, "softmax");
  ASSERT_TRUE(softmax);
  EXPECT_FALSE(softmax->values[0].has_value());
  EXPECT_FALSE(softmax->diff(1).has_value());
  EXPECT_FALSE(row(c, "eval_only"));
  EXPECT_TRUE(c.notes.empty());

  const json j = comparison_json(c);
  ASSERT_EQ(j["runs"].size(), 2u);
  bool found = false;
  for (const json& r : j["rows"])
    if (r["name"] == "total time") {
      found = true;
      EXPECT_EQ(r["values"], json::parse("[100.0, 80.0]"));
      EXPECT_TRUE(r["diff"][0].is_null());
      EXPECT_DOUBLE_EQ(r["diff"][1].get<double>(), -20);
      EXPECT_DOUBLE_EQ(r["rel_diff"][1].get<double>(), -0.2);
    }
  EXPECT_TRUE(found);
}

TEST(RunCompare, KernelAgainstTrainingComparesWhatTheyShare) {
  const json kernel = json::parse(R"J({"workload": {"kind": "kernel", "name": "k"},
      "summary": {"device_time_s": 4e-5, "mxu_utilization": 0.8},
      "op_profile": [{"name": "matmul", "time_s": 3.9e-5}, {"name": "(launch)", "time_s": 1e-6}]})J");
  const RunComparison c = compare_reports({"k", "t"}, {kernel, training(100, 0.2, 3, 0.25, 0.004, 0.006, 0)});
  ASSERT_EQ(c.notes.size(), 1u);
  EXPECT_NE(c.notes[0].find("share"), std::string::npos);
  EXPECT_FALSE(row(c, "device time"));
  EXPECT_FALSE(row(c, "total time"));
  const CompareRow* mxu = row(c, "MXU utilization");
  ASSERT_TRUE(mxu);
  EXPECT_NEAR(*mxu->diff(1), -0.3, 1e-12);
  EXPECT_TRUE(row(c, "matmul"));
  EXPECT_TRUE(row(c, "bert.encoder.layer.*.output.dense"));
  for (const CompareRow& r : c.rows) EXPECT_TRUE(r.section == "utilization" || r.section == "kernels") << r.name;
}

TEST(RunCompare, TableFitsOneHundredColumns) {
  const RunComparison c = compare_reports(
      {"a", "b", "c", "d"}, {training(100, 0.2, 3, 0.25, 0.004, 0.006, 0), training(80, 0.25, 4, 0.2, 0.002, 0.002, 0.001),
                             training(90, 0.2, 3, 0.25, 0.004, 0.006, 0), training(70, 0.2, 3, 0.25, 0.004, 0.006, 0)});
  const std::string t = format_comparison(c);
  std::istringstream in(t);
  size_t blocks = 0;
  for (std::string line; std::getline(in, line);) {
    EXPECT_LE(line.size(), 100u) << line;
    if (line.find("-A ") != std::string::npos) ++blocks;  // a block's header
  }
  EXPECT_EQ(blocks, 2u);  // B and C, then D in a second block
  EXPECT_NE(t.find("C-A"), std::string::npos);
  EXPECT_NE(t.find("D-A"), std::string::npos);
  EXPECT_NE(t.find("  total time (s)"), std::string::npos);
  EXPECT_NE(t.find("-20.0%"), std::string::npos);  // b against a
}

}  // namespace
}  // namespace tpusim
