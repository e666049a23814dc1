#include "sweep/expand.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <map>

#include "sweep/constraint.h"

namespace tpusim::sweep {

namespace fs = std::filesystem;

namespace {

// A range value: whole numbers print as integers, others with 12 significant digits (so that
// 0.1 + 2 * 0.1 prints 0.3, not 0.30000000000000004).
std::string number_text(double v) {
  if (std::fabs(v) < 1e15 && v == std::round(v)) return fmt::format("{}", static_cast<long long>(std::llround(v)));
  return fmt::format("{}", std::stod(fmt::format("{:.12g}", v)));
}

constexpr size_t kMaxAxisValues = 100000;

bool is_file_axis(const SweepAxis& a) { return a.path == "hw" || a.path == "workload"; }

}  // namespace

std::vector<AxisValue> axis_values(const SweepConfig& c, size_t i) {
  const SweepAxis& a = c.axes[i];
  std::vector<AxisValue> out;
  if (a.range) {
    const SweepRange& r = *a.range;
    const double limit = r.stop + 1e-9 * std::max(std::fabs(r.stop), std::fabs(r.start));
    for (size_t k = 0;; ++k) {
      // From start each time (not by accumulation), so that rounding errors do not add up.
      const double v = r.step > 0 ? r.start + double(k) * r.step : r.start * std::pow(r.mul, double(k));
      if (v > limit) break;
      if (out.size() == kMaxAxisValues)
        fail_at(c, fmt::format("axes[{}].range", i), fmt::format("gives more than {} values", kMaxAxisValues));
      const std::string t = number_text(v);
      out.push_back({t, t});
    }
    return out;
  }
  for (size_t j = 0; j < a.values.size(); ++j) {
    const config::YamlValue& v = a.values[j];
    if (is_file_axis(a)) {
      // A file chosen by the axis: relative to the sweep file, like the base hw/workload.
      const std::string written = v.display();
      const fs::path p = fs::path(written).is_absolute() ? fs::path(written)
                                                         : (fs::path(c.file).parent_path() / written).lexically_normal();
      out.push_back({p.string(), p.stem().string()});
    } else {
      out.push_back({v.text, v.display()});
    }
    if (!a.labels.empty()) out.back().display = a.labels[j];
  }
  return out;
}

Expansion expand(const SweepConfig& c) {
  // Dimensions: each axis alone, or the axes of one zip group together (at the first one's place).
  std::vector<std::vector<size_t>> dims;
  std::map<std::string, size_t> group_dim;
  for (size_t i = 0; i < c.axes.size(); ++i) {
    const std::string& z = c.axes[i].zip;
    if (!z.empty() && group_dim.count(z)) {
      dims[group_dim[z]].push_back(i);
      continue;
    }
    if (!z.empty()) group_dim[z] = dims.size();
    dims.push_back({i});
  }
  std::vector<std::vector<AxisValue>> values;
  for (size_t i = 0; i < c.axes.size(); ++i) values.push_back(axis_values(c, i));
  Expansion e;
  e.grid_points = 1;
  std::vector<size_t> dim_size;
  for (const auto& d : dims) {
    const size_t n = values[d[0]].size();
    for (size_t i : d)
      if (values[i].size() != n)
        fail_at(c, fmt::format("axes[{}].{}", i, c.axes[i].range ? "range" : "values"),
                fmt::format("has {} values but axis '{}' of the same zip group '{}' has {}: zipped axes vary "
                            "together and need as many values each",
                            values[i].size(), c.axes[d[0]].name, c.axes[i].zip, n));
    dim_size.push_back(n);
    e.grid_points *= n;
    if (e.grid_points > kMaxGridPoints)
      fail_at(c, "axes", fmt::format("make more than {} points", kMaxGridPoints), "split the sweep, or use fewer values");
  }

  const std::vector<std::string> names = axis_names(c);
  std::vector<Constraint> constraints;
  for (size_t k = 0; k < c.constraints.size(); ++k) {
    try {
      constraints.push_back(Constraint::parse(c.constraints[k], names));
    } catch (const ExprError& err) {
      fail_at(c, fmt::format("constraints[{}]", k), fmt::format("{} (at column {})", err.what(), err.column() + 1));
    }
  }

  std::vector<size_t> idx(dims.size(), 0);
  for (uint64_t id = 0; id < e.grid_points; ++id) {
    // idx is the mixed-radix digits of id, last dimension fastest.
    uint64_t rest = id;
    for (size_t d = dims.size(); d-- > 0;) {
      idx[d] = rest % dim_size[d];
      rest /= dim_size[d];
    }
    SweepPoint p;
    p.id = id;
    p.values.resize(c.axes.size());
    for (size_t d = 0; d < dims.size(); ++d)
      for (size_t i : dims[d]) p.values[i] = values[i][idx[d]];
    std::vector<ExprValue> ev;
    for (const auto& v : p.values) ev.push_back(expr_value(v.display));
    bool keep = true;
    for (size_t k = 0; k < constraints.size() && keep; ++k) {
      try {
        keep = constraints[k].holds(ev);
      } catch (const ExprError& err) {
        std::string at;
        for (size_t i = 0; i < names.size(); ++i) at += fmt::format("{}{}={}", i ? ", " : "", names[i], p.values[i].display);
        fail_at(c, fmt::format("constraints[{}]", k), fmt::format("{} (at the point {})", err.what(), at));
      }
    }
    if (keep) e.points.push_back(std::move(p));
  }
  return e;
}

std::vector<SweepPoint> shard(const std::vector<SweepPoint>& points, uint64_t index, uint64_t count) {
  std::vector<SweepPoint> out;
  for (size_t k = 0; k < points.size(); ++k)
    if (k % count == index) out.push_back(points[k]);
  return out;
}

}  // namespace tpusim::sweep
