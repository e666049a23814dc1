// Chrome trace-event JSON sink: loads in Perfetto UI (ui.perfetto.dev) and chrome://tracing.
//
// Every TraceEvent becomes one complete event (`ph: "X"`):
//  * pid — one per process name ("slice.chip0"), numbered in natural order of the names;
//  * tid — one per track within its process ("core0.mxu0", "core0.vpu", "core0.dma", "hbm.ch3"),
//    numbered in lane order: per core mxu, vpu, dma, other lanes; then hbm channels, then the rest;
//  * ts / dur — microseconds, converted from cycles with the event's clock_mhz and rounded to whole
//    nanoseconds at both ends (so events that abut in cycles abut in the trace, never overlap);
//  * args — the raw cycles (start, duration), the clock and, for transfers, the bytes moved.
// Metadata events name processes and threads and repeat the order as `process_sort_index` /
// `thread_sort_index` (viewers differ in which of tid or sort index they honour).
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

  // Sort key of a track within its process (see the file comment). Exposed for tests.
  static std::vector<int64_t> track_sort_key(std::string_view track);
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
  };
  uint32_t intern(std::string_view s);

  std::vector<std::string> strings_;
  std::map<std::string, uint32_t, std::less<>> index_;
  std::vector<Event> events_;
};

// A ChromeTraceSink written to a file by close(). Throws std::runtime_error if the file cannot be
// written.
class ChromeTraceFile : public TraceSink {
 public:
  explicit ChromeTraceFile(std::string path) : path_(std::move(path)) {}
  void complete(const TraceEvent& ev) override { sink_.complete(ev); }
  void close() const;
  uint64_t events() const { return sink_.events(); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  ChromeTraceSink sink_;
};

}  // namespace tpusim
