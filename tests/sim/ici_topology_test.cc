// unit: the slice topology, dimension-order routing and the contention-free transfer formulas of
// sim/ici/ici_timing.h (shared by both engines and the compiler's cost model).
#include <gtest/gtest.h>

#include <set>

#include "sim/hw/resolved_hw.h"
#include "sim/ici/ici_timing.h"
#include "tests/sim/test_hw.h"

namespace tpusim {
namespace {

TopologyParams topo(std::vector<uint32_t> dims, std::vector<bool> wrap) { return {std::move(dims), std::move(wrap)}; }

constexpr uint32_t kXp = 0, kXm = 1, kYp = 2, kYm = 3, kZp = 4, kZm = 5;

TEST(IciTopology, PortNamesAndCoordinates) {
  EXPECT_EQ(ici_port_name(kXp), "x+");
  EXPECT_EQ(ici_port_name(kXm), "x-");
  EXPECT_EQ(ici_port_name(kYm), "y-");
  EXPECT_EQ(ici_port_name(kZp), "z+");
  // chip id = x + d0 * (y + d1 * z)
  const TopologyParams t = topo({4, 2, 3}, {false, false, false});
  EXPECT_EQ(chip_at(t, {1, 1, 2}), 1u + 4 * (1 + 2 * 2));
  for (uint32_t c = 0; c < 24; ++c) EXPECT_EQ(chip_at(t, chip_coords(t, c)), c);
  EXPECT_EQ(chip_coords(t, 13), (ChipCoords{1, 1, 1}));
}

// v3-8: 2x2 mesh. chip0 (0,0) chip1 (1,0) chip2 (0,1) chip3 (1,1).
TEST(IciTopology, TwoByTwoMeshNeighboursAndHops) {
  const TopologyParams t = topo({2, 2}, {false, false});
  EXPECT_EQ(ici_neighbour(t, 0, kXp), 1u);
  EXPECT_EQ(ici_neighbour(t, 0, kYp), 2u);
  EXPECT_FALSE(ici_neighbour(t, 0, kXm));  // mesh edge
  EXPECT_FALSE(ici_neighbour(t, 0, kYm));
  EXPECT_EQ(ici_neighbour(t, 3, kXm), 2u);
  EXPECT_EQ(ici_neighbour(t, 3, kYm), 1u);
  EXPECT_EQ(ici_ports_of(t, 0), (std::vector<uint32_t>{kXp, kYp}));
  EXPECT_EQ(ici_ports_of(t, 3), (std::vector<uint32_t>{kXm, kYm}));
  EXPECT_EQ(ici_hops(t, 0, 0), 0u);
  EXPECT_EQ(ici_hops(t, 0, 1), 1u);
  EXPECT_EQ(ici_hops(t, 0, 2), 1u);
  EXPECT_EQ(ici_hops(t, 0, 3), 2u);
  EXPECT_EQ(ici_hops(t, 1, 2), 2u);
  // Dimension order: x first, then y.
  EXPECT_EQ(ici_path(t, 0, 3), (std::vector<IciHop>{{0, kXp}, {1, kYp}}));
  EXPECT_EQ(ici_path(t, 3, 0), (std::vector<IciHop>{{3, kXm}, {2, kYm}}));
  EXPECT_EQ(ici_path(t, 1, 2), (std::vector<IciHop>{{1, kXm}, {0, kYp}}));
  EXPECT_TRUE(ici_path(t, 2, 2).empty());
}

// 4x4 (v3-32): a mesh has no wraparound links, a torus takes the shorter way round.
TEST(IciTopology, FourByFourMeshVersusTorus) {
  const TopologyParams mesh = topo({4, 4}, {false, false});
  const TopologyParams torus = topo({4, 4}, {true, true});
  EXPECT_FALSE(ici_neighbour(mesh, 3, kXp));
  EXPECT_EQ(ici_neighbour(torus, 3, kXp), 0u);  // (3,0) wraps to (0,0)
  EXPECT_EQ(ici_neighbour(torus, 0, kYm), 12u);  // (0,0) wraps to (0,3)
  EXPECT_EQ(ici_ports_of(mesh, 0).size(), 2u);
  EXPECT_EQ(ici_ports_of(torus, 0).size(), 4u);
  // Corner to corner: 3 + 3 hops on the mesh, 1 + 1 on the torus (through the wrap links).
  EXPECT_EQ(ici_hops(mesh, 0, 15), 6u);
  EXPECT_EQ(ici_hops(torus, 0, 15), 2u);
  EXPECT_EQ(ici_path(torus, 0, 15), (std::vector<IciHop>{{0, kXm}, {3, kYm}}));
  // Distance 2 on a ring of 4 is a tie: the positive way.
  EXPECT_EQ(ici_hops(torus, 0, 2), 2u);
  EXPECT_EQ(ici_path(torus, 0, 2), (std::vector<IciHop>{{0, kXp}, {1, kXp}}));
  EXPECT_EQ(ici_path(torus, 2, 0), (std::vector<IciHop>{{2, kXp}, {3, kXp}}));
  // Worst case over all pairs: mesh diameter 6, torus 4; mean hops 2.5 vs 2.
  uint32_t mesh_max = 0, torus_max = 0, mesh_sum = 0, torus_sum = 0;
  for (uint32_t a = 0; a < 16; ++a) {
    for (uint32_t b = 0; b < 16; ++b) {
      mesh_max = std::max(mesh_max, ici_hops(mesh, a, b));
      torus_max = std::max(torus_max, ici_hops(torus, a, b));
      mesh_sum += ici_hops(mesh, a, b);
      torus_sum += ici_hops(torus, a, b);
      EXPECT_EQ(ici_path(torus, a, b).size(), ici_hops(torus, a, b));
      // Every path is a chain of wired links ending at b.
      uint32_t cur = a;
      for (const IciHop& h : ici_path(mesh, a, b)) {
        ASSERT_EQ(h.chip, cur);
        cur = *ici_neighbour(mesh, cur, h.port);
      }
      EXPECT_EQ(cur, b);
    }
  }
  EXPECT_EQ(mesh_max, 6u);
  EXPECT_EQ(torus_max, 4u);
  EXPECT_EQ(mesh_sum, 16u * 16u * 5u / 2u);
  EXPECT_EQ(torus_sum, 16u * 16u * 2u);
}

// A ring of 2 with wraparound: + and - both reach the other chip; the tie goes +.
TEST(IciTopology, RingOfTwo) {
  const TopologyParams t = topo({2}, {true});
  EXPECT_EQ(ici_neighbour(t, 0, kXp), 1u);
  EXPECT_EQ(ici_neighbour(t, 0, kXm), 1u);
  EXPECT_EQ(ici_path(t, 0, 1), (std::vector<IciHop>{{0, kXp}}));
  EXPECT_EQ(ici_path(t, 1, 0), (std::vector<IciHop>{{1, kXp}}));
}

// v4-style 3-D torus 4x4x4 and a 2x2x1 slice (dimension of size 1: no z links).
TEST(IciTopology, ThreeDimensions) {
  const TopologyParams t = topo({4, 4, 4}, {true, true, true});
  EXPECT_EQ(ici_ports_of(t, 0).size(), 6u);
  const uint32_t far = chip_at(t, {2, 3, 1});
  EXPECT_EQ(ici_hops(t, 0, far), 2u + 1u + 1u);
  EXPECT_EQ(ici_path(t, 0, far),
            (std::vector<IciHop>{{0, kXp}, {1, kXp}, {2, kYm}, {chip_at(t, {2, 3, 0}), kZp}}));
  const TopologyParams flat = topo({2, 2, 1}, {false, false, false});
  EXPECT_FALSE(ici_neighbour(flat, 0, kZp));
  EXPECT_FALSE(ici_neighbour(flat, 0, kZm));
  EXPECT_EQ(ici_hops(flat, 0, 3), 2u);
  std::set<uint32_t> reached;
  for (uint32_t p : ici_ports_of(t, 21)) reached.insert(*ici_neighbour(t, 21, p));
  EXPECT_EQ(reached.size(), 6u);
}

TEST(IciTiming, LinksPerNeighbourAddBandwidth) {
  HwConfig hw = test::v3_8_ici();
  EXPECT_EQ(resolve_hw(hw).ici_links_per_neighbour, 1u);  // 4 links / (2 * 2 dimensions)
  EXPECT_NEAR(resolve_hw(hw).ici_link_bytes_per_cycle, 82e9 / 940e6, 1e-9);
  hw.slice.topology = topo({4}, {true});        // a ring: 4 links / 2 directions
  EXPECT_EQ(resolve_hw(hw).ici_links_per_neighbour, 2u);
  EXPECT_NEAR(resolve_hw(hw).ici_link_bytes_per_cycle, 2 * 82e9 / 940e6, 1e-9);
  hw.chip.ici.links = 6;
  hw.slice.topology = topo({2, 2, 1}, {false, false, false});  // v4-8: 6 / 4 -> 1
  EXPECT_EQ(resolve_hw(hw).ici_links_per_neighbour, 1u);
  hw.chip.ici.links = 2;
  hw.slice.topology = topo({4, 4, 4}, {true, true, true});  // fewer links than ports: at least 1
  EXPECT_EQ(resolve_hw(hw).ici_links_per_neighbour, 1u);
}

// The formulas of ici_timing.h with v3_8_ici() (rates and latencies in tests/sim/test_hw.h).
TEST(IciTiming, ContentionFreeTransferTimes) {
  const HwConfig hw = test::v3_8_ici();
  const ResolvedHw r = resolve_hw(hw);
  const uint64_t mib = 1 << 20;
  // Same chip, NoC: setup 64 + HBM read 235 + ceil(1048576 / 212.766 = 4928.31) + NoC 94.
  TransferEstimate noc = send_estimate(hw, r, 1, 1, mib);
  EXPECT_EQ(noc.hops, 0u);
  EXPECT_EQ(noc.queue_cycles(), 64u + 235u + 4929u);
  EXPECT_EQ(noc.total_cycles(), 64u + 235u + 4929u + 94u);
  // One hop: ceil(1048576 / 87.234 = 12020.26) + 940.
  TransferEstimate one = send_estimate(hw, r, 0, 1, mib);
  EXPECT_EQ(one.hops, 1u);
  EXPECT_EQ(one.queue_cycles(), 64u + 235u + 12021u);
  EXPECT_EQ(one.total_cycles(), 64u + 235u + 12021u + 940u);
  // Two hops: the packets pipeline, so only the latency doubles.
  TransferEstimate two = send_estimate(hw, r, 0, 3, mib);
  EXPECT_EQ(two.hops, 2u);
  EXPECT_EQ(two.total_cycles(), 64u + 235u + 12021u + 2 * 940u);
  // Host: ceil(1048576 / 17.021 = 61603.84) + 940; a store first reads HBM (235).
  EXPECT_EQ(host_transfer_estimate(hw, r, true, mib).total_cycles(), 64u + 61604u + 940u);
  EXPECT_EQ(host_transfer_estimate(hw, r, false, mib).total_cycles(), 64u + 235u + 61604u + 940u);
  // The slowest stage sets the rate: with a NoC faster than HBM, the core's HBM share does.
  HwConfig fast = hw;
  fast.chip.noc.bandwidth_gbyte_per_s = 1000;
  EXPECT_NEAR(send_estimate(fast, resolve_hw(fast), 0, 0, mib).bytes_per_cycle, 900e9 * 0.9 / 2 / 940e6, 1e-9);
  // Packets: a zero-byte message is one header packet.
  EXPECT_EQ(network_packets(hw.chip, 0), 1u);
  EXPECT_EQ(network_packets(hw.chip, mib), 256u);
  EXPECT_EQ(network_packets(hw.chip, mib + 1), 257u);
}

}  // namespace
}  // namespace tpusim
