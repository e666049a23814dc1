// The report field catalogue (workloads/report/report_fields.h) against real reports of each kind:
// every catalogued field is in the report of its kinds, every number the builders write under
// `summary` is catalogued, and `units` says what the catalogue says. Then the catalogue's own rules:
// one unit per `units` key, one column name per kind.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "config/hw_loader.h"
#include "workloads/config/workload_config.h"
#include "workloads/loop/hlo_run.h"
#include "workloads/loop/kernel_run.h"
#include "workloads/loop/training_run.h"
#include "workloads/report/hlo_report.h"
#include "workloads/report/report.h"
#include "workloads/report/report_fields.h"
#include "workloads/report/training_report.h"

namespace tpusim {
namespace {

using nlohmann::json;

const std::string kRoot = std::string(TPUSIM_SOURCE_DIR) + "/configs/";

const HwConfig& v3_8() {
  static const HwConfig hw = load_hw_config(kRoot + "hw/v3-8.yaml");
  return hw;
}

// A real report of each kind; the training run sets the options whose fields appear only when set
// (logging_steps, auto_find_batch_size).
json report_of(ReportKind kind) {
  const HwConfig& hw = v3_8();
  if (kind == kKernelReport) {
    const WorkloadConfig w = load_workload_config(kRoot + "workloads/kernel_matmul_512.yaml");
    KernelRunOptions o;
    o.engine = "analytical";
    return make_report(hw, w, run_kernel(hw, w, o), RunContext{});
  }
  if (kind == kHloReport) {
    const WorkloadConfig w = load_workload_config(kRoot + "workloads/hlo_mlp_v3-8.yaml");
    return make_hlo_report(hw, w, run_hlo(hw, w), RunContext{});
  }
  const WorkloadConfig w = load_workload_config_text(
      "kind: training\nmodel: bert-tiny\ndataset: {train: 'fixed:40:320', eval: 'fixed:40:64'}\nmax_length: 64\n"
      "per_device_batch_size: 4\nlogging_steps: 2\nauto_find_batch_size: true\n",
      "tiny.yaml");
  TrainingRunOptions o;
  o.engine = "analytical";
  return make_training_report(hw, w, run_training(hw, w, o), RunContext{});
}

const json& report(ReportKind kind) {
  static std::map<ReportKind, json> reports;
  auto it = reports.find(kind);
  if (it == reports.end()) it = reports.emplace(kind, report_of(kind)).first;
  return it->second;
}

// Every leaf of `j` that is not null, by JSON pointer.
void leaves(const json& j, const std::string& at, std::vector<std::pair<std::string, const json*>>* out) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) leaves(v, at + "/" + k, out);
  } else if (!j.is_null()) {
    out->push_back({at, &j});
  }
}

// `pointer` against a catalogue path whose "*" segments match any key.
bool matches(const std::string& path, const std::string& pointer) {
  size_t a = 0, b = 0;
  while (a < path.size() && b < pointer.size()) {
    const size_t ae = std::min(path.find('/', a + 1), path.size());
    const size_t be = std::min(pointer.find('/', b + 1), pointer.size());
    const std::string seg = path.substr(a, ae - a);
    if (seg != "/*" && seg != pointer.substr(b, be - b)) return false;
    a = ae;
    b = be;
  }
  return a == path.size() && b == pointer.size();
}

class ReportFieldsOfKind : public ::testing::TestWithParam<ReportKind> {};

TEST_P(ReportFieldsOfKind, EveryFieldIsInTheReportAndEverySummaryFigureIsCatalogued) {
  const ReportKind kind = GetParam();
  const json& r = report(kind);
  ASSERT_EQ(r["workload"]["kind"], report_kind_name(kind));
  std::vector<std::pair<std::string, const json*>> summary;
  leaves(r["summary"], "/summary", &summary);
  ASSERT_FALSE(summary.empty());
  for (const ReportField& f : report_fields()) {
    if (!f.in(kind) || !*f.path) continue;
    bool found = false;
    for (const auto& [p, v] : summary) found = found || matches(f.path, p);
    EXPECT_TRUE(found) << f.path << " is catalogued for kind " << report_kind_name(kind) << " but not in its report";
  }
  for (const auto& [p, v] : summary) {
    const ReportField* field = nullptr;
    for (const ReportField& f : report_fields())
      if (f.in(kind) && *f.path && matches(f.path, p)) field = &f;
    ASSERT_TRUE(field) << p << " is in a " << report_kind_name(kind) << " report but not in the field catalogue";
    // A number has a unit; a string (summary.sharding) has none.
    EXPECT_EQ(v->is_number(), *field->unit != 0) << p;
  }
}

TEST_P(ReportFieldsOfKind, UnitsSayWhatTheCatalogueSays) {
  const ReportKind kind = GetParam();
  const json& units = report(kind)["units"];
  for (const ReportField& f : report_fields()) {
    if (!f.in(kind) || !*f.path || !*f.unit) continue;
    ASSERT_TRUE(units.contains(f.key_in_units())) << f.path;
    EXPECT_EQ(units[f.key_in_units()], f.unit_text()) << f.path;
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, ReportFieldsOfKind, ::testing::ValuesIn(kReportKinds),
                         [](const auto& info) { return std::string(report_kind_name(info.param)); });

TEST(ReportFields, OneUnitPerUnitsKeyAndOneColumnNamePerKind) {
  for (ReportKind k : kReportKinds) {
    std::map<std::string, std::string> unit_of;
    std::set<std::string> columns;
    for (const ReportField& f : report_fields()) {
      if (!f.in(k)) continue;
      EXPECT_TRUE(*f.path || *f.column) << "a derived field is a column: " << f.doc;
      if (*f.column) {
        EXPECT_TRUE(columns.insert(f.column).second) << f.column << " twice in " << report_kind_name(k);
      }
      if (!*f.path || !*f.unit) continue;
      auto [it, fresh] = unit_of.emplace(f.key_in_units(), f.unit_text());
      EXPECT_EQ(it->second, f.unit_text()) << f.key_in_units() << " of " << report_kind_name(k);
    }
  }
  // Energy and cost units are listed in a training and a kernel report alike (energy_report.h): a key
  // both kinds have must mean the same.
  std::map<std::string, std::string> energy;
  for (const ReportField& f : report_fields()) {
    if (std::string(f.path).rfind("/summary/energy/", 0) != 0 && std::string(f.path).rfind("/summary/cost/", 0) != 0)
      continue;
    auto [it, fresh] = energy.emplace(f.key_in_units(), f.unit_text());
    EXPECT_EQ(it->second, f.unit_text()) << f.key_in_units();
  }
}

TEST(ReportFields, MarkdownHasATablePerKind) {
  const std::string md = report_fields_markdown();
  for (const char* s : {"### `kind: training`", "### `kind: kernel`", "### `kind: hlo`",
                        "| `summary.steady_step_time_s` | s | median train step", "*derived*",
                        "| `summary.compiles` | count (busiest process) |", "time: total time"})
    EXPECT_NE(md.find(s), std::string::npos) << s;
}

}  // namespace
}  // namespace tpusim
