// Lane patterns, time windows and step ranges (traces/trace_filter.h); gzip I/O (traces/gzip_io.h).
#include "traces/trace_filter.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "traces/chrome_trace.h"
#include "traces/gzip_io.h"
#include "traces/trace_error.h"
#include "traces/trace_reader.h"

namespace tpusim {
namespace {

TEST(Glob, StarQuestionAndDots) {
  EXPECT_TRUE(glob_match("core0.*", "core0.mxu0"));
  EXPECT_TRUE(glob_match("core0.*", "core0.mxu0.weights"));  // * crosses dots
  EXPECT_FALSE(glob_match("core0.*", "core1.mxu0"));
  EXPECT_FALSE(glob_match("core0.*", "core0"));
  EXPECT_TRUE(glob_match("host*", "host0"));
  EXPECT_TRUE(glob_match("*.step", "core3.step"));
  EXPECT_TRUE(glob_match("core?.vpu", "core7.vpu"));
  EXPECT_FALSE(glob_match("core?.vpu", "core10.vpu"));
  EXPECT_TRUE(glob_match("*", ""));
  EXPECT_TRUE(glob_match("a*b*c", "aXXbYYbc"));
  EXPECT_FALSE(glob_match("a*b*c", "aXXbYYb"));
  EXPECT_TRUE(glob_match("hbm.ch1", "hbm.ch1"));
  EXPECT_FALSE(glob_match("hbm.ch1", "hbm.ch10"));  // whole-string match
}

TEST(LanePatterns, MatchTrackProcessOrBoth) {
  const LanePatterns p = parse_lane_patterns("core0.*, host*", "--lanes");
  ASSERT_EQ(p.globs.size(), 2u);
  EXPECT_TRUE(p.matches("slice.chip3", "core0.vpu"));  // the track
  EXPECT_TRUE(p.matches("host0", "compile"));          // the process
  EXPECT_FALSE(p.matches("slice.chip0", "core1.vpu"));
  EXPECT_FALSE(p.matches("slice.chip0", "hbm.ch0"));
  const LanePatterns full = parse_lane_patterns("slice.chip1.*", "--lanes");
  EXPECT_TRUE(full.matches("slice.chip1", "hbm.ch0"));  // process.track
  EXPECT_FALSE(full.matches("slice.chip0", "hbm.ch0"));
  EXPECT_EQ(p.text(), "core0.*,host*");
  EXPECT_TRUE(LanePatterns{}.matches("anything", "at.all"));
}

TEST(LanePatterns, EmptyEntryIsAnError) {
  EXPECT_THROW(parse_lane_patterns("a,,b", "--lanes"), TraceError);
  EXPECT_THROW(parse_lane_patterns("", "--lanes"), TraceError);
  try {
    parse_lane_patterns("core0.*,", "--trace-lanes");
  } catch (const TraceError& e) {
    EXPECT_EQ(e.where(), "--trace-lanes");
    EXPECT_EQ(e.value(), "core0.*,");
    EXPECT_NE(e.suggestion().find("core0.*,host*"), std::string::npos);
  }
}

TEST(TimeWindow, UnitsAndOpenEnds) {
  TimeWindow w = parse_time_window("100:250", "--window");
  EXPECT_EQ(w.from_ns, 100000);
  EXPECT_EQ(w.to_ns, 250000);
  w = parse_time_window("18s:18.5s", "--window");
  EXPECT_EQ(w.from_ns, 18000000000);
  EXPECT_EQ(w.to_ns, 18500000000);
  w = parse_time_window(":2ms", "--window");
  EXPECT_EQ(w.from_ns, 0);
  EXPECT_EQ(w.to_ns, 2000000);
  w = parse_time_window("1.5us:", "--window");
  EXPECT_EQ(w.from_ns, 1500);
  EXPECT_EQ(w.to_ns, TimeWindow::kOpen);
  w = parse_time_window("10ns:20 µs", "--window");
  EXPECT_EQ(w.from_ns, 10);
  EXPECT_EQ(w.to_ns, 20000);
  EXPECT_EQ(parse_time_window("1:2.5", "--window").text(), "1.000:2.500");
}

TEST(TimeWindow, BadWindowsAreErrors) {
  for (const char* bad : {"5:2", "3:3", "abc", "1:2:3", ":", "1h:2h", "-1:5", "1..2:3", "", "12"})
    EXPECT_THROW(parse_time_window(bad, "--window"), TraceError) << bad;
  try {
    parse_time_window("5:2", "--trace-window");
    FAIL();
  } catch (const TraceError& e) {
    EXPECT_EQ(e.where(), "--trace-window");
    EXPECT_EQ(e.value(), "5:2");
    EXPECT_NE(e.rule().find("A < B"), std::string::npos);
  }
}

TEST(TimeWindow, OverlapKeepsWholeOperations) {
  const TimeWindow w{100, 200};
  EXPECT_TRUE(w.overlaps(50, 150));   // starts before
  EXPECT_TRUE(w.overlaps(150, 300));  // ends after
  EXPECT_TRUE(w.overlaps(0, 1000));   // encloses
  EXPECT_FALSE(w.overlaps(0, 100));   // ends where it starts: [A, B) half-open
  EXPECT_FALSE(w.overlaps(200, 300));
  EXPECT_TRUE(w.overlaps(100, 100));  // zero-length at A
  EXPECT_FALSE(w.overlaps(200, 200));
}

TEST(StepRange, Parse) {
  const StepRange r = parse_step_range("2:5", "--steps");
  EXPECT_TRUE(r.contains(2));
  EXPECT_TRUE(r.contains(4));
  EXPECT_FALSE(r.contains(5));
  EXPECT_FALSE(r.contains(-1));
  for (const char* bad : {"5:2", "2:2", "x:3", "1", "-1:3", "1:2:3"})
    EXPECT_THROW(parse_step_range(bad, "--steps"), TraceError) << bad;
}

TEST(TraceFilter, KeepsByLaneAndWindow) {
  TraceFilter f;
  f.lanes = parse_lane_patterns("core0.*", "--trace-lanes");
  f.window = parse_time_window("1:2", "--trace-window");  // µs
  TraceEvent e{"slice.chip0", "core0.mxu0", "op", 1000, 500, 1000, 0};  // 1 GHz: [1.0, 1.5) µs
  EXPECT_TRUE(f.keep(e));
  e.track = "core1.mxu0";
  EXPECT_FALSE(f.keep(e));
  e.track = "core0.vpu";
  e.start_cycle = 2000;  // [2.0, 2.5) µs: after the window
  EXPECT_FALSE(f.keep(e));
  e.start_cycle = 500;  // [0.5, 1.0) µs: ends where the window starts
  EXPECT_FALSE(f.keep(e));
  e.dur_cycles = 600;  // [0.5, 1.1) µs: overlaps, kept whole
  EXPECT_TRUE(f.keep(e));
}

TEST(Gzip, RoundTripAndDeterminism) {
  std::string text;
  for (int i = 0; i < 20000; ++i) text += "{\"ph\":\"X\",\"name\":\"fusion." + std::to_string(i % 97) + "\"},\n";
  const std::string z = gzip_compress(text);
  EXPECT_TRUE(is_gzip(z));
  EXPECT_LT(z.size(), text.size() / 5);  // repetitive JSON compresses well
  EXPECT_EQ(gzip_decompress(z), text);
  EXPECT_EQ(gzip_compress(text), z);  // no time stamp in the header
  EXPECT_EQ(gzip_decompress(gzip_compress("")), "");
  // Concatenated members read as one stream, as gunzip does.
  EXPECT_EQ(gzip_decompress(gzip_compress("ab") + gzip_compress("cd")), "abcd");
}

TEST(Gzip, CorruptOrTruncatedIsAnError) {
  const std::string z = gzip_compress(std::string(100000, 'x') + "tail");
  EXPECT_THROW(gzip_decompress(z.substr(0, z.size() / 2)), std::runtime_error);
  std::string bad = z;
  bad[bad.size() - 6] ^= 0x55;  // the CRC-32 of the trailer
  EXPECT_THROW(gzip_decompress(bad), std::runtime_error);
  EXPECT_THROW(gzip_decompress(z + "garbage"), std::runtime_error);  // not another gzip member
}

class TempDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tpusim_trace_filter_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const char* name) const { return (dir_ / name).string(); }
  std::filesystem::path dir_;
};

TEST_F(TempDir, GzipTraceFileReadsLikeThePlainOne) {
  auto fill = [](ChromeTraceFile& f) {
    f.set_other_data(R"({"config_hash":"fnv1a64:0"})");
    f.complete({"slice.chip0", "core0.mxu0", "matmul", 940, 1880, 940, 0, 3});
    f.complete({"slice.chip0", "core0.dma0", "load", 0, 940, 940, 4096, 3});
    f.complete({"host0", "compile", "train", 0, 5000, 1000, 0, 2});
  };
  ChromeTraceFile plain(path("trace.json")), gz(path("trace.json.gz"), TraceFileOptions{{}, true});
  fill(plain);
  fill(gz);
  plain.close();
  gz.close();
  const TraceData a = read_trace_file(path("trace.json")), b = read_trace_file(path("trace.json.gz"));
  EXPECT_FALSE(a.gzip);
  EXPECT_TRUE(b.gzip);
  ASSERT_EQ(a.ops.size(), 3u);
  ASSERT_EQ(b.ops.size(), a.ops.size());
  for (size_t i = 0; i < a.ops.size(); ++i) {
    EXPECT_EQ(a.ops[i].start_ns, b.ops[i].start_ns);
    EXPECT_EQ(a.ops[i].end_ns, b.ops[i].end_ns);
    EXPECT_EQ(a.ops[i].step, b.ops[i].step);
    EXPECT_EQ(a.lanes[a.ops[i].lane].name, b.lanes[b.ops[i].lane].name);
  }
  EXPECT_EQ(b.other_data["config_hash"], "fnv1a64:0");
  // The writer's args: step and bytes, read back.
  for (const TraceOp& op : a.ops) {
    if (a.lanes[op.lane].track == "core0.dma0") {
      EXPECT_EQ(op.bytes, 4096u);
    }
    if (a.lanes[op.lane].track == "compile") {
      EXPECT_EQ(op.step, 2);
    }
  }
  std::ifstream f(path("trace.json.gz"), std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  EXPECT_TRUE(is_gzip(ss.str()));
}

TEST_F(TempDir, FilteredTraceFileDropsAndCounts) {
  TraceFileOptions o;
  o.filter.lanes = parse_lane_patterns("core0.*", "--trace-lanes");
  o.filter.window = parse_time_window("0:10", "--trace-window");
  ChromeTraceFile f(path("t.json"), o);
  f.complete({"slice.chip0", "core0.vpu", "a", 0, 1000, 1000, 0});      // kept
  f.complete({"slice.chip0", "core1.vpu", "b", 0, 1000, 1000, 0});      // other lane
  f.complete({"slice.chip0", "core0.vpu", "c", 20000, 1000, 1000, 0});  // after the window
  EXPECT_EQ(f.events(), 1u);
  EXPECT_EQ(f.dropped(), 2u);
}

TEST_F(TempDir, MissingAndCorruptFilesAreTraceErrors) {
  try {
    read_trace_file(path("nope.json"));
    FAIL();
  } catch (const TraceError& e) {
    EXPECT_EQ(e.where(), path("nope.json"));
    EXPECT_NE(e.rule().find("no such file"), std::string::npos);
    EXPECT_NE(e.suggestion().find("tpusim run --trace"), std::string::npos);
  }
  const std::string z = gzip_compress(std::string(50000, '['));
  std::ofstream(path("cut.json.gz"), std::ios::binary) << z.substr(0, z.size() / 2);
  try {
    read_trace_file(path("cut.json.gz"));
    FAIL();
  } catch (const TraceError& e) {
    EXPECT_NE(e.rule().find("gzip"), std::string::npos);
  }
}

}  // namespace
}  // namespace tpusim
