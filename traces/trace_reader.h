// Reads a Chrome trace-event file (plain or gzip-compressed) into lanes and operations: what
// `tpusim trace summarize` and `tpusim report` analyse.
//
// Accepted: the JSON object format ({"traceEvents": [...], "otherData": {...}}) and the bare array
// format. Complete events (ph "X") and begin/end pairs (ph "B"/"E", matched per lane) become
// operations; metadata events (ph "M") name processes and threads; every other phase (instant,
// counter, flow, ...) is counted as ignored. Times are in µs (`ts`, `dur`) and kept in integer
// nanoseconds. `args.step` (tpusim's training traces) ties an operation to a training step and
// `args.bytes` to the bytes it moved.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "traces/lane_kind.h"

namespace tpusim {

struct TraceLane {
  std::string process, track;
  std::string name;  // "process.track", as --lanes patterns and reports name it
  LaneKind kind = LaneKind::kOther;
  int core = -1;     // lane_core(track)
};

struct TraceOp {
  uint32_t lane = 0;  // index into TraceData::lanes
  uint32_t name = 0;  // index into TraceData::names
  int64_t start_ns = 0, end_ns = 0;
  int64_t step = -1;  // args.step, -1: none
  uint64_t bytes = 0;  // args.bytes, 0: none
  int64_t dur_ns() const { return end_ns - start_ns; }
};

struct TraceData {
  std::string origin;  // the file as given
  bool gzip = false;
  std::vector<TraceLane> lanes;  // in display order: processes in natural order, tracks in lane order
  std::vector<std::string> names;
  std::vector<TraceOp> ops;      // sorted by lane, then start
  nlohmann::json other_data;     // the trace's otherData object, or null
  uint64_t ignored_events = 0;   // events of other phases, and E without B
  bool has_steps() const;        // any op carries args.step
};

// Throws TraceError naming `path` when it is missing, not gzip/JSON, or not a trace-event file.
TraceData read_trace_file(const std::string& path);
// The same on text already in memory (`origin` names it in errors).
TraceData parse_trace(std::string_view json_text, const std::string& origin);

}  // namespace tpusim
