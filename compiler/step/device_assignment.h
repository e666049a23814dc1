// Which core runs each replica of a mesh: the device assignment.
//
// A mesh with one axis (data parallelism, FSDP) runs on the slice's cores in ring order
// (collectives.h ring_order: consecutive cores one hop apart), so its one ring is the slice's. A
// mesh with several axes over a whole 2-D or 3-D slice is laid out as JAX's create_device_mesh lays
// it out on a TPU torus (jax.experimental.mesh_utils, _create_device_mesh_for_nd_torus): each
// logical axis, innermost (tensor) first, takes whole physical dimensions whose sizes multiply to
// its size (one dimension if one fits, else two, else three), and where none fit, a factor of a
// dimension (MaxText's allow_split_physical_axes). So every group along an axis is a sub-grid of the
// torus, the same shape for every group: its members are listed along a cycle of one-hop moves
// (grid_cycle), and the groups are alike, which the engine's symmetric replicas rely on.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "compiler/collectives/collectives.h"
#include "models/sharding.h"
#include "sim/hw/hw_config.h"

namespace tpusim::compiler {

// The physical chip of each device of a mesh of `sizes` (MeshAxis order, row-major device ids as
// models::Mesh numbers them) laid over every chip of topology `t` as above; nullopt when the sizes
// do not multiply to the chip count or cannot be cut from the dimensions.
std::optional<std::vector<uint32_t>> torus_device_order(const TopologyParams& t,
                                                        const std::array<uint32_t, models::kMeshAxes>& sizes);

// The core each replica id of `mesh` (a mesh over cores, as core_mesh makes it; `batch` the axis
// that took a megacore chip's cores) runs on. A megacore chip's cores are the batch axis's innermost
// coordinate: a tensor group is the cores of one index on T chips (each core all-reduces the
// activations of its half of the batch with its counterparts), a data or fsdp group holds whole
// chips (so the gradients' all-reduce is a device all-reduce, collectives_device.cc). The chips:
// torus_device_order for a mesh of two or more axes over the whole slice; otherwise the first ones
// of ring_order(hw), in its order.
std::vector<CoreId> replica_cores(const HwConfig& hw, const models::Mesh& mesh, models::MeshAxis batch);

}  // namespace tpusim::compiler
