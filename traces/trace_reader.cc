#include "traces/trace_reader.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <numeric>

#include <fmt/format.h>

#include "traces/chrome_trace.h"
#include "traces/gzip_io.h"
#include "traces/trace_error.h"

namespace tpusim {
namespace {

using nlohmann::json;

const char* kNotATrace = "is not a Chrome trace-event file";
const char* kTraceHint = "give a trace written by `tpusim run --trace` (DIR/trace.json or DIR/trace.json.gz)";

// pid/tid may be numbers or strings; their JSON text is a stable key either way.
std::string id_key(const json& ev, const char* field) {
  auto it = ev.find(field);
  return it == ev.end() ? std::string() : it->dump();
}

int64_t to_ns(double us) { return std::llround(us * 1000.0); }

// Builds TraceData from events handed over one by one (the DOM of a large trace is never built).
class Builder {
 public:
  explicit Builder(std::string origin) : origin_(std::move(origin)) {}

  void event(const json& ev) {
    ++index_;
    if (!ev.is_object()) fail("is not an object");
    auto ph_it = ev.find("ph");
    if (ph_it == ev.end() || !ph_it->is_string()) fail("has no phase (\"ph\")");
    const std::string& ph = ph_it->get_ref<const std::string&>();
    const std::string pid = id_key(ev, "pid"), tid = id_key(ev, "tid");
    if (ph == "M") return metadata(ev, pid, tid);
    if (ph != "X" && ph != "B" && ph != "E") {
      ++ignored_;
      return;
    }
    const double ts = number(ev, "ts", true);
    const LaneKey lane{pid, tid};
    if (ph == "E") {
      auto& stack = open_[lane];
      if (stack.empty()) {
        ++ignored_;
        return;
      }
      Raw r = stack.back();
      stack.pop_back();
      r.end_ns = std::max(r.start_ns, to_ns(ts));
      raw_.push_back(std::move(r));
      return;
    }
    Raw r;
    r.lane = lane;
    r.start_ns = to_ns(ts);
    auto name_it = ev.find("name");
    r.name = name_it != ev.end() && name_it->is_string() ? name_it->get<std::string>() : "(unnamed)";
    if (auto a = ev.find("args"); a != ev.end() && a->is_object()) {
      if (auto s = a->find("step"); s != a->end() && s->is_number_integer()) r.step = s->get<int64_t>();
      if (auto b = a->find("bytes"); b != a->end() && b->is_number_unsigned()) r.bytes = b->get<uint64_t>();
    }
    if (ph == "B") {
      open_[lane].push_back(std::move(r));
      return;
    }
    const double dur = ev.contains("dur") ? number(ev, "dur", false) : 0.0;
    if (dur < 0) fail("has a negative duration");
    r.end_ns = r.start_ns + to_ns(dur);
    raw_.push_back(std::move(r));
  }

  TraceData finish(json other_data, bool gzip) {
    TraceData t;
    t.origin = origin_;
    t.gzip = gzip;
    t.other_data = other_data.is_object() ? std::move(other_data) : json();
    for (const auto& [lane, stack] : open_) ignored_ += stack.size();  // B without E
    t.ignored_events = ignored_;
    // Lanes that have operations, in display order.
    std::map<LaneKey, uint32_t> lane_of;
    for (const Raw& r : raw_) lane_of.emplace(r.lane, 0);
    std::vector<LaneKey> keys;
    for (const auto& [k, v] : lane_of) keys.push_back(k);
    for (const LaneKey& k : keys) {
      TraceLane l;
      auto p = process_names_.find(k.first);
      l.process = p != process_names_.end() ? p->second : "pid " + k.first;
      auto th = thread_names_.find(k);
      l.track = th != thread_names_.end() ? th->second : "tid " + k.second;
      t.lanes.push_back(std::move(l));
    }
    std::vector<uint32_t> order(t.lanes.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      const TraceLane &la = t.lanes[a], &lb = t.lanes[b];
      if (la.process != lb.process) return ChromeTraceSink::natural_less(la.process, lb.process);
      const auto ka = ChromeTraceSink::track_sort_key(la.track), kb = ChromeTraceSink::track_sort_key(lb.track);
      if (ka != kb) return ka < kb;
      return ChromeTraceSink::natural_less(la.track, lb.track);
    });
    std::vector<TraceLane> sorted;
    for (size_t i = 0; i < order.size(); ++i) {
      sorted.push_back(std::move(t.lanes[order[i]]));
      lane_of[keys[order[i]]] = uint32_t(i);
    }
    t.lanes = std::move(sorted);
    for (TraceLane& l : t.lanes) {
      l.name = l.process + "." + l.track;
      l.kind = classify_lane(l.process, l.track);
      l.core = lane_core(l.track);
    }
    std::map<std::string, uint32_t> name_index;
    t.ops.reserve(raw_.size());
    for (Raw& r : raw_) {
      auto [it, added] = name_index.emplace(r.name, uint32_t(t.names.size()));
      if (added) t.names.push_back(r.name);
      t.ops.push_back({lane_of[r.lane], it->second, r.start_ns, r.end_ns, r.step, r.bytes});
    }
    std::stable_sort(t.ops.begin(), t.ops.end(), [](const TraceOp& a, const TraceOp& b) {
      if (a.lane != b.lane) return a.lane < b.lane;
      if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
      return a.end_ns > b.end_ns;
    });
    return t;
  }

 private:
  using LaneKey = std::pair<std::string, std::string>;  // (pid, tid) JSON text
  struct Raw {
    LaneKey lane;
    std::string name;
    int64_t start_ns = 0, end_ns = 0, step = -1;
    uint64_t bytes = 0;
  };

  [[noreturn]] void fail(const std::string& what) const {
    throw TraceError(origin_, fmt::format("{}: event {} of traceEvents {}", kNotATrace, index_ - 1, what), "",
                     kTraceHint);
  }

  double number(const json& ev, const char* field, bool required) const {
    auto it = ev.find(field);
    if (it == ev.end() || !it->is_number()) {
      if (required) fail(fmt::format("has no numeric \"{}\"", field));
      fail(fmt::format("has a non-numeric \"{}\"", field));
    }
    const double v = it->get<double>();
    if (!std::isfinite(v)) fail(fmt::format("has a non-finite \"{}\"", field));
    return v;
  }

  void metadata(const json& ev, const std::string& pid, const std::string& tid) {
    auto name = ev.find("name");
    auto args = ev.find("args");
    if (name == ev.end() || args == ev.end() || !args->is_object()) return;
    auto n = args->find("name");
    if (n == args->end() || !n->is_string()) return;
    if (*name == "process_name") process_names_[pid] = n->get<std::string>();
    else if (*name == "thread_name") thread_names_[{pid, tid}] = n->get<std::string>();
  }

  std::string origin_;
  uint64_t index_ = 0, ignored_ = 0;
  std::vector<Raw> raw_;
  std::map<LaneKey, std::vector<Raw>> open_;  // B events awaiting their E
  std::map<std::string, std::string> process_names_;
  std::map<LaneKey, std::string> thread_names_;
};

}  // namespace

bool TraceData::has_steps() const {
  return std::any_of(ops.begin(), ops.end(), [](const TraceOp& o) { return o.step >= 0; });
}

TraceData parse_trace(std::string_view text, const std::string& origin) {
  Builder b(origin);
  // Root keys are seen at depth 1; events are the objects closing at depth 2 inside "traceEvents"
  // (or at depth 1 in the bare-array format). Returning false drops each event once handled.
  std::string root_key;
  bool array_root = false;
  auto callback = [&](int depth, json::parse_event_t e, json& parsed) {
    if (depth == 0 && e == json::parse_event_t::array_start) array_root = true;
    if (depth == 1 && e == json::parse_event_t::key) root_key = parsed.get<std::string>();
    if (e == json::parse_event_t::object_end || e == json::parse_event_t::value) {
      const bool in_events = array_root ? depth == 1 : (depth == 2 && root_key == "traceEvents");
      if (in_events) {
        b.event(parsed);
        return false;
      }
    }
    return true;
  };
  json root;
  try {
    root = json::parse(text.begin(), text.end(), callback);
  } catch (const json::parse_error& e) {
    std::string what = e.what();
    if (auto p = what.find("] "); p != std::string::npos) what = what.substr(p + 2);
    throw TraceError(origin, "is not JSON (" + what + ")", "", kTraceHint);
  }
  if (!array_root && !(root.is_object() && root.contains("traceEvents") && root["traceEvents"].is_array()))
    throw TraceError(origin, std::string(kNotATrace) + " (no traceEvents array)", "", kTraceHint);
  json other = array_root ? json() : root.value("otherData", json());
  return b.finish(std::move(other), false);
}

TraceData read_trace_file(const std::string& path) {
  const std::string text = read_maybe_gzip_file(path);
  TraceData t = parse_trace(text, path);
  // read_maybe_gzip_file inflated it if it was compressed; say so in the summary.
  std::ifstream f(path, std::ios::binary);
  char magic[2] = {0, 0};
  f.read(magic, 2);
  t.gzip = is_gzip(std::string_view(magic, size_t(f.gcount())));
  return t;
}

}  // namespace tpusim
