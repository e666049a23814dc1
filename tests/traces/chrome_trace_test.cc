// Unit tests of the Chrome trace-event sink (traces/chrome_trace.h).
#include "traces/chrome_trace.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace tpusim {
namespace {

using nlohmann::json;

TraceEvent ev(std::string_view process, std::string_view track, std::string_view name, uint64_t start,
              uint64_t dur, double mhz = 1000, uint64_t bytes = 0) {
  TraceEvent e;
  e.process = process;
  e.track = track;
  e.name = name;
  e.start_cycle = start;
  e.dur_cycles = dur;
  e.clock_mhz = mhz;
  e.bytes = bytes;
  return e;
}

json written(const ChromeTraceSink& s) {
  std::ostringstream os;
  s.write(os);
  return json::parse(os.str());
}

std::string text(const ChromeTraceSink& s) {
  std::ostringstream os;
  s.write(os);
  return os.str();
}

// tid -> thread name for one pid, from the metadata events.
std::map<int, std::string> thread_names(const json& j, int pid) {
  std::map<int, std::string> m;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name" && e["pid"] == pid) m[e["tid"]] = e["args"]["name"];
  }
  return m;
}

TEST(ChromeTrace, EmptyTraceIsValidJson) {
  ChromeTraceSink s;
  json j = written(s);
  ASSERT_TRUE(j.contains("traceEvents"));
  EXPECT_TRUE(j["traceEvents"].empty());
}

TEST(ChromeTrace, CompleteEventInMicrosecondsWithRawCyclesInArgs) {
  ChromeTraceSink s;
  // 940 MHz: 1880 cycles = 2 µs; start 940 cycles = 1 µs.
  s.complete(ev("slice.chip0", "core0.dma", "fusion.1", 940, 1880, 940, 4096));
  json j = written(s);
  const json* x = nullptr;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "X") x = &e;
  ASSERT_NE(x, nullptr);
  EXPECT_EQ((*x)["name"], "fusion.1");
  EXPECT_DOUBLE_EQ((*x)["ts"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ((*x)["dur"].get<double>(), 2.0);
  EXPECT_EQ((*x)["args"]["start_cycle"], 940);
  EXPECT_EQ((*x)["args"]["dur_cycles"], 1880);
  EXPECT_EQ((*x)["args"]["bytes"], 4096);
  EXPECT_DOUBLE_EQ((*x)["args"]["clock_mhz"].get<double>(), 940);
}

TEST(ChromeTrace, BytesOmittedWhenZero) {
  ChromeTraceSink s;
  s.complete(ev("slice.chip0", "core0.vpu", "add", 0, 10));
  const json j = written(s);  // a named value: a range-for over a temporary's member would dangle
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "X") {
      EXPECT_FALSE(e["args"].contains("bytes"));
    }
  }
}

TEST(ChromeTrace, MicrosecondFormatting) {
  EXPECT_EQ(ChromeTraceSink::ns_as_us(0), "0.000");
  EXPECT_EQ(ChromeTraceSink::ns_as_us(1234), "1.234");
  EXPECT_EQ(ChromeTraceSink::ns_as_us(5), "0.005");
  EXPECT_EQ(ChromeTraceSink::ns_as_us(1000000), "1000.000");
  // 1 cycle at 940 MHz = 1.0638 ns -> 1 ns; 3 cycles = 3.19 ns -> 3 ns.
  EXPECT_EQ(ChromeTraceSink::to_ns(1, 940), 1);
  EXPECT_EQ(ChromeTraceSink::to_ns(3, 940), 3);
  EXPECT_EQ(ChromeTraceSink::to_ns(940, 940), 1000);
}

TEST(ChromeTrace, AbuttingEventsNeverOverlapAfterRounding) {
  // At 940 MHz cycle boundaries fall between nanoseconds; rounding both ends keeps each event's end
  // equal to the next one's start.
  ChromeTraceSink s;
  uint64_t t = 0;
  for (uint64_t d = 1; d < 200; d += 7) {
    s.complete(ev("slice.chip0", "core0.mxu0", "m", t, d, 940));
    t += d;
  }
  json j = written(s);
  double prev_end = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "X") continue;
    // Compare in integer nanoseconds to avoid floating-point noise of the parse.
    long ts = std::lround(e["ts"].get<double>() * 1000), dur = std::lround(e["dur"].get<double>() * 1000);
    EXPECT_EQ(ts, std::lround(prev_end));
    EXPECT_GE(dur, 0);
    prev_end = double(ts + dur);
  }
}

TEST(ChromeTrace, LaneOrderMxuVpuDmaThenHbm) {
  ChromeTraceSink s;
  // Reported in a scrambled order on purpose.
  for (auto track : {"hbm.ch10", "core1.vpu", "core0.dma", "hbm.ch2", "core0.vpu", "core0.mxu1", "core1.mxu0",
                     "core0.mxu0", "hbm.ch0", "core0.dma1"}) {
    s.complete(ev("slice.chip0", track, "x", 0, 1));
  }
  json j = written(s);
  auto names = thread_names(j, 1);
  std::vector<std::string> order;
  for (const auto& [tid, name] : names) order.push_back(name);
  EXPECT_EQ(order, (std::vector<std::string>{"core0.mxu0", "core0.mxu1", "core0.vpu", "core0.dma", "core0.dma1",
                                             "core1.mxu0", "core1.vpu", "hbm.ch0", "hbm.ch2", "hbm.ch10"}));
  // The sort index metadata repeats the order.
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_sort_index") {
      EXPECT_EQ(e["args"]["sort_index"], e["tid"]);
    }
  }
}

TEST(ChromeTrace, ProcessesInNaturalOrderWithNames) {
  ChromeTraceSink s;
  for (auto p : {"slice.chip10", "slice.chip2", "host0", "slice.chip0"}) s.complete(ev(p, "core0.vpu", "x", 0, 1));
  json j = written(s);
  std::map<int, std::string> procs;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "process_name") procs[e["pid"]] = e["args"]["name"];
  EXPECT_EQ(procs, (std::map<int, std::string>{
                       {1, "host0"}, {2, "slice.chip0"}, {3, "slice.chip2"}, {4, "slice.chip10"}}));
}

TEST(ChromeTrace, OutputDoesNotDependOnArrivalOrderAcrossLanes) {
  ChromeTraceSink a, b;
  std::vector<TraceEvent> evs = {ev("slice.chip0", "core0.mxu0", "m1", 0, 10),
                                 ev("slice.chip0", "core0.vpu", "v1", 5, 10),
                                 ev("slice.chip0", "hbm.ch3", "d1", 0, 3, 940, 64),
                                 ev("slice.chip0", "core0.mxu0", "m2", 10, 10)};
  for (const auto& e : evs) a.complete(e);
  for (auto it = evs.rbegin(); it != evs.rend(); ++it) b.complete(*it);
  EXPECT_EQ(text(a), text(b));
  EXPECT_EQ(a.events(), 4u);
}

TEST(ChromeTrace, NamesAreEscaped) {
  ChromeTraceSink s;
  s.complete(ev("slice.chip0", "core0.vpu", "quote\" back\\slash\nnewline", 0, 1));
  s.complete(ev("slice.chip0", "core0.vpu", "", 1, 1));
  json j = written(s);  // parses: escaping is right
  std::vector<std::string> names;
  for (const auto& e : j["traceEvents"])
    if (e["ph"] == "X") names.push_back(e["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"quote\" back\\slash\nnewline", "(unnamed)"}));
}

TEST(ChromeTrace, NonPositiveClockIsRejected) {
  ChromeTraceSink s;
  EXPECT_THROW(s.complete(ev("p", "t", "n", 0, 1, 0)), std::invalid_argument);
}

TEST(ChromeTrace, TrackSortKey) {
  using K = std::vector<int64_t>;
  EXPECT_LT(ChromeTraceSink::track_sort_key("core0.mxu1"), ChromeTraceSink::track_sort_key("core0.vpu"));
  EXPECT_LT(ChromeTraceSink::track_sort_key("core0.vpu"), ChromeTraceSink::track_sort_key("core0.dma0"));
  EXPECT_LT(ChromeTraceSink::track_sort_key("core1.dma"), ChromeTraceSink::track_sort_key("hbm.ch0"));
  EXPECT_LT(ChromeTraceSink::track_sort_key("hbm.ch9"), ChromeTraceSink::track_sort_key("hbm.ch10"));
  EXPECT_EQ(ChromeTraceSink::track_sort_key("core2.mxu3")[0], 2);
  EXPECT_NE(ChromeTraceSink::track_sort_key("ici.link0"), K{});
}

TEST(ChromeTrace, FileSinkWritesAndReportsUnwritablePath) {
  auto dir = std::filesystem::temp_directory_path() / "tpusim_chrome_trace_test";
  std::filesystem::create_directories(dir);
  ChromeTraceFile f((dir / "trace.json").string());
  f.complete(ev("slice.chip0", "core0.mxu0", "m", 0, 1));
  f.close();
  std::ifstream in(dir / "trace.json");
  json j = json::parse(in);
  EXPECT_EQ(j["traceEvents"].size(), 5u);  // process name + sort index, thread name + sort index, 1 event
  std::filesystem::remove_all(dir);

  ChromeTraceFile bad("/nonexistent-dir/trace.json");
  EXPECT_THROW(bad.close(), std::runtime_error);
}

}  // namespace
}  // namespace tpusim
