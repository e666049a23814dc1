// From a sweep file to its points: each axis' values (lists, ranges), the grid of dimensions (an axis,
// or a zip group of axes varying together) and the constraints. Pure: no config files are read.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sweep/sweep_config.h"

namespace tpusim::sweep {

struct AxisValue {
  std::string set_value;  // VALUE of `--set PATH=VALUE` (YAML flow text); for an hw/workload axis the file path
  std::string display;    // results.csv cell and value in constraints: the axis' label for it, else a
                          // scalar as written, a list as flow text, a file axis' file stem
};

struct SweepPoint {
  // Index in the full grid, first dimension slowest (points a constraint skips leave gaps), so ids
  // stay put when constraints change.
  uint64_t id = 0;
  std::vector<AxisValue> values;  // one per axis, in file order
};

struct Expansion {
  std::vector<SweepPoint> points;  // sorted by id
  uint64_t grid_points = 0;        // before constraints
};

// Values of one axis (a range expanded). Throws ConfigError at the axis.
std::vector<AxisValue> axis_values(const SweepConfig& c, size_t axis);

// All points. Throws ConfigError (unequal zip groups, too many points, a constraint that does not
// parse or fails to evaluate) at the sweep file's line.
Expansion expand(const SweepConfig& c);

// Largest grid accepted (a typo in a range should not start a billion runs).
inline constexpr uint64_t kMaxGridPoints = 1000000;

// `--shard I/N`: the points whose position in `points` is I modulo N. Round-robin over the points
// that run (not over ids) so that constraints cannot leave a shard empty.
std::vector<SweepPoint> shard(const std::vector<SweepPoint>& points, uint64_t index, uint64_t count);

}  // namespace tpusim::sweep
