#include "sweep/columns.h"

#include <fmt/format.h>

#include <algorithm>

#include "workloads/report/report_fields.h"

namespace tpusim::sweep {

using ojson = nlohmann::ordered_json;

const std::vector<FigureColumn>& figure_columns() {
  // The catalogue's fields that have a column, per kind in its order.
  static const std::vector<FigureColumn> c = [] {
    std::vector<FigureColumn> cols;
    for (ReportKind k : kReportKinds)
      for (const ReportField& f : report_fields())
        if (f.in(k) && *f.column) cols.push_back({f.column, report_kind_name(k), f.path, f.unit, f.doc});
    return cols;
  }();
  return c;
}

std::vector<std::string> figure_names(const std::string& kind) {
  std::vector<std::string> n;
  for (const auto& c : figure_columns())
    if (c.kind == kind) n.push_back(c.name);
  return n;
}

std::vector<std::string> csv_columns(const std::vector<std::string>& axis_names, const std::string& kind) {
  std::vector<std::string> cols = {kPointColumn};
  cols.insert(cols.end(), axis_names.begin(), axis_names.end());
  cols.insert(cols.end(), kStatusColumns.begin(), kStatusColumns.end());
  for (const auto& f : figure_names(kind)) cols.push_back(f);
  cols.insert(cols.end(), kTrailingColumns.begin(), kTrailingColumns.end());
  return cols;
}

std::vector<std::string> known_columns() {
  std::vector<std::string> cols = {kPointColumn};
  cols.insert(cols.end(), kStatusColumns.begin(), kStatusColumns.end());
  for (const auto& c : figure_columns())
    if (std::find(cols.begin(), cols.end(), c.name) == cols.end()) cols.push_back(c.name);
  cols.insert(cols.end(), kTrailingColumns.begin(), kTrailingColumns.end());
  return cols;
}

ojson figure_value(const FigureColumn& c, const ojson& report) {
  if (!report.is_object()) return nullptr;
  if (c.pointer.empty()) {  // flops_per_byte, the only derived figure
    const ojson::json_pointer f("/summary/flops"), b("/summary/hbm_bytes");
    if (!report.contains(f) || !report.contains(b)) return nullptr;
    const double bytes = report.at(b).get<double>();
    return bytes > 0 ? ojson(report.at(f).get<double>() / bytes) : ojson(nullptr);
  }
  const ojson::json_pointer p(c.pointer);
  return report.contains(p) ? report.at(p) : ojson(nullptr);
}

std::string columns_markdown() {
  std::string md =
      "### results.csv columns\n\n"
      "`point`, then one column per axis (named by the axis' `name`), then `status` (`ok`, `failed`, `crashed`, "
      "`timeout`), `exit_code` (the point's `tpusim run` exit code; 128+N when killed by signal N, 124 on timeout) "
      "and `error` (the first error line), then the key figures of the base workload's kind, then `config_hash` "
      "(of the point's resolved configs, as in its report.json) and `wall_time_s` (host time the point took; the "
      "only column that differs between two runs of the same sweep). A figure is empty when the point failed.\n\n"
      "| Column | Workload kind | Unit | From report.json | Description |\n|---|---|---|---|---|\n";
  for (const auto& c : figure_columns())
    md += fmt::format("| `{}` | {} | {} | {} | {} |\n", c.name, c.kind, c.unit,
                      c.pointer.empty() ? "*derived*" : "`" + c.pointer + "`", c.doc);
  return md + "\n";
}

}  // namespace tpusim::sweep
