#include "traces/chrome_trace.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "traces/gzip_io.h"

namespace tpusim {
namespace {

// JSON string literal; invalid UTF-8 in a label is replaced rather than aborting the trace.
std::string quote(std::string_view s) {
  return nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

}  // namespace

// Natural order ("chip2" < "chip10") so that pids follow the hardware numbering.
bool ChromeTraceSink::natural_less(std::string_view a, std::string_view b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (is_digit(a[i]) && is_digit(b[j])) {
      size_t i2 = i, j2 = j;
      while (i2 < a.size() && is_digit(a[i2])) ++i2;
      while (j2 < b.size() && is_digit(b[j2])) ++j2;
      std::string_view na = a.substr(i, i2 - i), nb = b.substr(j, j2 - j);
      while (na.size() > 1 && na[0] == '0') na.remove_prefix(1);
      while (nb.size() > 1 && nb[0] == '0') nb.remove_prefix(1);
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      i = i2;
      j = j2;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  if ((a.size() - i) != (b.size() - j)) return (a.size() - i) < (b.size() - j);
  return a < b;
}

namespace {

// The first run of digits in `s` at or after `from`, or -1.
int64_t number_in(std::string_view s, size_t from = 0) {
  size_t i = from;
  while (i < s.size() && !is_digit(s[i])) ++i;
  if (i == s.size()) return -1;
  int64_t v = 0;
  while (i < s.size() && is_digit(s[i]) && v < (int64_t(1) << 40)) v = v * 10 + (s[i++] - '0');
  return v;
}

}  // namespace

std::vector<int64_t> ChromeTraceSink::track_sort_key(std::string_view track) {
  // Lanes of a core in the order a reader follows the dataflow: matrix, vector, data movement.
  constexpr int64_t kNoCore = std::numeric_limits<int32_t>::max();
  int64_t core = kNoCore;
  std::string_view lane = track;
  if (track.substr(0, 4) == "core" && track.size() > 4 && is_digit(track[4])) {
    size_t dot = track.find('.');
    if (dot != std::string_view::npos) {
      core = number_in(track.substr(0, dot));
      lane = track.substr(dot + 1);
    }
  }
  size_t alpha = 0;
  while (alpha < lane.size() && std::isalpha(static_cast<unsigned char>(lane[alpha]))) ++alpha;
  std::string_view kind = lane.substr(0, alpha);
  int64_t rank = 4;
  if (core != kNoCore) {
    if (kind == "mxu") rank = 0;
    else if (kind == "vpu") rank = 1;
    else if (kind == "dma") rank = 2;
    else rank = 3;
  } else if (kind == "hbm") {
    rank = 0;
  }
  return {core, rank, number_in(lane)};
}

int64_t ChromeTraceSink::to_ns(uint64_t cycles, double clock_mhz) {
  return std::llround(double(cycles) * 1e3 / clock_mhz);
}

std::string ChromeTraceSink::ns_as_us(int64_t ns) {
  const char* sign = ns < 0 ? "-" : "";
  uint64_t a = uint64_t(ns < 0 ? -ns : ns);
  return fmt::format("{}{}.{:03}", sign, a / 1000, a % 1000);
}

uint32_t ChromeTraceSink::intern(std::string_view s) {
  auto it = index_.find(s);
  if (it != index_.end()) return it->second;
  uint32_t id = uint32_t(strings_.size());
  strings_.emplace_back(s);
  index_.emplace(std::string(s), id);
  return id;
}

void ChromeTraceSink::complete(const TraceEvent& ev) {
  if (!(ev.clock_mhz > 0)) {
    throw std::invalid_argument(fmt::format("trace event '{}' on {}/{} has clock_mhz {}", ev.name, ev.process,
                                            ev.track, ev.clock_mhz));
  }
  Event e;
  e.process = intern(ev.process);
  e.track = intern(ev.track);
  e.name = intern(ev.name.empty() ? std::string_view("(unnamed)") : ev.name);
  // Round both ends (not the duration) so that abutting operations stay abutting.
  e.start_ns = to_ns(ev.start_cycle, ev.clock_mhz);
  e.end_ns = to_ns(ev.start_cycle + ev.dur_cycles, ev.clock_mhz);
  e.start_cycle = ev.start_cycle;
  e.dur_cycles = ev.dur_cycles;
  e.bytes = ev.bytes;
  e.clock_mhz = ev.clock_mhz;
  e.step = ev.step;
  events_.push_back(e);
}

void ChromeTraceSink::write(std::ostream& out) const {
  // pid per process in natural order; tid per (process, track) in lane order.
  std::vector<uint32_t> procs;
  std::map<uint32_t, std::vector<uint32_t>> tracks_of;  // process string -> track strings
  for (const Event& e : events_) {
    auto& t = tracks_of[e.process];
    if (t.empty()) procs.push_back(e.process);
    if (std::find(t.begin(), t.end(), e.track) == t.end()) t.push_back(e.track);
  }
  std::sort(procs.begin(), procs.end(),
            [&](uint32_t a, uint32_t b) { return natural_less(strings_[a], strings_[b]); });
  std::map<uint32_t, uint32_t> pid;                         // process string -> pid
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> tid;  // (process, track) -> tid

  out << "{\"displayTimeUnit\":\"ns\",";
  if (!other_data_.empty()) out << "\"otherData\":" << other_data_ << ",";
  out << "\"traceEvents\":[\n";
  bool first = true;
  auto sep = [&] {
    if (!first) out << ",\n";
    first = false;
  };
  for (size_t pi = 0; pi < procs.size(); ++pi) {
    uint32_t p = procs[pi];
    pid[p] = uint32_t(pi + 1);
    sep();
    out << fmt::format(R"({{"ph":"M","name":"process_name","pid":{},"tid":0,"args":{{"name":{}}}}})", pi + 1,
                       quote(strings_[p]));
    sep();
    out << fmt::format(R"({{"ph":"M","name":"process_sort_index","pid":{},"tid":0,"args":{{"sort_index":{}}}}})",
                       pi + 1, pi + 1);
    auto tracks = tracks_of[p];
    std::sort(tracks.begin(), tracks.end(), [&](uint32_t a, uint32_t b) {
      auto ka = track_sort_key(strings_[a]), kb = track_sort_key(strings_[b]);
      if (ka != kb) return ka < kb;
      return natural_less(strings_[a], strings_[b]);
    });
    for (size_t ti = 0; ti < tracks.size(); ++ti) {
      tid[{p, tracks[ti]}] = uint32_t(ti + 1);
      sep();
      out << fmt::format(R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":{}}}}})", pi + 1,
                         ti + 1, quote(strings_[tracks[ti]]));
      sep();
      out << fmt::format(R"({{"ph":"M","name":"thread_sort_index","pid":{},"tid":{},"args":{{"sort_index":{}}}}})",
                         pi + 1, ti + 1, ti + 1);
    }
  }

  struct Row {
    uint32_t pid, tid;
    const Event* e;
  };
  std::vector<Row> rows;
  rows.reserve(events_.size());
  for (const Event& e : events_) rows.push_back({pid[e.process], tid[{e.process, e.track}], &e});
  // Stable: events identical in lane and time keep their arrival order.
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    if (a.pid != b.pid) return a.pid < b.pid;
    if (a.tid != b.tid) return a.tid < b.tid;
    if (a.e->start_ns != b.e->start_ns) return a.e->start_ns < b.e->start_ns;
    return a.e->end_ns > b.e->end_ns;  // enclosing event first, as nesting requires
  });
  for (const Row& r : rows) {
    const Event& e = *r.e;
    sep();
    std::string args = fmt::format(R"("start_cycle":{},"dur_cycles":{},"clock_mhz":{})", e.start_cycle,
                                   e.dur_cycles, nlohmann::json(e.clock_mhz).dump());
    if (e.bytes > 0) args += fmt::format(R"(,"bytes":{})", e.bytes);
    if (e.step >= 0) args += fmt::format(R"(,"step":{})", e.step);
    out << fmt::format(R"({{"ph":"X","pid":{},"tid":{},"ts":{},"dur":{},"name":{},"args":{{{}}}}})", r.pid, r.tid,
                       ns_as_us(e.start_ns), ns_as_us(e.end_ns - e.start_ns), quote(strings_[e.name]), args);
  }
  out << "\n]}\n";
}

void ChromeTraceFile::close() const {
  std::ostringstream text;
  sink_.write(text);
  write_file(path_, text.view(), opts_.gzip);
}

}  // namespace tpusim
