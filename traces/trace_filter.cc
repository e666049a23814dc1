#include "traces/trace_filter.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "traces/chrome_trace.h"
#include "traces/trace_error.h"

namespace tpusim {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// One end of a window: "250", "2.5ms", "18s". Returns false when it does not parse.
bool parse_time_ns(std::string_view s, int64_t* ns) {
  s = trim(s);
  size_t num_end = 0;
  while (num_end < s.size() && (std::isdigit(static_cast<unsigned char>(s[num_end])) || s[num_end] == '.')) ++num_end;
  const std::string_view number = s.substr(0, num_end), unit = trim(s.substr(num_end));
  if (number.empty() || std::count(number.begin(), number.end(), '.') > 1 || number == ".") return false;
  double scale_ns = 1e3;  // µs by default: the unit of the trace's ts/dur
  if (unit == "ns") scale_ns = 1;
  else if (unit == "us" || unit == "µs" || unit.empty()) scale_ns = 1e3;
  else if (unit == "ms") scale_ns = 1e6;
  else if (unit == "s") scale_ns = 1e9;
  else return false;
  const double v = std::stod(std::string(number)) * scale_ns;
  if (!std::isfinite(v) || v > 9e18) return false;
  *ns = std::llround(v);
  return true;
}

}  // namespace

bool glob_match(std::string_view p, std::string_view t) {
  // Iterative matcher with one backtrack point (the last `*`): linear for the patterns people write.
  size_t pi = 0, ti = 0, star = std::string_view::npos, mark = 0;
  while (ti < t.size()) {
    if (pi < p.size() && (p[pi] == '?' || p[pi] == t[ti])) {
      ++pi;
      ++ti;
    } else if (pi < p.size() && p[pi] == '*') {
      star = pi++;
      mark = ti;
    } else if (star != std::string_view::npos) {
      pi = star + 1;
      ti = ++mark;
    } else {
      return false;
    }
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

bool LanePatterns::matches(std::string_view process, std::string_view track) const {
  if (globs.empty()) return true;
  std::string full;
  full.reserve(process.size() + 1 + track.size());
  full.append(process).append(".").append(track);
  return std::any_of(globs.begin(), globs.end(), [&](const std::string& g) {
    return glob_match(g, track) || glob_match(g, process) || glob_match(g, full);
  });
}

std::string LanePatterns::text() const {
  std::string s;
  for (const auto& g : globs) s += (s.empty() ? "" : ",") + g;
  return s;
}

LanePatterns parse_lane_patterns(std::string_view text, const std::string& flag) {
  LanePatterns p;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view g = trim(text.substr(start, comma - start));
    if (g.empty())
      throw TraceError(flag, "must be a comma-separated list of lane patterns without empty entries",
                       std::string(text), "e.g. " + flag + " 'core0.*,host*'");
    // Only * and ? are wildcards: a bracket class or a brace list would silently match nothing.
    if (const size_t bad = g.find_first_of("[]{}"); bad != std::string_view::npos)
      throw TraceError(flag, std::string("patterns take * and ? as wildcards only; '") + g[bad] + "' is not supported",
                       std::string(text), "e.g. " + flag + " 'core0.*,host*'");
    p.globs.emplace_back(g);
    start = comma + 1;
  }
  return p;
}

bool TimeWindow::overlaps(int64_t start_ns, int64_t end_ns) const {
  if (end_ns <= start_ns) return start_ns >= from_ns && start_ns < to_ns;
  return start_ns < to_ns && end_ns > from_ns;
}

std::string TimeWindow::text() const {
  return fmt::format("{}:{}", from_ns > 0 ? ChromeTraceSink::ns_as_us(from_ns) : "",
                     to_ns != kOpen ? ChromeTraceSink::ns_as_us(to_ns) : "");
}

TimeWindow parse_time_window(std::string_view text, const std::string& flag) {
  const std::string rule = "must be A:B, a time window in µs of the trace (units ns, us, ms, s allowed; an end may be "
                           "empty), with A < B";
  const std::string example = "e.g. " + flag + " 100:250 or " + flag + " 18s:18.5s";
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos || text.find(':', colon + 1) != std::string_view::npos)
    throw TraceError(flag, rule, std::string(text), example);
  TimeWindow w;
  const std::string_view a = trim(text.substr(0, colon)), b = trim(text.substr(colon + 1));
  if (a.empty() && b.empty()) throw TraceError(flag, rule, std::string(text), example);
  if (!a.empty() && !parse_time_ns(a, &w.from_ns)) throw TraceError(flag, rule, std::string(text), example);
  if (!b.empty() && !parse_time_ns(b, &w.to_ns)) throw TraceError(flag, rule, std::string(text), example);
  if (w.from_ns >= w.to_ns) throw TraceError(flag, "must have A < B", std::string(text), example);
  return w;
}

StepRange parse_step_range(std::string_view text, const std::string& flag) {
  const std::string rule = "must be A:B with step numbers A < B (steps A to B-1)";
  const size_t colon = text.find(':');
  auto number = [](std::string_view s, uint64_t* v) {
    s = trim(s);
    if (s.empty() || s.size() > 18) return false;
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
    return ec == std::errc() && ptr == s.data() + s.size();
  };
  StepRange r;
  if (colon == std::string_view::npos || !number(text.substr(0, colon), &r.from) ||
      !number(text.substr(colon + 1), &r.to) || r.from >= r.to)
    throw TraceError(flag, rule, std::string(text), "e.g. " + flag + " 0:5");
  return r;
}

bool TraceFilter::keep(const TraceEvent& ev) const {
  if (!lanes.matches(ev.process, ev.track)) return false;
  // A bad clock is the sink's to report (ChromeTraceSink::complete throws), not a reason to drop.
  if (!window.set() || !(ev.clock_mhz > 0)) return true;
  const int64_t a = ChromeTraceSink::to_ns(ev.start_cycle, ev.clock_mhz);
  const int64_t b = ChromeTraceSink::to_ns(ev.start_cycle + ev.dur_cycles, ev.clock_mhz);
  return window.overlaps(a, b);
}

}  // namespace tpusim
