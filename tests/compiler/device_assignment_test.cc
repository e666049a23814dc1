// The device assignment (compiler/step/device_assignment.h): a mesh of several axes over a torus is
// laid out as JAX's create_device_mesh does, each axis on whole physical dimensions where they fit
// and on a factor of one otherwise; every chip once; every group along an axis a sub-grid listed
// along a cycle of one-step moves, all groups of an axis alike. A one-axis mesh keeps the ring order.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "compiler/step/device_assignment.h"
#include "compiler/step/partition.h"
#include "sim/ici/ici_timing.h"

namespace tpusim::compiler {
namespace {

using models::MeshAxis;

TopologyParams torus(std::vector<uint32_t> dims) { return {dims, std::vector<bool>(dims.size(), true)}; }

models::Mesh mesh_of(uint32_t data, uint32_t fsdp, uint32_t tensor) {
  models::Mesh m;
  m.size = {data, fsdp, 1, tensor};
  return m;
}

// Per group along `axis`: the ICI hops between consecutive members, the closing pair included.
std::vector<std::vector<uint32_t>> group_hops(const TopologyParams& t, const std::vector<uint32_t>& order,
                                              const models::Mesh& m, MeshAxis axis) {
  std::vector<std::vector<int64_t>> groups = axis_groups(m, axis);
  if (groups.empty()) {  // one group of all
    groups.emplace_back();
    for (int64_t r = 0; r < int64_t(m.devices()); ++r) groups.back().push_back(r);
  }
  std::vector<std::vector<uint32_t>> out;
  for (const auto& g : groups) {
    std::vector<uint32_t>& h = out.emplace_back();
    for (size_t i = 0; i < g.size(); ++i)
      h.push_back(ici_hops(t, order[size_t(g[i])], order[size_t(g[(i + 1) % g.size()])]));
  }
  return out;
}

void expect_every_chip_once(const std::vector<uint32_t>& order, uint32_t chips) {
  std::set<uint32_t> seen(order.begin(), order.end());
  EXPECT_EQ(order.size(), chips);
  EXPECT_EQ(seen.size(), chips);
  EXPECT_LT(*seen.rbegin(), chips);
}

TEST(DeviceAssignment, WholeDimensionsGiveOneHopRings) {
  // v5p-128: 4 x 4 x 4 chips. tensor 4 takes x, fsdp 16 takes y x z: every ring step is one hop.
  const TopologyParams t = torus({4, 4, 4});
  const models::Mesh m = mesh_of(1, 16, 4);
  const auto order = torus_device_order(t, m.size);
  ASSERT_TRUE(order);
  expect_every_chip_once(*order, 64);
  for (MeshAxis a : {MeshAxis::kTensor, MeshAxis::kFsdp})
    for (const auto& h : group_hops(t, *order, m, a)) EXPECT_EQ(h, std::vector<uint32_t>(h.size(), 1u)) << int(a);
  // The tensor group of device 0 runs along x.
  for (uint32_t k = 0; k < 4; ++k) EXPECT_EQ(chip_coords(t, (*order)[k])[0], k);
}

TEST(DeviceAssignment, AnAxisLargerThanADimensionSplitsTheNext) {
  // tensor 8 on 4 x 4 x 4: x and half of y (one hop each step); fsdp 8: the other half of y (two
  // hops a step, round the ring) and z. Every group of an axis has the same hops.
  const TopologyParams t = torus({4, 4, 4});
  const models::Mesh m = mesh_of(1, 8, 8);
  const auto order = torus_device_order(t, m.size);
  ASSERT_TRUE(order);
  expect_every_chip_once(*order, 64);
  const auto tensor = group_hops(t, *order, m, MeshAxis::kTensor);
  for (const auto& h : tensor) EXPECT_EQ(h, std::vector<uint32_t>(8, 1u));
  const auto fsdp = group_hops(t, *order, m, MeshAxis::kFsdp);
  for (const auto& h : fsdp) {
    EXPECT_EQ(h, fsdp.front());
    EXPECT_EQ(std::count(h.begin(), h.end(), 2u) + std::count(h.begin(), h.end(), 1u), 8);
  }
}

TEST(DeviceAssignment, GridsWithoutWraparoundAndTwoAxesOfData) {
  // v6e-8: 2 x 4 chips, no wraparound. tensor 2 takes x; data 4 takes y (a line: its closing pair
  // is 3 hops apart, as on the slice's own ring order).
  const TopologyParams t{{2, 4}, {false, false}};
  const models::Mesh m = mesh_of(4, 1, 2);
  const auto order = torus_device_order(t, m.size);
  ASSERT_TRUE(order);
  expect_every_chip_once(*order, 8);
  for (const auto& h : group_hops(t, *order, m, MeshAxis::kTensor)) EXPECT_EQ(h, (std::vector<uint32_t>{1, 1}));
  for (const auto& h : group_hops(t, *order, m, MeshAxis::kData)) EXPECT_EQ(h, (std::vector<uint32_t>{1, 1, 1, 3}));
  // Three axes on 16 x 16 (v6e-256): tensor 4 a factor of x, fsdp 16 y, data 4 the rest of x.
  const TopologyParams big = torus({16, 16});
  const models::Mesh m3 = mesh_of(4, 16, 4);
  const auto o3 = torus_device_order(big, m3.size);
  ASSERT_TRUE(o3);
  expect_every_chip_once(*o3, 256);
  for (const auto& h : group_hops(big, *o3, m3, MeshAxis::kFsdp)) EXPECT_EQ(h, std::vector<uint32_t>(16, 1u));
  for (const auto& h : group_hops(big, *o3, m3, MeshAxis::kData)) EXPECT_EQ(h, std::vector<uint32_t>(4, 4u));
}

TEST(DeviceAssignment, SizesThatDoNotFitAreRefused) {
  EXPECT_FALSE(torus_device_order(torus({4, 4, 4}), mesh_of(1, 8, 4).size));   // 32 devices on 64 chips
  EXPECT_FALSE(torus_device_order(torus({4, 4, 4}), mesh_of(1, 64, 3).size));  // not a product of the dims
}

TEST(DeviceAssignment, MegacoreCoresAreTheBatchAxisInnermostCoordinate) {
  // v5p-128 (64 chips of 2 cores), fsdp 16 x tensor 4 over chips: the core mesh fsdp 32 x tensor 4.
  HwConfig hw;
  hw.chip.cores = 2;
  hw.chip.megacore = true;
  hw.slice.topology = torus({4, 4, 4});
  const models::Mesh cores = core_mesh(mesh_of(1, 16, 4), 2, MeshAxis::kFsdp);
  const std::vector<CoreId> rc = replica_cores(hw, cores, MeshAxis::kFsdp);
  ASSERT_EQ(rc.size(), 128u);
  std::set<std::pair<uint32_t, uint32_t>> seen;
  for (const CoreId& c : rc) seen.insert({c.chip, c.core});
  EXPECT_EQ(seen.size(), 128u);
  for (const auto& g : axis_groups(cores, MeshAxis::kTensor)) {
    std::set<uint32_t> index;
    for (int64_t r : g) index.insert(rc[size_t(r)].core);
    EXPECT_EQ(index.size(), 1u);  // the cores of one index on 4 chips
    for (size_t i = 0; i < g.size(); ++i)
      EXPECT_EQ(ici_hops(hw.slice.topology, rc[size_t(g[i])].chip, rc[size_t(g[(i + 1) % g.size()])].chip), 1u);
  }
  for (const auto& g : axis_groups(cores, MeshAxis::kFsdp)) {  // whole chips: both cores of 16 chips
    std::set<uint32_t> chips;
    for (int64_t r : g) chips.insert(rc[size_t(r)].chip);
    EXPECT_EQ(chips.size(), 16u);
  }
  // One axis: the ring order, as before.
  const models::Mesh fsdp = core_mesh(models::Mesh::along(MeshAxis::kFsdp, 64), 2, MeshAxis::kFsdp);
  const std::vector<CoreId> ring = ring_order(hw), one = replica_cores(hw, fsdp, MeshAxis::kFsdp);
  for (size_t r = 0; r < one.size(); ++r) EXPECT_EQ(one[r], ring[r]);
}

}  // namespace
}  // namespace tpusim::compiler
