// The torch_xla-style metrics report (workloads/report/metrics_report.h): torch_xla's duration and byte
// representations, its percentile pick, the report's layout from known samples, and the compact
// samples report.json stores (metric_json).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "workloads/report/metrics_report.h"
#include "workloads/report/training_report.h"

namespace tpusim {
namespace {

using nlohmann::json;

TEST(MetricsReport, DurationsAsTorchXlaPrintsThem) {
  EXPECT_EQ(xla_duration(131.390), "02m11s390ms000.000us");
  EXPECT_EQ(xla_duration(0.431297123), "431ms297.123us");
  EXPECT_EQ(xla_duration(120e-9), "000.120us");
  EXPECT_EQ(xla_duration(0), "000.000us");
  EXPECT_EQ(xla_duration(1.000001), "01s000ms001.000us");  // zero parts after the first are kept
  EXPECT_EQ(xla_duration(86400 + 3600 + 61.5), "01d01h01m01s500ms000.000us");
  // Whole parts truncate: 1.9 ms is 001ms900us (torch_xla's precision-0 print would say 002ms900us).
  EXPECT_EQ(xla_duration(1.9e-3), "001ms900.000us");
}

TEST(MetricsReport, BytesInBinaryMultiples) {
  EXPECT_EQ(xla_bytes(512), "512.00B");
  EXPECT_EQ(xla_bytes(1024), "1.00KB");
  EXPECT_EQ(xla_bytes(1.08 * 1024 * 1024 * 1024), "1.08GB");
  EXPECT_EQ(xla_bytes(3.5 * 1024 * 1024), "3.50MB");
}

TEST(MetricsReport, PercentileIsTheSampleAtFloorOfPTimesN) {
  std::vector<std::pair<double, uint64_t>> s;
  for (int i = 1; i <= 100; ++i) s.emplace_back(i, 1);
  EXPECT_EQ(xla_percentile(s, 0.01), 2);  // index 1 of 100
  EXPECT_EQ(xla_percentile(s, 0.5), 51);
  EXPECT_EQ(xla_percentile(s, 0.99), 100);
  // Counts expand: 1, 1, 1, 5.
  const std::vector<std::pair<double, uint64_t>> c = {{1, 3}, {5, 1}};
  EXPECT_EQ(xla_percentile(c, 0.5), 1);
  EXPECT_EQ(xla_percentile(c, 0.8), 5);
  EXPECT_EQ(xla_percentile({}, 0.5), 0);
}

TEST(MetricsReport, SamplesStoredAsDistinctValuesWithCounts) {
  MetricSamples m;
  for (double v : {3.0, 1.0, 3.0, 2.0, 3.0}) m.add(v);
  const json j = metric_json(m);
  EXPECT_EQ(j["samples_s"], json::parse("[[1.0, 1], [2.0, 1], [3.0, 3]]"));
  EXPECT_EQ(j["count"], 5);
  EXPECT_DOUBLE_EQ(j["total_s"].get<double>(), 12.0);
  const json b = metric_json(m, "bytes");
  EXPECT_TRUE(b.contains("samples_bytes") && b.contains("total_bytes") && !b.contains("total_s"));
}

TEST(MetricsReport, LayoutOfATrainingReport) {
  // Two compiles (1.5 s, 2.5 s) whose steps start at 0 s and 10 s: ValueRate 4 s / 10 s, Rate 0.2/s.
  const json report = json::parse(R"({
    "workload": {"kind": "training"},
    "metrics": {
      "CompileTime": {"count": 2, "samples_s": [[1.5, 1], [2.5, 1]]},
      "InboundData": {"count": 3, "samples_bytes": [[1024, 2], [1048576, 1]]},
      "TransferFromDeviceTime": {"count": 0, "samples_s": []},
      "UncachedCompile": 2, "CachedCompile": 0, "aten::nonzero": 4
    },
    "steps": [{"compile": "compiled", "start_s": 0, "end_s": 1},
              {"compile": "cached", "start_s": 5, "end_s": 6},
              {"compile": "compiled", "start_s": 10, "end_s": 11}]
  })");
  EXPECT_EQ(torch_xla_metrics_report(report),
            "Counter: UncachedCompile\n"
            "  Value: 2\n"
            "Counter: aten::nonzero\n"
            "  Value: 4\n"
            "Metric: CompileTime\n"
            "  TotalSamples: 2\n"
            "  Accumulator: 04s000ms000.000us\n"
            "  ValueRate: 400ms000.000us / second\n"
            "  Rate: 0.2 / second\n"
            "  Percentiles: 1%=01s500ms000.000us; 5%=01s500ms000.000us; 10%=01s500ms000.000us; "
            "20%=01s500ms000.000us; 50%=02s500ms000.000us; 80%=02s500ms000.000us; 90%=02s500ms000.000us; "
            "95%=02s500ms000.000us; 99%=02s500ms000.000us\n"
            "Metric: InboundData\n"
            "  TotalSamples: 3\n"
            "  Accumulator: 1.00MB\n"
            "  Percentiles: 1%=1.00KB; 5%=1.00KB; 10%=1.00KB; 20%=1.00KB; 50%=1.00KB; 80%=1.00MB; 90%=1.00MB; "
            "95%=1.00MB; 99%=1.00MB\n");
}

TEST(MetricsReport, KernelRunIsOneExecution) {
  const json report = json::parse(R"({"workload": {"kind": "kernel"}, "summary": {"device_time_s": 4.2e-5}})");
  const std::string o = torch_xla_metrics_report(report);
  EXPECT_NE(o.find("Metric: ExecuteTime\n  TotalSamples: 1\n  Accumulator: 042.000us\n"), std::string::npos) << o;
}

}  // namespace
}  // namespace tpusim
