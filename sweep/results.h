// A sweep's result files. Each finished point is one record (a line of DIR/results.jsonl: its id,
// axis values, status, error and full report.json); DIR/results.csv has one row per record, projected
// onto the sweep's columns. Both are appended (and flushed) as points finish and rewritten sorted by
// point id at the end, so that the same sweep gives the same bytes apart from wall times.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sweep/plan.h"

namespace tpusim::sweep {

using ojson = nlohmann::ordered_json;

inline constexpr const char* kResultsCsv = "results.csv";
inline constexpr const char* kResultsJsonl = "results.jsonl";
inline constexpr const char* kSweepJson = "sweep.json";

// How a point ended.
struct PointOutcome {
  std::string status;  // ok | failed | crashed | timeout
  int exit_code = 0;
  std::string error;   // first error line ("" when ok)
  double wall_s = 0;
  ojson report;        // the point's report.json; null unless ok
};

// The record of a planned point (keys in a fixed order).
ojson make_record(const SweepPlan& plan, const PlannedPoint& p, const PointOutcome& outcome);
uint64_t record_point(const ojson& record);

// The results.csv header and the row of a record (RFC 4180 quoting; no trailing newline).
std::string csv_line(const std::vector<std::string>& cells);
std::vector<std::string> csv_cells(const ojson& record, const std::vector<std::string>& columns);
// The same row as values (null where a cell is empty): what the Python module returns as a sweep row.
std::vector<ojson> record_values(const ojson& record, const std::vector<std::string>& columns);

// Appends records to DIR/results.csv and DIR/results.jsonl as points finish.
class ResultsAppender {
 public:
  // `fresh`: start new files (header only); otherwise append to what is there.
  ResultsAppender(const std::string& dir, const std::vector<std::string>& columns, bool fresh);
  ~ResultsAppender();
  ResultsAppender(const ResultsAppender&) = delete;
  ResultsAppender& operator=(const ResultsAppender&) = delete;
  void add(const ojson& record);

 private:
  std::vector<std::string> columns_;
  std::FILE* csv_ = nullptr;
  std::FILE* jsonl_ = nullptr;
};

// Writes both files from `records`, sorted by point id (through a temporary file and a rename).
void write_sorted(const std::string& dir, const std::vector<std::string>& columns, std::vector<ojson> records);

// The records of DIR/results.jsonl. A last line cut short (a sweep killed while writing) is ignored;
// any other bad line is a ConfigError naming the file and line. Missing file: no records.
std::vector<ojson> read_records(const std::string& dir);

// DIR/sweep.json: what merge and the plot script need (name, axes, columns, plots, sweep hash).
ojson sweep_description(const SweepPlan& plan);
void write_json(const std::string& path, const ojson& j);
ojson read_json(const std::string& path);

// The error line of a failed child's stderr: the first "error: ..." or "internal error: ..." line
// (without "error: "), else the first non-empty line.
std::string first_error_line(const std::string& stderr_text);

}  // namespace tpusim::sweep
