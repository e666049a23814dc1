// The columns of results.csv: the point id, its axis values, its status, and the key figures of its
// report.json, each with its unit in the name. The figures are the report field catalogue's
// (workloads/report/report_fields.h) that name a column; docs/config-sweep.md's table is generated
// from them.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tpusim::sweep {

// A key figure taken from a point's report.json: a catalogue field as a column of one kind.
struct FigureColumn {
  std::string name;     // CSV header, unit in the name: "steady_step_time_s"
  std::string kind;     // workload kind whose report has it: "training" | "kernel" | "hlo"
  std::string pointer;  // JSON pointer into report.json; "" for a derived figure (see figure_value)
  std::string unit;     // for the docs ("s", "bytes", "fraction", ...)
  std::string doc;
};
const std::vector<FigureColumn>& figure_columns();

// Columns every row has before the axes, after them, and at the end.
inline constexpr const char* kPointColumn = "point";
inline const std::vector<std::string> kStatusColumns = {"status", "exit_code", "error"};
inline const std::vector<std::string> kTrailingColumns = {"config_hash", "wall_time_s"};

// results.csv's header for a sweep of workloads of `kind` with these axes: point, axes, status,
// exit_code, error, the kind's figures, config_hash, wall_time_s.
std::vector<std::string> csv_columns(const std::vector<std::string>& axis_names, const std::string& kind);
// Every column name a results file can have besides axes (for checks and "did you mean").
std::vector<std::string> known_columns();
// The figure columns of `kind`.
std::vector<std::string> figure_names(const std::string& kind);

// A figure of `report` (null when the report lacks it, e.g. a failed point).
nlohmann::ordered_json figure_value(const FigureColumn& c, const nlohmann::ordered_json& report);

// The Markdown table of the columns (for docs/config-sweep.md).
std::string columns_markdown();

}  // namespace tpusim::sweep
