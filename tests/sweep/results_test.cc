// Result files: CSV quoting, rows projected from records, sorted rewrites, reading back (a cut-off last
// line is tolerated, a corrupt one is an error), and the error line of a child's stderr.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "sweep/columns.h"
#include "sweep/results.h"
#include "tests/config/test_util.h"

namespace tpusim::sweep {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() / ("tpusim_results_test_" + std::to_string(::getpid()) + "_" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string str() const { return path_.string(); }
  fs::path path() const { return path_; }

 private:
  fs::path path_;
};

ojson kernel_record(uint64_t point, double n, const std::string& status) {
  ojson r;
  r["point"] = point;
  r["axes"] = {{"n", n}, {"padding", "multiple_of:32"}};
  r["status"] = status;
  r["exit_code"] = status == "ok" ? 0 : 3;
  r["error"] = status == "ok" ? "" : "kernel 'x' cannot be tiled into VMEM (1048576 bytes), \"really\"";
  r["config_hash"] = "fnv1a64:0";
  r["key"] = "k" + std::to_string(point);
  r["wall_time_s"] = 0.25;
  if (status == "ok") {
    r["report"] = {{"summary", {{"device_cycles", 1000}, {"flops", 4096}, {"hbm_bytes", 1024}, {"mxu_utilization", 0.5}}}};
  } else {
    r["report"] = nullptr;
  }
  return r;
}

const std::vector<std::string> kColumns = {"point", "n", "padding", "status", "exit_code", "error", "device_cycles",
                                           "mxu_utilization", "flops_per_byte", "config_hash", "wall_time_s"};

TEST(Results, CsvQuotesOnlyWhatNeedsIt) {
  EXPECT_EQ(csv_line({"a", "b c", "d,e", "say \"hi\"", "two\nlines", ""}),
            "a,b c,\"d,e\",\"say \"\"hi\"\"\",\"two\nlines\",");
}

TEST(Results, RowsAreProjectionsOfRecords) {
  EXPECT_EQ(csv_line(csv_cells(kernel_record(3, 64, "ok"), kColumns)),
            "3,64,multiple_of:32,ok,0,,1000,0.5,4,fnv1a64:0,0.25");
  // A failed point: its figures are empty, its error quoted.
  EXPECT_EQ(csv_line(csv_cells(kernel_record(4, 128, "failed"), kColumns)),
            "4,128,multiple_of:32,failed,3,\"kernel 'x' cannot be tiled into VMEM (1048576 bytes), \"\"really\"\"\",,,,"
            "fnv1a64:0,0.25");
}

TEST(Results, ColumnsHaveUnitsAndFollowTheKind) {
  const auto training = csv_columns({"batch"}, "training");
  EXPECT_EQ(training.front(), "point");
  EXPECT_EQ(training[1], "batch");
  EXPECT_EQ(training.back(), "wall_time_s");
  for (const char* c : {"total_time_s", "steady_step_time_s", "examples_per_s", "compiles", "compile_time_s",
                        "peak_hbm_bytes", "mxu_utilization", "breakdown_allreduce_s"})
    EXPECT_NE(std::find(training.begin(), training.end(), c), training.end()) << c;
  EXPECT_EQ(std::find(training.begin(), training.end(), "device_cycles"), training.end());
  const auto kernel = csv_columns({}, "kernel");
  EXPECT_NE(std::find(kernel.begin(), kernel.end(), "device_cycles"), kernel.end());
  EXPECT_NE(std::find(kernel.begin(), kernel.end(), "flops_per_byte"), kernel.end());
}

TEST(Results, EnergyAndCostColumnsReadTheReport) {
  const auto training = csv_columns({}, "training");
  for (const char* c : {"energy_per_step_j", "energy_total_j", "average_power_w_per_chip", "examples_per_j", "usd_total"})
    EXPECT_NE(std::find(training.begin(), training.end(), c), training.end()) << c;
  const auto kernel = csv_columns({}, "kernel");
  for (const char* c : {"energy_total_j", "average_power_w_per_chip", "usd_total"})
    EXPECT_NE(std::find(kernel.begin(), kernel.end(), c), kernel.end()) << c;
  const ojson report = ojson::parse(R"({"summary": {"energy": {"per_step_j": 74.5, "examples_per_j": 0.43},
                                                    "cost": {"usd_total": 0.15}}})");
  const ojson bare = ojson::parse(R"({"summary": {"energy": null, "cost": null}})");
  for (const FigureColumn& c : figure_columns()) {
    if (c.kind != "training") continue;
    if (c.name == "energy_per_step_j") {
      EXPECT_EQ(figure_value(c, report), 74.5);
    }
    if (c.name == "examples_per_j") {
      EXPECT_EQ(figure_value(c, report), 0.43);
    }
    if (c.name == "usd_total") {
      EXPECT_EQ(figure_value(c, report), 0.15);
    }
    if (c.pointer.rfind("/summary/energy", 0) == 0 || c.pointer.rfind("/summary/cost", 0) == 0) {
      EXPECT_TRUE(figure_value(c, bare).is_null()) << c.name;
    }  // a chip without power / cost: empty cells
  }
}

TEST(Results, SortedRewriteAndReadBack) {
  TempDir dir;
  write_sorted(dir.str(), kColumns, {kernel_record(7, 1, "ok"), kernel_record(2, 2, "failed"), kernel_record(5, 3, "ok")});
  const std::string csv = slurp(dir.path() / kResultsCsv);
  EXPECT_EQ(csv.substr(0, csv.find('\n')), csv_line(kColumns));
  EXPECT_LT(csv.find("\n2,"), csv.find("\n5,"));
  EXPECT_LT(csv.find("\n5,"), csv.find("\n7,"));
  const auto back = read_records(dir.str());
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(record_point(back[0]), 2u);
  EXPECT_EQ(back[2], kernel_record(7, 1, "ok"));  // exactly what was written, key order included
}

TEST(Results, AppenderFlushesEachRecord) {
  TempDir dir;
  ResultsAppender a(dir.str(), kColumns, true);
  a.add(kernel_record(1, 1, "ok"));
  // Readable before the appender is closed: a killed sweep keeps every finished point.
  EXPECT_EQ(read_records(dir.str()).size(), 1u);
  EXPECT_NE(slurp(dir.path() / kResultsCsv).find("\n1,1,"), std::string::npos);
}

TEST(Results, ACutOffLastLineIsIgnoredACorruptOneIsAnError) {
  TempDir dir;
  write_sorted(dir.str(), kColumns, {kernel_record(1, 1, "ok"), kernel_record(2, 2, "ok")});
  std::string text = slurp(dir.path() / kResultsJsonl);
  std::ofstream(dir.path() / kResultsJsonl, std::ios::binary) << text << text.substr(0, 40);  // no newline
  EXPECT_EQ(read_records(dir.str()).size(), 2u);
  std::ofstream(dir.path() / kResultsJsonl, std::ios::binary) << "not json\n" << text;
  std::string what;
  const auto e = tpusim::testing::config_error_of([&] { read_records(dir.str()); }, &what);
  EXPECT_EQ(e.line, 1);
  EXPECT_TRUE(tpusim::testing::contains(what, "results.jsonl")) << what;
  EXPECT_TRUE(read_records((dir.path() / "nowhere").string()).empty());
}

TEST(Results, FirstErrorLineOfAChild) {
  EXPECT_EQ(first_error_line("warning: slow\nerror: --set: x: value '0' must be >= 1\nmore\n"),
            "--set: x: value '0' must be >= 1");
  EXPECT_EQ(first_error_line("internal error: boom\n"), "internal error: boom");
  EXPECT_EQ(first_error_line("\n  \nSegmentation fault\n"), "Segmentation fault");
  EXPECT_EQ(first_error_line(""), "");
}

TEST(Results, FlopsPerByteIsDerived) {
  const FigureColumn* f = nullptr;
  for (const auto& c : figure_columns())
    if (c.name == "flops_per_byte") f = &c;
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(figure_value(*f, kernel_record(1, 1, "ok")["report"]), 4.0);
  EXPECT_TRUE(figure_value(*f, ojson(nullptr)).is_null());
}

}  // namespace
}  // namespace tpusim::sweep
