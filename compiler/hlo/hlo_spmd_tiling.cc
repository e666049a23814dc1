#include "compiler/hlo/hlo_spmd_tiling.h"

#include <numeric>

namespace tpusim::hlo::spmd {
namespace {

// `v` as an array of `dims` (row-major), transposed so that new axis j is old axis perm[j], flattened.
std::vector<int64_t> permute(const std::vector<int64_t>& v, const std::vector<int64_t>& dims, const std::vector<int>& perm) {
  const size_t r = dims.size();
  std::vector<int64_t> stride(r), nd(r), idx(r, 0), out;
  int64_t s = 1;
  for (size_t i = r; i-- > 0;) {
    stride[i] = s;
    s *= dims[i];
  }
  for (size_t j = 0; j < r; ++j) nd[j] = dims[size_t(perm[j])];
  out.reserve(v.size());
  for (size_t n = 0; n < v.size(); ++n) {
    int64_t src = 0;
    for (size_t j = 0; j < r; ++j) src += idx[j] * stride[size_t(perm[j])];
    out.push_back(v[size_t(src)]);
    for (size_t j = r; j-- > 0;) {
      if (++idx[j] < nd[j]) break;
      idx[j] = 0;
    }
  }
  return out;
}

int64_t product(const std::vector<int64_t>& v) { return std::accumulate(v.begin(), v.end(), int64_t(1), std::multiplies<>()); }

}  // namespace

int64_t Tiling::tile_count() const { return product(tiles); }

Tiling replicated(size_t rank, int64_t n) {
  Tiling t;
  t.tiles.assign(rank, 1);
  t.rep = n;
  t.devices.resize(size_t(n));
  std::iota(t.devices.begin(), t.devices.end(), int64_t(0));
  return t;
}

Tiling manual(size_t rank) {
  Tiling t;
  t.tiles.assign(rank, 1);
  t.manual = true;
  return t;
}

std::optional<Tiling> remap(const Tiling& x, const std::vector<int>& map, const std::vector<int64_t>& sizes) {
  if (x.manual) return std::nullopt;
  struct Axis {
    int64_t size;
    int target;  // an axis of the result, or -1: gathered into rep
  };
  std::vector<Axis> src;
  std::vector<char> covered(sizes.size(), 0);
  for (size_t d = 0; d < x.tiles.size(); ++d) {
    const int64_t t = x.tiles[d];
    if (t == 1) continue;  // a size-1 axis does not change the device order
    const int k = d < map.size() ? map[d] : -1;
    if (k >= 0 && size_t(k) < sizes.size() && sizes[size_t(k)] == t && !covered[size_t(k)]) {
      covered[size_t(k)] = 1;
      src.push_back({t, k});
    } else {
      src.push_back({t, -1});
    }
  }
  int64_t u = 1;
  for (size_t k = 0; k < sizes.size(); ++k)
    if (!covered[k] && sizes[k] > 1) u *= sizes[k];
  if (u <= 0 || x.rep % u != 0) return std::nullopt;
  for (size_t k = 0; k < sizes.size(); ++k)
    if (!covered[k] && sizes[k] > 1) src.push_back({sizes[k], int(k)});
  src.push_back({x.rep / u, -1});
  std::vector<int> perm;
  std::vector<int64_t> dims;
  for (const Axis& a : src) dims.push_back(a.size);
  for (size_t k = 0; k < sizes.size(); ++k)
    for (size_t s = 0; s < src.size(); ++s)
      if (src[s].target == int(k)) perm.push_back(int(s));
  for (size_t s = 0; s < src.size(); ++s)
    if (src[s].target < 0) perm.push_back(int(s));
  Tiling r;
  r.tiles = sizes;
  r.rep = int64_t(x.devices.size()) / product(sizes);
  r.devices = permute(x.devices, dims, perm);
  return r;
}

Tiling untile(const Tiling& x, const std::vector<int>& axes) {
  if (x.manual) return x;
  std::vector<int> map(x.tiles.size());
  std::vector<int64_t> sizes = x.tiles;
  for (size_t d = 0; d < map.size(); ++d) map[d] = int(d);
  for (int a : axes) {
    if (a < 0 || size_t(a) >= map.size()) continue;  // not an axis of x
    map[size_t(a)] = -1;
    sizes[size_t(a)] = 1;
  }
  return *remap(x, map, sizes);  // every remaining axis is covered: nothing to split off rep
}

std::vector<std::vector<int64_t>> groups_along(const Tiling& t, const std::vector<int>& axes) {
  std::vector<int64_t> dims = t.tiles;
  dims.push_back(t.rep);
  std::vector<char> in(dims.size(), 0);
  int64_t size = 1;
  for (int a : axes) {
    in[size_t(a)] = 1;
    size *= dims[size_t(a)];
  }
  const int64_t n = int64_t(t.devices.size());
  std::vector<std::vector<int64_t>> groups(size_t(size > 0 ? n / size : 0));
  std::vector<int64_t> idx(dims.size(), 0);
  for (int64_t p = 0; p < n; ++p) {
    int64_t key = 0;
    for (size_t i = 0; i < dims.size(); ++i)
      if (!in[i]) key = key * dims[i] + idx[i];
    groups.at(size_t(key)).push_back(t.devices[size_t(p)]);
    for (size_t i = dims.size(); i-- > 0;) {
      if (++idx[i] < dims[i]) break;
      idx[i] = 0;
    }
  }
  return groups;
}

int64_t ceil_div(int64_t a, int64_t b) { return b <= 0 ? a : (a + b - 1) / b; }

Shape local_shape(const Shape& global, const Tiling& t) {
  if (global.is_tuple() || t.manual) return global;
  Shape s = global;
  for (size_t i = 0; i < s.dims.size() && i < t.tiles.size(); ++i)
    if (s.dims[i] > 0) s.dims[i] = ceil_div(s.dims[i], t.tiles[i]);
  return s;
}

std::string describe(const Tiling& t) {
  if (t.manual) return "manual";
  if (t.replicated()) return "replicated";
  std::string s = "[";
  for (size_t i = 0; i < t.tiles.size(); ++i) {
    if (i) s += ',';  // appended apart: `(i ? "," : "") + to_string(...)` trips GCC 12's false -Wrestrict
    s += std::to_string(t.tiles[i]);
  }
  s += "]";
  if (t.rep > 1) s += " x" + std::to_string(t.rep) + " replicated";
  return s;
}

}  // namespace tpusim::hlo::spmd
