#include "sweep/results.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/config_error.h"
#include "sweep/columns.h"

namespace tpusim::sweep {

namespace fs = std::filesystem;

namespace {

ConfigError file_error(const std::string& path, const std::string& rule, int line = 0) {
  ConfigErrorInfo e;
  e.file = path;
  e.line = line;
  e.rule = rule;
  return ConfigError(e);
}

// An axis value in JSON: an integer, a number, true/false, or the text.
ojson typed(const std::string& text) {
  if (text == "true" || text == "false") return text == "true";
  const char* first = text.data();
  const char* last = first + text.size();
  int64_t i = 0;
  if (auto [p, ec] = std::from_chars(first, last, i); ec == std::errc() && p == last && first != last) return i;
  double d = 0;
  if (auto [p, ec] = std::from_chars(first, last, d); ec == std::errc() && p == last && first != last && std::isfinite(d))
    return d;
  return text;
}

std::string cell(const ojson& v) {
  if (v.is_null()) return "";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_unsigned()) return std::to_string(v.get<uint64_t>());
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number_float()) return fmt::format("{}", v.get<double>());  // shortest text that reads back exactly
  return v.dump();
}

std::string dump_line(const ojson& j) { return j.dump(-1, ' ', false, ojson::error_handler_t::replace); }

std::FILE* open_or_throw(const std::string& path, const char* mode) {
  std::FILE* f = std::fopen(path.c_str(), mode);
  if (!f) throw file_error(path, "cannot be written (is the output directory writable?)");
  return f;
}

void put(std::FILE* f, const std::string& text, const std::string& path) {
  if (std::fwrite(text.data(), 1, text.size(), f) != text.size() || std::fflush(f) != 0)
    throw file_error(path, "write failed (disk full?)");
}

}  // namespace

ojson make_record(const SweepPlan& plan, const PlannedPoint& p, const PointOutcome& o) {
  ojson axes = ojson::object();
  for (size_t i = 0; i < plan.config.axes.size(); ++i) axes[plan.config.axes[i].name] = typed(p.point.values[i].display);
  ojson r;
  r["point"] = p.point.id;
  r["axes"] = axes;
  r["status"] = o.status;
  r["exit_code"] = o.exit_code;
  r["error"] = o.error;
  r["hw"] = p.hw_file.empty() ? p.hw_source : p.hw_file;
  r["workload"] = p.workload_file;
  r["overrides"] = p.sets;
  r["engine"] = o.report.is_object() && o.report.contains("run") ? o.report.at("run").value("engine", plan.engine)
                                                                  : plan.engine;
  r["config_hash"] = p.config_hash;
  r["key"] = p.key;
  r["wall_time_s"] = o.wall_s;
  r["report"] = o.report;
  // A training report's op profiles (thousands of kernels per program, most of its bytes) stay in
  // the point's own report.json.
  if (ojson& rep = r["report"]; rep.is_object() && rep.contains("programs") && rep["programs"].is_array())
    for (ojson& prog : rep["programs"])
      if (prog.is_object()) prog.erase("op_profile");
  return r;
}

uint64_t record_point(const ojson& record) { return record.at("point").get<uint64_t>(); }

std::string csv_line(const std::vector<std::string>& cells) {
  std::string line;
  for (size_t i = 0; i < cells.size(); ++i) {
    const std::string& c = cells[i];
    if (i) line += ',';
    if (c.find_first_of(",\"\n\r") == std::string::npos) {
      line += c;
      continue;
    }
    line += '"';
    for (char ch : c) line += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    line += '"';
  }
  return line;
}

std::vector<std::string> csv_cells(const ojson& r, const std::vector<std::string>& columns) {
  std::vector<std::string> out;
  for (const ojson& v : record_values(r, columns)) out.push_back(cell(v));
  return out;
}

std::vector<ojson> record_values(const ojson& r, const std::vector<std::string>& columns) {
  std::vector<ojson> out;
  const ojson& axes = r.at("axes");
  const ojson& report = r.at("report");
  for (const std::string& col : columns) {
    if (col == kPointColumn || col == "status" || col == "exit_code" || col == "error" || col == "config_hash" ||
        col == "wall_time_s") {
      out.push_back(r.value(col, ojson(nullptr)));
      continue;
    }
    if (axes.contains(col)) {
      out.push_back(axes.at(col));
      continue;
    }
    const auto& figs = figure_columns();
    // Columns of one kind have unique names (mxu_utilization exists for both kinds, same meaning).
    ojson value;
    for (const auto& f : figs) {
      if (f.name != col) continue;
      value = figure_value(f, report);
      if (!value.is_null()) break;
    }
    out.push_back(value);
  }
  return out;
}

ResultsAppender::ResultsAppender(const std::string& dir, const std::vector<std::string>& columns, bool fresh)
    : columns_(columns) {
  const std::string csv = (fs::path(dir) / kResultsCsv).string(), jsonl = (fs::path(dir) / kResultsJsonl).string();
  const bool write_header = fresh || !fs::exists(csv);
  csv_ = open_or_throw(csv, fresh ? "w" : "a");
  jsonl_ = open_or_throw(jsonl, fresh ? "w" : "a");
  if (write_header) put(csv_, csv_line(columns_) + "\n", csv);
}

ResultsAppender::~ResultsAppender() {
  if (csv_) std::fclose(csv_);
  if (jsonl_) std::fclose(jsonl_);
}

void ResultsAppender::add(const ojson& record) {
  put(csv_, csv_line(csv_cells(record, columns_)) + "\n", kResultsCsv);
  put(jsonl_, dump_line(record) + "\n", kResultsJsonl);
}

void write_sorted(const std::string& dir, const std::vector<std::string>& columns, std::vector<ojson> records) {
  std::stable_sort(records.begin(), records.end(),
                   [](const ojson& a, const ojson& b) { return record_point(a) < record_point(b); });
  std::string csv = csv_line(columns) + "\n", jsonl;
  for (const auto& r : records) {
    csv += csv_line(csv_cells(r, columns)) + "\n";
    jsonl += dump_line(r) + "\n";
  }
  for (const auto& [name, text] : {std::pair{kResultsCsv, &csv}, std::pair{kResultsJsonl, &jsonl}}) {
    const std::string path = (fs::path(dir) / name).string(), tmp = path + ".tmp";
    std::FILE* f = open_or_throw(tmp, "w");
    put(f, *text, tmp);
    std::fclose(f);
    std::error_code ec;
    fs::rename(tmp, path, ec);
    if (ec) throw file_error(path, "cannot be replaced: " + ec.message());
  }
}

std::vector<ojson> read_records(const std::string& dir) {
  const std::string path = (fs::path(dir) / kResultsJsonl).string();
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  // A line without its newline was being written when the sweep was killed.
  std::ifstream tail(path, std::ios::binary | std::ios::ate);
  bool last_complete = true;
  if (tail.tellg() > 0) {
    tail.seekg(-1, std::ios::end);
    last_complete = tail.get() == '\n';
  }
  std::vector<ojson> out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].empty()) continue;
    ojson j = ojson::parse(lines[i], nullptr, false);
    const bool ok = !j.is_discarded() && j.is_object() && j.contains("point") && j["point"].is_number_unsigned() &&
                    j.contains("axes") && j.contains("report") && j.contains("key") && j.contains("status");
    if (!ok) {
      if (i + 1 == lines.size() && !last_complete) break;
      throw file_error(path, "is not a results file written by tpusim sweep (a line is not a point record)", int(i + 1));
    }
    out.push_back(std::move(j));
  }
  return out;
}

ojson sweep_description(const SweepPlan& plan) {
  const SweepConfig& c = plan.config;
  ojson axes = ojson::array();
  for (size_t i = 0; i < c.axes.size(); ++i) {
    ojson a;
    a["name"] = c.axes[i].name;
    a["path"] = c.axes[i].path;
    a["zip"] = c.axes[i].zip;
    axes.push_back(a);
  }
  ojson plots = ojson::array();
  for (const auto& p : c.plots) {
    ojson j;
    j["name"] = p.name;
    j["kind"] = p.kind;
    j["x"] = p.x;
    j["y"] = p.y;
    j["series"] = p.series;
    j["annotate"] = p.annotate;
    j["logx"] = p.logx;
    j["logy"] = p.logy;
    j["title"] = p.title;
    j["xlabel"] = p.xlabel;
    j["ylabel"] = p.ylabel;
    plots.push_back(j);
  }
  ojson d;
  d["tpusim_sweep"] = 1;  // format version of this file
  d["name"] = c.name;
  d["description"] = c.description;
  d["file"] = c.file;
  d["kind"] = plan.kind;
  d["engine"] = plan.engine;
  d["grid_points"] = plan.grid_points;
  d["points"] = plan.points.size();
  d["sweep_hash"] = plan.sweep_hash;
  d["axes"] = axes;
  d["columns"] = plan.columns;
  // Unit and meaning of each figure column, so that the plot script scales bytes to GiB and labels
  // axes and legends in words rather than column names.
  ojson figures = ojson::object();
  for (const FigureColumn& f : figure_columns())
    if (f.kind == plan.kind) figures[f.name] = {{"unit", f.unit}, {"doc", f.doc}};
  d["figures"] = figures;
  d["plots"] = plots;
  return d;
}

void write_json(const std::string& path, const ojson& j) {
  std::FILE* f = open_or_throw(path, "w");
  put(f, j.dump(2, ' ', false, ojson::error_handler_t::replace) + "\n", path);
  std::fclose(f);
}

ojson read_json(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw file_error(path, "not found");
  std::stringstream ss;
  ss << in.rdbuf();
  ojson j = ojson::parse(ss.str(), nullptr, false);
  if (j.is_discarded()) throw file_error(path, "is not valid JSON");
  return j;
}

std::string first_error_line(const std::string& text) {
  std::istringstream in(text);
  std::string first;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("error: ", 0) == 0) return line.substr(7);
    if (line.rfind("internal error: ", 0) == 0) return line;
    if (first.empty() && line.find_first_not_of(" \t\r") != std::string::npos) first = line;
  }
  return first;
}

}  // namespace tpusim::sweep
