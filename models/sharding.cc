#include "models/sharding.h"

namespace tpusim::models {

std::vector<std::vector<int64_t>> axis_groups(const Mesh& mesh, MeshAxis axis) {
  const int64_t n = mesh.devices(), size = mesh[axis];
  if (size == n) return {};
  int64_t stride = 1;  // replica-id step of one coordinate along `axis` (row-major, MeshAxis order)
  for (int a = int(axis) + 1; a < kMeshAxes; ++a) stride *= mesh.size[size_t(a)];
  std::vector<std::vector<int64_t>> groups;
  for (int64_t base = 0; base < n; ++base) {
    if ((base / stride) % size != 0) continue;  // not the first replica of its group
    std::vector<int64_t>& g = groups.emplace_back();
    for (int64_t k = 0; k < size; ++k) g.push_back(base + k * stride);
  }
  return groups;
}

}  // namespace tpusim::models
