#include "compiler/step/device_assignment.h"

#include <stdexcept>
#include <string>

#include "sim/ici/ici_timing.h"

namespace tpusim::compiler {

namespace {

using models::MeshAxis;

// A factor of a physical dimension that a logical axis runs along: coordinate k of it is physical
// coordinate k * stride of `dim` (plus the other factors' parts). `wraps`: the factor is the
// dimension's outermost and the dimension is a ring, so its last coordinate is one step (stride
// hops) from its first.
struct Part {
  uint32_t dim = 0, size = 1, stride = 1;
  bool wraps = false;
};

// The whole, not yet used dimensions whose sizes multiply to `s`: one if one fits, else two, else
// three, each time the first such set in dimension order (JAX's itertools.combinations search).
std::vector<uint32_t> whole_dims(const std::vector<uint32_t>& dims, const std::vector<uint32_t>& taken, uint32_t s) {
  std::vector<uint32_t> free;
  for (uint32_t d = 0; d < dims.size(); ++d)
    if (dims[d] > 1 && taken[d] == 1) free.push_back(d);
  const size_t f = free.size();
  for (size_t i = 0; i < f; ++i)
    if (dims[free[i]] == s) return {free[i]};
  for (size_t i = 0; i < f; ++i)
    for (size_t j = i + 1; j < f; ++j)
      if (dims[free[i]] * dims[free[j]] == s) return {free[i], free[j]};
  for (size_t i = 0; i < f; ++i)
    for (size_t j = i + 1; j < f; ++j)
      for (size_t k = j + 1; k < f; ++k)
        if (dims[free[i]] * dims[free[j]] * dims[free[k]] == s) return {free[i], free[j], free[k]};
  return {};
}

// The parts' coordinates in a cycle of one-step moves: one part in order, two as a grid cycle,
// three as a grid cycle whose rows are the outer two parts in boustrophedon order (consecutive rows
// one step apart).
std::vector<std::vector<uint32_t>> part_cycle(const std::vector<Part>& parts) {
  std::vector<std::vector<uint32_t>> out;
  const uint32_t n0 = parts[0].size;
  if (parts.size() == 1) {
    for (uint32_t k = 0; k < n0; ++k) out.push_back({k});
    return out;
  }
  const uint32_t n1 = parts[1].size, n2 = parts.size() > 2 ? parts[2].size : 1;
  std::vector<std::pair<uint32_t, uint32_t>> rows;
  for (uint32_t z = 0; z < n2; ++z)
    for (uint32_t i = 0; i < n1; ++i) rows.emplace_back(z % 2 ? n1 - 1 - i : i, z);
  const bool row_wraps = parts.size() == 2 && parts[1].wraps;
  for (uint32_t id : grid_cycle(n0, n1 * n2, parts[0].wraps, row_wraps)) {
    const auto [y, z] = rows[id / n0];
    out.push_back(parts.size() == 2 ? std::vector<uint32_t>{id % n0, y} : std::vector<uint32_t>{id % n0, y, z});
  }
  return out;
}

}  // namespace

std::optional<std::vector<uint32_t>> torus_device_order(const TopologyParams& t,
                                                        const std::array<uint32_t, models::kMeshAxes>& sizes) {
  const std::vector<uint32_t>& dims = t.dims;
  uint32_t chips = 1, devices = 1;
  for (uint32_t d : dims) chips *= d;
  for (uint32_t s : sizes) devices *= s;
  if (devices != chips || dims.size() > kMaxIciDims) return std::nullopt;
  std::vector<uint32_t> taken(dims.size(), 1);  // per dimension: the product of the factors used
  std::array<std::vector<Part>, models::kMeshAxes> parts;
  for (int a = models::kMeshAxes - 1; a >= 0; --a) {
    const uint32_t s = sizes[size_t(a)];
    if (s == 1) continue;
    std::vector<std::pair<uint32_t, uint32_t>> cut;  // (dimension, factor), innermost first
    for (uint32_t d : whole_dims(dims, taken, s)) cut.emplace_back(d, dims[d]);
    if (cut.empty()) {  // split: the rest of each dimension in order, or the factor still needed
      uint32_t have = 1;
      for (uint32_t d = 0; d < dims.size() && have < s; ++d) {
        const uint32_t rest = dims[d] / taken[d], need = s / have;
        if (rest == 1 || s % have != 0) continue;
        if (need % rest == 0) cut.emplace_back(d, rest), have *= rest;
        else if (rest % need == 0) cut.emplace_back(d, need), have *= need;
      }
      if (have != s) return std::nullopt;
    }
    for (const auto& [d, f] : cut) {
      Part p{d, f, taken[d], false};
      taken[d] *= f;
      p.wraps = taken[d] == dims[d] && ici_ring(t, d);
      parts[size_t(a)].push_back(p);
    }
  }
  // Each axis's coordinate as a physical offset, along its cycle.
  std::array<std::vector<ChipCoords>, models::kMeshAxes> offset;
  for (int a = 0; a < models::kMeshAxes; ++a) {
    if (parts[size_t(a)].empty()) {
      offset[size_t(a)].assign(1, ChipCoords{});
      continue;
    }
    for (const std::vector<uint32_t>& k : part_cycle(parts[size_t(a)])) {
      ChipCoords c{};
      for (size_t i = 0; i < k.size(); ++i) c[parts[size_t(a)][i].dim] += k[i] * parts[size_t(a)][i].stride;
      offset[size_t(a)].push_back(c);
    }
  }
  std::vector<uint32_t> order(devices);
  for (uint32_t id = 0; id < devices; ++id) {
    ChipCoords c{};
    uint32_t rest = id;
    for (int a = models::kMeshAxes - 1; a >= 0; --a) {
      const ChipCoords& o = offset[size_t(a)][rest % sizes[size_t(a)]];
      rest /= sizes[size_t(a)];
      for (size_t d = 0; d < dims.size(); ++d) c[d] += o[d];
    }
    order[id] = chip_at(t, c);
  }
  return order;
}

std::vector<CoreId> replica_cores(const HwConfig& hw, const models::Mesh& mesh, MeshAxis batch) {
  const std::vector<CoreId> ring = ring_order(hw);
  const uint32_t n = mesh.devices();
  if (n > ring.size())
    throw std::invalid_argument("replica_cores: a mesh of " + std::to_string(n) + " replicas on a slice of " +
                                std::to_string(ring.size()) + " cores");
  const uint32_t c = cores_per_device(hw.chip);
  // The mesh over chips: the batch axis without the chip's cores.
  std::array<uint32_t, models::kMeshAxes> chip_sizes = mesh.size;
  const bool per_chip = chip_sizes[size_t(batch)] % c == 0;
  if (per_chip) chip_sizes[size_t(batch)] /= c;
  int axes = 0;
  for (uint32_t s : chip_sizes) axes += s > 1;
  std::optional<std::vector<uint32_t>> torus;
  if (per_chip && axes >= 2) torus = torus_device_order(hw.slice.topology, chip_sizes);
  // The axes inside the batch axes (sequence, tensor): the chip's cores go just outside them.
  const uint32_t inner = mesh[MeshAxis::kSequence] * mesh[MeshAxis::kTensor];
  std::vector<CoreId> out(n);
  for (uint32_t r = 0; r < n; ++r) {
    const uint32_t rest = r / inner, core = rest % c, chip = (rest / c) * inner + r % inner;
    out[r] = torus ? CoreId{(*torus)[chip], core} : ring[size_t(chip) * c + core];  // ring_order lists a chip's cores together
  }
  return out;
}

}  // namespace tpusim::compiler
