// The sweep file schema, declared once: it parses, validates, dumps and documents sweep files.
#include "sweep/sweep_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

#include "config/suggest.h"
#include "sweep/columns.h"

namespace tpusim::sweep {

using config::CheckContext;
using config::Schema;

namespace {

bool is_identifier(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

// Words of the constraint language; an axis named like one could not be referred to.
const std::vector<std::string>& reserved_words() {
  static const std::vector<std::string> w = {"and", "or", "not", "true", "false"};
  return w;
}

const Schema<SweepRange>& range_schema() {
  static const Schema<SweepRange> s = [] {
    Schema<SweepRange> s("Axis range",
                         "Numeric values from `start` to `stop` (inclusive, within a relative 1e-9): "
                         "`start, start+step, ...` or, geometric, `start, start*mul, ...`. Give exactly one of "
                         "`step` and `mul`. Values print as integers when they are whole numbers.");
    s.field(&SweepRange::start, "start").doc("first value");
    s.field(&SweepRange::stop, "stop").doc("last value (inclusive)");
    s.field(&SweepRange::step, "step").default_value(0, "none").doc("additive step, > 0");
    s.field(&SweepRange::mul, "mul").default_value(0, "none").doc("geometric factor, > 1");
    s.check([](const SweepRange& r, const CheckContext& c) {
      if (r.step < 0) c.fail("step", "must be > 0 (a range counts up from start to stop)");
      if (r.mul < 0) c.fail("mul", "must be > 1 (a geometric range grows)");
      if ((r.step > 0) == (r.mul > 0))
        c.fail_missing(r.step > 0 ? "mul" : "step", "give exactly one of step (arithmetic) and mul (geometric)",
                       "e.g. {start: 64, stop: 256, step: 64} or {start: 32, stop: 512, mul: 2}");
      if (r.mul > 0 && r.mul <= 1) c.fail("mul", "must be > 1 (a geometric range grows)");
      if (r.mul > 0 && r.start <= 0) c.fail("start", "must be > 0 for a geometric range (mul)");
      if (r.stop < r.start) c.fail("stop", fmt::format("must be >= start ({})", r.start));
    });
    return s;
  }();
  return s;
}

std::string last_key(const std::string& path) {
  std::string k = path.substr(path.rfind('.') == std::string::npos ? 0 : path.rfind('.') + 1);
  std::replace(k.begin(), k.end(), '-', '_');
  return k;
}

const Schema<SweepAxis>& axis_schema() {
  static const Schema<SweepAxis> s = [] {
    Schema<SweepAxis> s("Axis", "One config path and the values it takes: a list (`values`) or a numeric `range`.");
    s.field(&SweepAxis::path, "path")
        .doc("the `--set` path that varies (`hw.` / `workload.` prefixes as in `tpusim run --set`)")
        .details("`hw` or `workload` alone makes the axis choose the base file itself (each value a file path, "
                 "relative to the sweep file; its column shows the file stem)");
    s.field(&SweepAxis::name, "name")
        .default_value("", "last key of path")
        .doc("the axis' column in results.csv and its name in constraints and plots (letters, digits, _)");
    s.field(&SweepAxis::values, "values")
        .size(0, 100000)
        .default_value({}, "none")
        .doc("the values, each written as `--set PATH=VALUE` would take it (a number, a name, a list such as [true, true])");
    s.optional_section(&SweepAxis::range, "range", range_schema());
    s.field(&SweepAxis::labels, "labels")
        .default_value({}, "the values")
        .doc("names shown for the values in results, constraints and plots, one per value (e.g. [mesh, torus] "
             "for [[false, false], [true, true]])");
    s.field(&SweepAxis::zip, "zip")
        .default_value("", "none")
        .doc("axes with the same zip name vary together (same number of values, one dimension); other axes cross");
    s.check([](const SweepAxis& a, const CheckContext& c) {
      if (a.values.empty() == !a.range.has_value())
        c.fail_missing(a.values.empty() ? "values" : "range", "give exactly one of values (a list) and range",
                       "e.g. values: [64, 128, 256] or range: {start: 64, stop: 256, step: 64}");
      if (!a.labels.empty() && a.labels.size() != a.values.size())
        c.fail("labels", fmt::format("needs one label per value ({} values{})", a.values.size(),
                                     a.range ? "; a range has no labels" : ""));
      for (size_t i = 0; i < a.labels.size(); ++i)
        for (size_t j = 0; j < i; ++j)
          if (a.labels[i] == a.labels[j]) c.fail(fmt::format("labels[{}]", i), "labels must differ (each names one value)");
      const std::string name = a.name.empty() ? last_key(a.path) : a.name;
      if (!is_identifier(name))
        c.fail(a.name.empty() ? "path" : "name", "an axis name must be letters, digits and _ (not starting with a digit)",
               a.name.empty() ? "add name: with such a name" : "");
      if (std::find(reserved_words().begin(), reserved_words().end(), name) != reserved_words().end())
        c.fail(a.name.empty() ? "path" : "name", "'" + name + "' is a word of the constraint language",
               "give the axis another name: (e.g. name: " + name + "_axis)");
      const auto cols = known_columns();
      if (std::find(cols.begin(), cols.end(), name) != cols.end())
        c.fail(a.name.empty() ? "path" : "name", "an axis named '" + name + "' would clash with the results column",
               "give the axis another name: (e.g. name: " + name + "_axis)");
    });
    return s;
  }();
  return s;
}

std::vector<std::string> plot_kinds() { return {std::begin(kPlotKinds), std::end(kPlotKinds)}; }

// A name that becomes a file or directory name under the output folder: no '/', no '..' (a sweep
// `name: ../../x` wrote outside it).
bool is_file_stem(const std::string& n) {
  return !n.empty() && std::all_of(n.begin(), n.end(), [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-';
  });
}

const Schema<SweepPlot>& plot_schema() {
  static const Schema<SweepPlot> s = [] {
    Schema<SweepPlot> s("Plot",
                        "One figure drawn from results.csv (points with status ok) by scripts/plot_sweep.py into "
                        "DIR/plots/NAME.png and NAME.svg. Columns are results.csv columns or axis names.");
    s.field(&SweepPlot::name, "name").doc("file stem of the PNG and SVG (letters, digits, _ and -)");
    s.field(&SweepPlot::kind, "kind").one_of(plot_kinds()).default_value("line")
        .doc("`line` (y against a numeric x), `bar` (grouped bars per x category), `stacked_bar` (the y columns "
             "stacked per x category; default y: the training time breakdown), `roofline` (achieved TFLOP/s "
             "against flops/byte, log-log, with the compute and HBM roofs of each hardware point)");
    s.field(&SweepPlot::x, "x").size(0, 8).default_value({}, "flops_per_byte for roofline")
        .doc("x column; bar kinds take several, shown as \"a / b\" categories");
    s.field(&SweepPlot::y, "y").size(0, 16).default_value({}, "by kind")
        .doc("y column(s); default: the breakdown_*_s columns (stacked_bar), achieved_tflop_per_s (roofline)");
    s.field(&SweepPlot::series, "series").default_value("", "none")
        .doc("one line, bar group or marker colour per distinct value of this column");
    s.field(&SweepPlot::annotate, "annotate").default_value("", "none")
        .doc("label each point with this column's value (line, roofline)");
    s.field(&SweepPlot::logx, "logx").default_value(false).doc("logarithmic x axis (line)");
    s.field(&SweepPlot::logy, "logy").default_value(false).doc("logarithmic y axis (line, bar)");
    s.field(&SweepPlot::title, "title").default_value("", "Y vs X").doc("figure title");
    s.field(&SweepPlot::xlabel, "xlabel").default_value("", "the x column").doc("x axis label");
    s.field(&SweepPlot::ylabel, "ylabel").default_value("", "the y column").doc("y axis label");
    s.check([](const SweepPlot& p, const CheckContext& c) {
      if (!is_file_stem(p.name)) c.fail("name", "must be a file stem: letters, digits, _ and -");
      if (p.kind == "roofline") return;
      if (p.x.empty()) c.fail_missing("x", "a " + p.kind + " plot needs an x column");
      if (p.kind == "line" && p.x.size() != 1) c.fail("x", "a line plot takes exactly one x column");
      if ((p.kind == "line" || p.kind == "bar") && p.y.empty()) c.fail_missing("y", "a " + p.kind + " plot needs y column(s)");
    });
    return s;
  }();
  return s;
}

// Fills the documented derived defaults that do not depend on other files.
void fill_defaults(SweepConfig& c) {
  if (c.name.empty()) c.name = config::file_stem(c.file);
  for (auto& a : c.axes)
    if (a.name.empty()) a.name = last_key(a.path);
  for (auto& p : c.plots) {
    if (p.kind == "roofline") {
      if (p.x.empty()) p.x = {"flops_per_byte"};
      if (p.y.empty()) p.y = {"achieved_tflop_per_s"};
    }
    if (p.kind == "stacked_bar" && p.y.empty())
      for (const auto& f : figure_columns())
        if (f.name.rfind("breakdown_", 0) == 0) p.y.push_back(f.name);
  }
}

// The node written at `yaml_path` ("axes[1].values[2]"), or the deepest written ancestor; `*exact`
// says which.
const config::Node& locate(const SweepConfig& c, const std::string& yaml_path, bool* exact) {
  const config::Node* n = &c.root;
  *exact = false;
  size_t i = 0;
  while (i < yaml_path.size()) {
    size_t end = yaml_path.find_first_of(".[", i);
    if (end == std::string::npos) end = yaml_path.size();
    if (end > i) {
      const config::Node* next = n->find(yaml_path.substr(i, end - i));
      if (!next) return *n;
      n = next;
    }
    i = end;
    if (i < yaml_path.size() && yaml_path[i] == '[') {
      const size_t close = yaml_path.find(']', i);
      const size_t idx = std::stoul(yaml_path.substr(i + 1, close - i - 1));
      if (n->kind != config::Node::Kind::Sequence || idx >= n->items.size()) return *n;
      n = &n->items[idx];
      i = close + 1;
    }
    if (i < yaml_path.size() && yaml_path[i] == '.') ++i;
  }
  *exact = true;
  return *n;
}

bool written(const SweepConfig& c, const std::string& yaml_path) {
  bool exact = false;
  locate(c, yaml_path, &exact);
  return exact;
}

// Checks across sections: unique axis and plot names, zip groups of equal length, plot columns.
void check_whole(const SweepConfig& c) {
  std::set<std::string> names;
  for (size_t i = 0; i < c.axes.size(); ++i) {
    const auto& a = c.axes[i];
    if (!names.insert(a.name).second)
      fail_at(c, fmt::format("axes[{}].{}", i, written(c, fmt::format("axes[{}].name", i)) ? "name" : "path"),
              "two axes are named '" + a.name + "' (an axis is named by the last key of its path unless it has a name:)",
              "set name: on one of them");
    for (size_t j = 0; j < i; ++j)
      if (c.axes[j].path == a.path)
        fail_at(c, fmt::format("axes[{}].path", i), fmt::format("axes[{}] already varies this path", j),
                "zip them into one axis' values, or remove one");
  }
  std::set<std::string> plot_names;
  std::vector<std::string> cols = axis_names(c);
  for (const auto& k : known_columns()) cols.push_back(k);
  for (size_t i = 0; i < c.plots.size(); ++i) {
    const SweepPlot& p = c.plots[i];
    if (!plot_names.insert(p.name).second)
      fail_at(c, fmt::format("plots[{}].name", i), "two plots are named '" + p.name + "'");
    auto check_col = [&](const std::string& col, const std::string& at) {
      if (std::find(cols.begin(), cols.end(), col) != cols.end()) return;
      fail_at(c, at, "is not an axis name or a results column", config::suggest(col, cols, "columns"));
    };
    for (size_t j = 0; j < p.x.size(); ++j) check_col(p.x[j], fmt::format("plots[{}].x[{}]", i, j));
    for (size_t j = 0; j < p.y.size(); ++j) check_col(p.y[j], fmt::format("plots[{}].y[{}]", i, j));
    if (!p.series.empty()) check_col(p.series, fmt::format("plots[{}].series", i));
    if (!p.annotate.empty()) check_col(p.annotate, fmt::format("plots[{}].annotate", i));
  }
}

}  // namespace

const Schema<SweepConfig>& sweep_schema() {
  static const Schema<SweepConfig> s = [] {
    Schema<SweepConfig> s("Sweep",
                          "A performance-exploration sweep: `tpusim sweep FILE` runs the base hardware and workload "
                          "once per point of the axes (docs/sweeps.md).");
    s.field(&SweepConfig::name, "name").default_value("", "file stem")
        .doc("sweep name (default output directory out/sweeps/NAME): letters, digits, _ and -");
    s.field(&SweepConfig::description, "description").default_value("", "none").doc("what the sweep asks, for people");
    s.field(&SweepConfig::hw, "hw").default_value("", "the workload's hw:")
        .doc("base hardware: a YAML file relative to the sweep file's directory, or a built-in name (`v3-32`); "
             "omitted: the workload's `hw:`, else the default v3-8");
    s.field(&SweepConfig::workload, "workload").doc("base workload YAML, relative to the sweep file's directory");
    s.field(&SweepConfig::engine, "engine").default_value("", "by workload kind")
        .doc("engine of every point (`systemc` | `analytical`); default as `tpusim run`: systemc for kernels, "
             "analytical for training");
    s.field(&SweepConfig::set, "set").default_value({}, "none")
        .doc("`PATH=VALUE` overrides applied to every point, as `tpusim run --set` (e.g. `workload.steps=20`)");
    s.section_list(&SweepConfig::axes, "axes", axis_schema(), 1, 64);
    s.field(&SweepConfig::constraints, "constraints").default_value({}, "none")
        .doc("expressions over axis names; a point is run only when all are true (docs/sweeps.md, \"Constraints\")")
        .details("Numbers, 'strings', axis names; `+ - * / %`, `== != < <= > >=`, `and or not`, parentheses. "
                 "Example: `rows * count <= 512 and padding != 'longest'`");
    s.field(&SweepConfig::timeout_s, "timeout_s").unit("s").min(0).default_value(0, "none")
        .doc("a point running longer is killed and recorded with status timeout");
    s.field(&SweepConfig::max_jobs, "max_jobs").default_value(0, "no cap")
        .doc("at most this many points run in parallel, whatever --jobs says: for points that need much memory "
             "(a BERT-base step on v3-128 takes ~8 GiB)");
    s.section_list(&SweepConfig::plots, "plots", plot_schema(), 0, 64);
    s.check([](const SweepConfig& w, const CheckContext& c) {
      if (!w.name.empty() && !is_file_stem(w.name))
        c.fail("name", "must be a file stem: letters, digits, _ and - (it names the directory out/sweeps/NAME)");
    });
    return s;
  }();
  return s;
}

std::vector<std::string> axis_names(const SweepConfig& c) {
  std::vector<std::string> n;
  for (const auto& a : c.axes) n.push_back(a.name);
  return n;
}

SweepConfig load_sweep_config_text(const std::string& yaml, const std::string& origin) {
  config::Node root = config::parse_yaml(yaml, origin);
  if (root.kind == config::Node::Kind::Null) throw ConfigError({origin, "", 0, "", "is empty; a sweep needs hw, workload and axes", ""});
  SweepConfig c = sweep_schema().parse(root);
  c.file = origin;
  c.root = std::move(root);
  fill_defaults(c);
  check_whole(c);
  return c;
}

SweepConfig load_sweep_config(const std::string& path) {
  return load_sweep_config_text(config::read_config_file(path, "sweeps"), path);
}

void fail_at(const SweepConfig& c, const std::string& yaml_path, const std::string& rule, const std::string& suggestion) {
  bool exact = false;
  const config::Node& n = locate(c, yaml_path, &exact);
  // Quote the value only when it is the one at yaml_path (an ancestor's text would mislead).
  throw ConfigError({c.file, yaml_path, n.line, exact ? n.text() : "", rule, suggestion});
}

std::string sweep_schema_markdown() { return sweep_schema().markdown() + columns_markdown(); }

}  // namespace tpusim::sweep
