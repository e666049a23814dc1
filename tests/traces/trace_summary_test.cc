// `tpusim trace summarize` on small constructed traces whose answers are worked out by hand
// (traces/trace_reader.h, traces/trace_summary.h).
#include "traces/trace_summary.h"

#include <map>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "traces/chrome_trace.h"
#include "traces/trace_error.h"
#include "traces/trace_reader.h"

namespace tpusim {
namespace {

using nlohmann::json;

struct Op {
  const char* process;
  const char* track;
  const char* name;
  uint64_t start_ns, dur_ns;
  int64_t step = -1;
  uint64_t bytes = 0;
};

// The trace tpusim itself would write for these operations (1 GHz: one cycle per ns).
TraceData trace_of(const std::vector<Op>& ops) {
  ChromeTraceSink sink;
  for (const Op& o : ops) sink.complete({o.process, o.track, o.name, o.start_ns, o.dur_ns, 1000, o.bytes, o.step});
  std::ostringstream os;
  sink.write(os);
  return parse_trace(os.str(), "test.json");
}

const LaneSummary& lane(const TraceData& t, const TraceSummary& s, const std::string& name) {
  for (const auto& l : s.lanes)
    if (t.lanes[l.lane].name == name) return l;
  throw std::runtime_error("no lane " + name);
}

const LaneIdle& idle(const TraceData& t, const TraceSummary& s, const std::string& name) {
  for (const auto& l : s.idle)
    if (t.lanes[l.lane].name == name) return l;
  throw std::runtime_error("no idle row " + name);
}

int64_t kind_ns(const CriticalPath& p, LaneKind k) { return p.by_kind_ns[size_t(k)]; }

TEST(TraceReader, LanesKindsAndOrder) {
  const TraceData t = trace_of({{"slice.chip0", "hbm.ch1", "x", 0, 1},
                                {"slice.chip0", "core0.vpu", "x", 0, 1},
                                {"slice.chip0", "core0.mxu0.weights", "x", 0, 1},
                                {"slice.chip0", "core0.dma0", "x", 0, 1},
                                {"host0", "compile", "x", 0, 1},
                                {"slice.chip0", "core0.xfer", "x", 0, 1},
                                {"slice.chip0", "core0.step", "x", 0, 1},
                                {"slice.chip0", "core0.sync", "x", 0, 1}});
  std::vector<std::string> names;
  for (const auto& l : t.lanes) names.push_back(l.name);
  // Processes in natural order ("host0" < "slice.chip0"), lanes as the trace writer orders them.
  EXPECT_EQ(names.front(), "host0.compile");
  EXPECT_EQ(names[1], "slice.chip0.core0.mxu0.weights");
  EXPECT_EQ(names[2], "slice.chip0.core0.vpu");
  EXPECT_EQ(names[3], "slice.chip0.core0.dma0");
  EXPECT_EQ(names.back(), "slice.chip0.hbm.ch1");
  const std::map<std::string, LaneKind> kinds = {
      {"compile", LaneKind::kHost},          {"core0.mxu0.weights", LaneKind::kMxu},
      {"core0.vpu", LaneKind::kVpu},         {"core0.dma0", LaneKind::kDmaHbm},
      {"core0.xfer", LaneKind::kIciTransfer}, {"core0.sync", LaneKind::kBarrier},
      {"core0.step", LaneKind::kDeviceStep}, {"hbm.ch1", LaneKind::kDmaHbm}};
  for (const auto& l : t.lanes) EXPECT_EQ(l.kind, kinds.at(l.track)) << l.track;
  EXPECT_FALSE(is_compute_lane(LaneKind::kMxu, "core0.mxu0.weights"));
  EXPECT_TRUE(is_compute_lane(LaneKind::kMxu, "core0.mxu0"));
}

TEST(TraceReader, ArrayFormatBeginEndPairsAndOtherPhases) {
  const char* text = R"([
    {"ph":"M","name":"thread_name","pid":1,"tid":2,"args":{"name":"core0.vpu"}},
    {"ph":"B","pid":1,"tid":2,"ts":1.0,"name":"a"},
    {"ph":"E","pid":1,"tid":2,"ts":3.5},
    {"ph":"i","pid":1,"tid":2,"ts":2.0,"name":"marker"},
    {"ph":"C","pid":1,"ts":2.0,"name":"counter","args":{"v":1}},
    {"ph":"E","pid":1,"tid":2,"ts":9.0}
  ])";
  const TraceData t = parse_trace(text, "array.json");
  ASSERT_EQ(t.ops.size(), 1u);
  EXPECT_EQ(t.ops[0].start_ns, 1000);
  EXPECT_EQ(t.ops[0].end_ns, 3500);
  EXPECT_EQ(t.lanes[0].process, "pid 1");  // no process_name: named by its pid
  EXPECT_EQ(t.lanes[0].track, "core0.vpu");
  EXPECT_EQ(t.ignored_events, 3u);  // instant, counter, E without B
}

TEST(TraceReader, NotATrace) {
  auto rule = [](const char* text) {
    try {
      parse_trace(text, "bad.json");
    } catch (const TraceError& e) {
      EXPECT_EQ(e.where(), "bad.json");
      return e.rule();
    }
    return std::string("(no error)");
  };
  EXPECT_NE(rule("not json at all").find("is not JSON"), std::string::npos);
  EXPECT_NE(rule(R"({"traceEvents": [{"ph": "X", "ts": 1}, {"ph)").find("is not JSON"), std::string::npos);  // cut
  EXPECT_NE(rule(R"({"tpusim": {}})").find("no traceEvents"), std::string::npos);
  EXPECT_NE(rule(R"({"traceEvents": [{"name": "x"}]})").find("event 0"), std::string::npos);
  EXPECT_NE(rule(R"({"traceEvents": [{"ph": "X", "ts": "soon"}]})").find("ts"), std::string::npos);
  EXPECT_NE(rule(R"({"traceEvents": [7]})").find("not an object"), std::string::npos);
  // otherData objects nested two deep are not mistaken for events.
  const TraceData t = parse_trace(R"({"otherData": {"bounds": {"lanes": "x"}}, "traceEvents": []})", "ok.json");
  EXPECT_EQ(t.other_data["bounds"]["lanes"], "x");
}

// Busy time is the union of a lane's operations: nesting and overlap count once.
TEST(TraceSummary, BusyTimeAndUtilization) {
  const TraceData t = trace_of({{"slice.chip0", "core0.vpu", "a", 0, 10000},
                                {"slice.chip0", "core0.vpu", "b", 2000, 3000},   // nested in a
                                {"slice.chip0", "core0.vpu", "c", 20000, 10000},
                                {"slice.chip0", "core0.dma0", "d", 5000, 20000, -1, 4096}});
  const TraceSummary s = summarize_trace(t, {});
  EXPECT_EQ(s.window.start, 0);
  EXPECT_EQ(s.window.end, 30000);
  const LaneSummary& vpu = lane(t, s, "slice.chip0.core0.vpu");
  EXPECT_EQ(vpu.ops, 3u);
  EXPECT_EQ(vpu.busy_ns, 20000);  // [0, 10) + [20, 30) µs
  EXPECT_DOUBLE_EQ(vpu.utilization, 20000.0 / 30000.0);
  EXPECT_EQ(lane(t, s, "slice.chip0.core0.dma0").bytes, 4096u);

  // A window clips busy time: [5, 25) µs holds 5 µs of a and 5 µs of c.
  SummaryOptions o;
  o.window = parse_time_window("5:25", "--window");
  const TraceSummary w = summarize_trace(t, o);
  EXPECT_EQ(w.window.length(), 20000);
  EXPECT_EQ(lane(t, w, "slice.chip0.core0.vpu").busy_ns, 10000);
  EXPECT_DOUBLE_EQ(lane(t, w, "slice.chip0.core0.vpu").utilization, 0.5);
}

TEST(TraceSummary, TopOperationsLongestFirstTiesByStart) {
  const TraceData t = trace_of({{"slice.chip0", "core0.vpu", "short", 0, 1000},
                                {"slice.chip0", "core0.vpu", "long", 1000, 9000},
                                {"slice.chip0", "core0.mxu0", "mid_late", 5000, 4000},
                                {"slice.chip0", "core0.mxu0", "mid_early", 0, 4000},
                                {"slice.chip0", "core0.dma0", "tiny", 0, 10}});
  SummaryOptions o;
  o.top = 3;
  const TraceSummary s = summarize_trace(t, o);
  ASSERT_EQ(s.top_ops.size(), 3u);
  EXPECT_EQ(t.names[t.ops[s.top_ops[0]].name], "long");
  EXPECT_EQ(t.names[t.ops[s.top_ops[1]].name], "mid_early");  // equal length: the earlier first
  EXPECT_EQ(t.names[t.ops[s.top_ops[2]].name], "mid_late");
}

// An MXU waits 20 µs between two matmuls while a DMA loads for 18 µs of it and the VPU works for
// 8 µs (inside the DMA's time): DMA/HBM takes priority, 2 µs had nothing else busy.
TEST(TraceSummary, GapAttributedToDma) {
  const TraceData t = trace_of({{"slice.chip0", "core0.mxu0", "mm1", 0, 10000},
                                {"slice.chip0", "core0.mxu0", "mm2", 30000, 10000},
                                {"slice.chip0", "core0.dma0", "load", 10000, 18000},
                                {"slice.chip0", "core0.vpu", "v", 12000, 8000},
                                {"slice.chip0", "core1.dma0", "other core", 0, 40000}});  // not a cause
  const TraceSummary s = summarize_trace(t, {});
  const LaneIdle& mxu = idle(t, s, "slice.chip0.core0.mxu0");
  EXPECT_EQ(mxu.measured_ns, 40000);
  EXPECT_EQ(mxu.idle_ns, 20000);
  EXPECT_EQ(mxu.by_cause_ns[size_t(GapCause::kDmaHbm)], 18000);
  EXPECT_EQ(mxu.by_cause_ns[size_t(GapCause::kCompute)], 0);  // the VPU's time is inside the DMA's
  EXPECT_EQ(mxu.by_cause_ns[size_t(GapCause::kNothing)], 2000);
  ASSERT_FALSE(s.gaps.empty());
  const IdleGap& g = s.gaps.front();  // the longest gap of any compute lane
  EXPECT_EQ(t.lanes[g.lane].name, "slice.chip0.core0.mxu0");
  EXPECT_EQ(g.start_ns, 10000);
  EXPECT_EQ(g.end_ns, 30000);
  EXPECT_EQ(g.cause, GapCause::kDmaHbm);
  // The VPU idles [0, 12) and [20, 40) µs: MXU work covers 10 + 10 µs, DMA 10 + 8 µs first.
  const LaneIdle& vpu = idle(t, s, "slice.chip0.core0.vpu");
  EXPECT_EQ(vpu.idle_ns, 32000);
  EXPECT_EQ(vpu.by_cause_ns[size_t(GapCause::kDmaHbm)], 10000);
  EXPECT_EQ(vpu.by_cause_ns[size_t(GapCause::kCompute)], 20000);
  EXPECT_EQ(vpu.by_cause_ns[size_t(GapCause::kNothing)], 2000);
}

// load -> matmul -> vector op is the chain; a concurrent short op on another lane is not on it.
TEST(TraceSummary, CriticalPathWalksBackThroughLatestEnding) {
  const TraceData t = trace_of({{"slice.chip0", "core0.dma0", "load", 0, 10000},
                                {"slice.chip0", "core0.dma1", "side load", 0, 4000},
                                {"slice.chip0", "core0.mxu0", "matmul", 10000, 20000},
                                {"slice.chip0", "core0.vpu", "epilogue", 32000, 5000}});
  const TraceSummary s = summarize_trace(t, {});
  ASSERT_EQ(s.paths.size(), 1u);
  const CriticalPath& p = s.paths[0];
  EXPECT_EQ(p.step, -1);
  EXPECT_EQ(p.ops, 3u);
  EXPECT_EQ(p.start_ns, 0);
  EXPECT_EQ(p.end_ns, 37000);
  EXPECT_EQ(kind_ns(p, LaneKind::kDmaHbm), 10000);
  EXPECT_EQ(kind_ns(p, LaneKind::kMxu), 20000);
  EXPECT_EQ(kind_ns(p, LaneKind::kVpu), 5000);
  EXPECT_EQ(p.wait_ns, 2000);  // 30 -> 32 µs
  int64_t sum = p.wait_ns;
  for (int64_t v : p.by_kind_ns) sum += v;
  EXPECT_EQ(sum, p.span_ns());
  ASSERT_EQ(p.runs.size(), 3u);
  EXPECT_EQ(t.names[p.runs[0].name], "load");
}

// A training step: tracing, compile, transfer on the host, then the step slice on two cores; unit
// detail covers only the step's first part (capped), so the rest of the step counts as device step.
TEST(TraceSummary, StepCriticalPathAndStepLaneGaps) {
  const TraceData t = trace_of({
      {"host0", "tracing", "step 0", 0, 100000, 0},
      {"host0", "compile", "train", 100000, 800000, 0},
      {"host0", "transfer", "program load", 900000, 50000, 0},
      {"slice.chip0", "core0.step", "train", 950000, 200000, 0},
      {"slice.chip0", "core1.step", "train", 950000, 200000, 0},
      {"slice.chip0", "core0.mxu0", "mm", 950000, 30000, 0},
      {"slice.chip0", "core0.vpu", "v", 980000, 20000, 0},
      // Step 1: traced on the host while step 0 runs, no compile, no unit detail.
      {"host0", "tracing", "step 1", 950000, 100000, 1},
      {"slice.chip0", "core0.step", "train", 1150000, 200000, 1},
      {"slice.chip0", "core1.step", "train", 1150000, 200000, 1},
  });
  EXPECT_TRUE(t.has_steps());
  const TraceSummary s = summarize_trace(t, {});
  ASSERT_EQ(s.paths.size(), 2u);
  const CriticalPath& p0 = s.paths[0];
  EXPECT_EQ(p0.step, 0);
  EXPECT_EQ(p0.program, "train");
  EXPECT_EQ(p0.unit_detail, "partial");
  EXPECT_EQ(p0.span_ns(), 1150000);
  EXPECT_EQ(kind_ns(p0, LaneKind::kHost), 950000);
  EXPECT_EQ(p0.host_ns.at("compile"), 800000);
  EXPECT_EQ(kind_ns(p0, LaneKind::kMxu), 30000);
  EXPECT_EQ(kind_ns(p0, LaneKind::kVpu), 20000);
  EXPECT_EQ(kind_ns(p0, LaneKind::kDeviceStep), 150000);  // 1000 -> 1150 µs, after the detail
  const CriticalPath& p1 = s.paths[1];
  EXPECT_EQ(p1.unit_detail, "none");
  EXPECT_EQ(kind_ns(p1, LaneKind::kDeviceStep), 200000);
  EXPECT_EQ(kind_ns(p1, LaneKind::kHost), 100000);
  EXPECT_EQ(p1.wait_ns, 100000);  // tracing ended at 1050 µs, step 0 held the device until 1150

  // The step lanes wait 950 µs before step 0, mostly for the compile; none before step 1.
  const LaneIdle& core0 = idle(t, s, "slice.chip0.core0.step");
  EXPECT_EQ(core0.idle_ns, 950000);
  EXPECT_EQ(core0.by_cause_ns[size_t(GapCause::kHostCompile)], 800000);
  EXPECT_EQ(core0.by_cause_ns[size_t(GapCause::kHostTracing)], 100000);
  EXPECT_EQ(core0.by_cause_ns[size_t(GapCause::kHostTransfer)], 50000);
  ASSERT_FALSE(s.gaps.empty());
  EXPECT_EQ(s.gaps[0].same_lanes, 2u);  // both cores' step lanes, one row
  EXPECT_EQ(s.gaps[0].cause, GapCause::kHostCompile);

  // --steps 1:2: only step 1, and the window is its span.
  SummaryOptions o;
  o.steps = parse_step_range("1:2", "--steps");
  const TraceSummary s1 = summarize_trace(t, o);
  ASSERT_EQ(s1.paths.size(), 1u);
  EXPECT_EQ(s1.paths[0].step, 1);
  EXPECT_EQ(s1.window.start, 950000);
  EXPECT_EQ(s1.window.end, 1350000);
}

TEST(TraceSummary, LaneFilterAndBadSelections) {
  const TraceData t = trace_of({{"host0", "compile", "c", 0, 1000, 0}, {"slice.chip0", "core0.vpu", "v", 0, 500, 0}});
  SummaryOptions o;
  o.lanes = parse_lane_patterns("host*", "--lanes");
  const TraceSummary s = summarize_trace(t, o);
  ASSERT_EQ(s.lanes.size(), 1u);
  EXPECT_EQ(t.lanes[s.lanes[0].lane].name, "host0.compile");

  auto where = [&t](const SummaryOptions& opts) {
    try {
      summarize_trace(t, opts);
    } catch (const TraceError& e) {
      return e.where();
    }
    return std::string("(no error)");
  };
  SummaryOptions nolane;
  nolane.lanes = parse_lane_patterns("core9.*", "--lanes");
  EXPECT_EQ(where(nolane), "--lanes");
  SummaryOptions outside;
  outside.window = parse_time_window("5ms:6ms", "--window");
  EXPECT_EQ(where(outside), "--window");
  SummaryOptions nostep;
  nostep.steps = parse_step_range("4:9", "--steps");
  EXPECT_EQ(where(nostep), "--steps");
  const TraceData kernel = trace_of({{"slice.chip0", "core0.vpu", "v", 0, 500}});
  try {
    summarize_trace(kernel, nostep);
    FAIL();
  } catch (const TraceError& e) {
    EXPECT_NE(e.rule().find("no steps"), std::string::npos);
  }
}

TEST(TraceSummary, EmptyTraceGivesEmptyTables) {
  const TraceData t = parse_trace(R"({"traceEvents": []})", "empty.json");
  const TraceSummary s = summarize_trace(t, {});
  EXPECT_TRUE(s.lanes.empty());
  EXPECT_TRUE(s.paths.empty());
  EXPECT_TRUE(s.gaps.empty());
  EXPECT_NE(format_trace_summary(t, s, {}).find("0 operations"), std::string::npos);
}

TEST(TraceSummary, JsonHasUnitsAndFiguresInMicroseconds) {
  const TraceData t = trace_of({{"slice.chip0", "core0.mxu0", "mm", 0, 2000}, {"slice.chip0", "core0.dma0", "ld", 2000, 1000}});
  const SummaryOptions o;
  const TraceSummary s = summarize_trace(t, o);
  const json j = trace_summary_json(t, s, o);
  EXPECT_DOUBLE_EQ(j["window_us"]["length"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(j["lanes"][0]["busy_us"].get<double>(), 2.0);
  EXPECT_EQ(j["lanes"][0]["kind"], "mxu");
  EXPECT_TRUE(j["units"].contains("*_us"));
  EXPECT_EQ(j["critical_paths"][0]["step"], nullptr);
  const std::string text = format_trace_summary(t, s, o);
  for (const char* needle : {"lanes: busy time", "critical path", "top 2 operations", "2.00 µs", "66.7%"})
    EXPECT_NE(text.find(needle), std::string::npos) << needle << "\n" << text;
}

}  // namespace
}  // namespace tpusim
