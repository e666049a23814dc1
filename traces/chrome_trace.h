// Chrome trace-event JSON sink: loads in Perfetto UI (ui.perfetto.dev) and chrome://tracing.
//
// Every TraceEvent becomes one complete event (`ph: "X"`):
//  * pid — one per process name ("slice.chip0"), numbered in natural order of the names;
//  * tid — one per track within its process ("core0.mxu0", "core0.vpu", "core0.dma", "hbm.ch3"),
//    numbered in lane order: per core mxu, vpu, dma, other lanes; then hbm channels, then the rest;
//  * ts / dur — microseconds, converted from cycles with the event's clock_mhz and rounded to whole
//    nanoseconds at both ends (so events that abut in cycles abut in the trace, never overlap);
//  * args — the raw cycles (start, duration), the clock, for transfers the bytes moved and, for
//    events of a training step, the step's index (`step`, as in report.json's steps[]).
// Metadata events name processes and threads and repeat the order as `process_sort_index` /
// `thread_sort_index` (viewers differ in which of tid or sort index they honour).
//
// An optional top-level `otherData` object carries what the trace is of (tpusim version, config
// hash, how it was bounded); viewers show it as metadata.
//
// Events are buffered compactly (names interned) and written, sorted by lane and time, by close():
// ids and order then do not depend on the order in which an engine happened to report events, so the
// file is a deterministic function of the set of events.
#pragma once
#include <cstdint>
#include <fstream>
#include <map>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "sim/base/trace.h"
#include "traces/trace_filter.h"

namespace tpusim {

class ChromeTraceSink : public TraceSink {
 public:
  ChromeTraceSink() = default;
  ChromeTraceSink(const ChromeTraceSink&) = delete;
  ChromeTraceSink& operator=(const ChromeTraceSink&) = delete;

  // Throws std::invalid_argument for a non-positive clock (a bug in the reporting block).
  void complete(const TraceEvent& ev) override;
  // Writes the whole trace JSON. May be called more than once.
  void write(std::ostream& out) const;

  uint64_t events() const { return events_.size(); }
  // A JSON object (serialized) written as the trace's `otherData`; empty: none.
  void set_other_data(std::string json_object) { other_data_ = std::move(json_object); }

  // Sort key of a track within its process (see the file comment). Exposed for tests.
  static std::vector<int64_t> track_sort_key(std::string_view track);
  // Natural order of names ("chip2" < "chip10"): the order of pids.
  static bool natural_less(std::string_view a, std::string_view b);
  // Rounded nanoseconds of `cycles` at `clock_mhz`.
  static int64_t to_ns(uint64_t cycles, double clock_mhz);
  // Nanoseconds written as microseconds with three decimals: 1234 -> "1.234".
  static std::string ns_as_us(int64_t ns);

 private:
  struct Event {
    uint32_t process, track, name;  // indices into strings_
    int64_t start_ns, end_ns;
    uint64_t start_cycle, dur_cycles, bytes;
    double clock_mhz;
    int64_t step;
  };
  uint32_t intern(std::string_view s);

  std::vector<std::string> strings_;
  std::map<std::string, uint32_t, std::less<>> index_;
  std::vector<Event> events_;
  std::string other_data_;
};

// How a trace file is bounded and stored (`tpusim run --trace-lanes/--trace-window/--trace-gzip`).
struct TraceFileOptions {
  TraceFilter filter;  // events it rejects are not recorded
  bool gzip = false;   // write the file gzip-compressed
};

// A ChromeTraceSink written to a file by close(). Throws std::runtime_error if the file cannot be
// written.
class ChromeTraceFile : public TraceSink {
 public:
  explicit ChromeTraceFile(std::string path, TraceFileOptions opts = {})
      : path_(std::move(path)), opts_(std::move(opts)) {}
  void complete(const TraceEvent& ev) override {
    if (opts_.filter.keep(ev)) sink_.complete(ev);
    else ++dropped_;
  }
  void close() const;
  uint64_t events() const { return sink_.events(); }
  uint64_t dropped() const { return dropped_; }  // events outside the filter
  const std::string& path() const { return path_; }
  const TraceFileOptions& options() const { return opts_; }
  void set_other_data(std::string json_object) { sink_.set_other_data(std::move(json_object)); }

 private:
  std::string path_;
  TraceFileOptions opts_;
  ChromeTraceSink sink_;
  uint64_t dropped_ = 0;
};

}  // namespace tpusim
