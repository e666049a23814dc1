// Device meshes and tensor shardings: how the replicas of an SPMD program share the tensors the
// program means (XLA's HloSharding, JAX's NamedSharding, MaxText's mesh axes), on the native graph.
//
// A graph is one replica's program (the local view: shapes are the replica's share). A node's
// TensorSharding says how its value relates to the whole tensor:
//   * whole (the default): every replica holds the whole value (replicated; or, for a value no step
//     compares across replicas, simply the replica's own, e.g. an activation of its batch share);
//   * split along mesh axis a in dimension d: the replicas along a hold consecutive blocks of d;
//   * partial over mesh axis a: the tensor is the sum of the replicas' values along a (a gradient
//     each data-parallel replica computed from its batch share);
//   * partial maximum over mesh axis a: the tensor is the element-wise maximum of the replicas'
//     values along a (a row maximum over a vocabulary split across the tensor axis).
// The step builders annotate (compiler/step/data_parallel.h, fsdp.h); the partitioner
// (compiler/step/partition.h) derives from the annotations the collectives that reshard a value
// for its readers, by one rule.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "base/enum_names.h"

namespace tpusim::models {

// The mesh axes, in MaxText's names and its major-to-minor order (tensor innermost: its collectives
// are the most frequent, so its replicas are the nearest devices).
enum class MeshAxis : uint8_t { kData, kFsdp, kSequence, kTensor };
inline constexpr int kMeshAxes = 4;
inline const NameTable<MeshAxis>& enum_names(MeshAxis) {
  static const NameTable<MeshAxis> t = {
      {MeshAxis::kData, "data"}, {MeshAxis::kFsdp, "fsdp"}, {MeshAxis::kSequence, "sequence"}, {MeshAxis::kTensor, "tensor"}};
  return t;
}

// A device mesh: the replicas of an SPMD program laid out as an array with one dimension per axis
// (size 1: the axis is not used). Replica id = row-major index over the axes in MeshAxis order.
struct Mesh {
  std::array<uint32_t, kMeshAxes> size{1, 1, 1, 1};
  // Multislice (MaxText's dcn_data_parallelism): this mesh is one slice's, and `slices` slices run
  // it side by side, each on its share of the batch; a sum over the batch axes (data, fsdp) spans
  // them over the data-center network. Not counted in devices().
  uint32_t slices = 1;

  uint32_t operator[](MeshAxis a) const { return size[size_t(a)]; }
  uint32_t devices() const {
    uint32_t n = 1;
    for (uint32_t s : size) n *= s;
    return n;
  }
  // A mesh with one axis of n replicas (data parallelism: {data: n}; FSDP: {fsdp: n}).
  static Mesh along(MeshAxis a, uint32_t n) {
    Mesh m;
    m.size[size_t(a)] = n;
    return m;
  }
};

// The replica groups of a collective along `axis` (XLA replica_groups: the replicas that differ
// only in that axis's coordinate, in order); empty when the axis spans every replica (one group).
std::vector<std::vector<int64_t>> axis_groups(const Mesh& mesh, MeshAxis axis);

// Packed to 5 bytes: graphs of 10^7 nodes carry one per node.
struct TensorSharding {
  static constexpr int kMaxRank = 8;  // dimensions that can be split (4 bits each in `split`)
  uint32_t split = 0;   // per dimension d, bits 4d..4d+3: 0 whole, a + 1 split along mesh axis a
  uint8_t partial = 0;  // bit a: a partial sum over mesh axis a; bit 4 + a: a partial maximum over it

  static TensorSharding whole() { return {}; }
  static TensorSharding split_along(int dim, MeshAxis a) {
    TensorSharding s;
    s.split = uint32_t(uint32_t(a) + 1) << (4 * dim);
    return s;
  }
  static TensorSharding partial_over(MeshAxis a) {
    TensorSharding s;
    s.partial = uint8_t(1u << uint32_t(a));
    return s;
  }
  static TensorSharding partial_max_over(MeshAxis a) {
    TensorSharding s;
    s.partial = uint8_t(1u << (uint32_t(a) + 4));
    return s;
  }
  bool is_whole() const { return split == 0 && partial == 0; }
  std::optional<MeshAxis> axis_of(int dim) const {
    const uint32_t v = (split >> (4 * dim)) & 0xF;
    if (v == 0) return std::nullopt;
    return MeshAxis(v - 1);
  }
  bool is_partial_over(MeshAxis a) const { return partial & (1u << uint32_t(a)); }
  bool is_partial_max_over(MeshAxis a) const { return partial & (1u << (uint32_t(a) + 4)); }
  bool operator==(const TensorSharding&) const = default;
};

}  // namespace tpusim::models
