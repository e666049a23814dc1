// Tile assignments of the SPMD pass (hlo_spmd.h), internal to compiler/hlo: how an array's dimensions
// are split over the partitions and which device holds which tile, as XLA's HloSharding says it
// (`{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}`): a device array of shape [tiles..., rep],
// row-major; the devices along `rep` hold the same tile.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compiler/hlo/hlo_ast.h"

namespace tpusim::hlo::spmd {

struct Tiling {
  std::vector<int64_t> tiles;    // per axis (the array's dimensions, then any partial-sum axes)
  int64_t rep = 1;               // devices holding each tile
  std::vector<int64_t> devices;  // row-major over [tiles..., rep]
  bool manual = false;           // `{manual}`: the value is already one partition's (shapes as written)

  int64_t tile_count() const;
  bool replicated() const { return !manual && tile_count() == 1; }
  bool operator==(const Tiling&) const = default;
};

// Every device holds the whole array (rank `rank`, `n` devices in order).
Tiling replicated(size_t rank, int64_t n);
Tiling manual(size_t rank);

// The tiling whose axes have `sizes`, taken from `x`: x's tiled axis d becomes axis map[d] when that
// axis has x's tile count there (map[d] = -1, or another count: the axis is gathered into rep); the
// axes no tiled axis of x covers are split off x's rep, in order. Nothing when rep does not divide.
std::optional<Tiling> remap(const Tiling& x, const std::vector<int>& map, const std::vector<int64_t>& sizes);
// `x` with the tiles of `axes` gathered into rep (always possible).
Tiling untile(const Tiling& x, const std::vector<int>& axes);

// The device groups along `axes` of [tiles..., rep]: one group per combination of the other axes,
// its devices in row-major order of `axes` (the replica_groups of a collective over those axes).
std::vector<std::vector<int64_t>> groups_along(const Tiling& t, const std::vector<int>& axes);

int64_t ceil_div(int64_t a, int64_t b);
// One partition's shape: each tiled dimension ceil(dim / tiles), as XLA pads the last tile.
Shape local_shape(const Shape& global, const Tiling& t);

// "[2,1] rep 2" for notes.
std::string describe(const Tiling& t);

}  // namespace tpusim::hlo::spmd
