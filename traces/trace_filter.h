// What part of a timeline to keep or look at: lane patterns, a time window, a step range. Shared by
// `tpusim run --trace-lanes/--trace-window` (bounded traces) and `tpusim trace summarize
// --lanes/--window/--steps`, so that a pattern or a window means the same thing in both.
//
// Lanes: a comma-separated list of globs (`*` any run of characters, `?` one character, dots
// included). A lane (process, track) matches a pattern when the pattern matches its track
// ("core0.mxu0"), its process ("host0", "slice.chip0") or both joined by a dot
// ("slice.chip0.core0.mxu0", "host0.compile"): `core0.*` keeps core 0 of every chip, `host*` the
// host tracks, `slice.chip1.*` all of chip 1.
//
// Windows: `A:B` in microseconds of the trace's timeline, each end optionally with a unit (ns, us,
// µs, ms, s) and either end empty for "open": `100:250`, `18s:18.5s`, `:2ms`. An operation is in the
// window when it overlaps [A, B) (a zero-length one when A <= start < B); it is kept whole.
#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "sim/base/trace.h"

namespace tpusim {

// `*` and `?` glob over the whole of `text`.
bool glob_match(std::string_view pattern, std::string_view text);

struct LanePatterns {
  std::vector<std::string> globs;  // empty: every lane
  bool empty() const { return globs.empty(); }
  bool matches(std::string_view process, std::string_view track) const;
  std::string text() const;  // "core0.*,host*"
};
// Throws TraceError naming `flag` for an empty pattern ("a,,b").
LanePatterns parse_lane_patterns(std::string_view text, const std::string& flag);

struct TimeWindow {
  static constexpr int64_t kOpen = std::numeric_limits<int64_t>::max();
  int64_t from_ns = 0, to_ns = kOpen;
  bool set() const { return from_ns > 0 || to_ns != kOpen; }
  bool overlaps(int64_t start_ns, int64_t end_ns) const;
  std::string text() const;  // "100.000:250.000" µs, open ends empty
};
// Throws TraceError naming `flag` (unparsable number, unknown unit, A >= B, negative).
TimeWindow parse_time_window(std::string_view text, const std::string& flag);

struct StepRange {
  uint64_t from = 0, to = 0;  // steps [from, to)
  bool contains(int64_t step) const { return step >= 0 && uint64_t(step) >= from && uint64_t(step) < to; }
};
// `A:B` with A < B. Throws TraceError naming `flag`.
StepRange parse_step_range(std::string_view text, const std::string& flag);

// Lanes and window together: what a bounded trace keeps.
struct TraceFilter {
  LanePatterns lanes;
  TimeWindow window;
  bool active() const { return !lanes.empty() || window.set(); }
  bool keep(const TraceEvent& ev) const;
};

}  // namespace tpusim
