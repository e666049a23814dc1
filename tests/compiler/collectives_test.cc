// Ring construction and the all-reduce's transfer accounting.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

#include "compiler/collectives/collectives.h"
#include "config/hw_loader.h"

namespace tpusim::compiler {
namespace {

HwConfig v3_8() { return load_hw_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/v3-8.yaml"); }

// Manhattan distance between two chips of the grid (chip id = x + X*y).
uint32_t hops(const HwConfig& hw, uint32_t a, uint32_t b) {
  const uint32_t X = hw.slice.topology.dims[0];
  return uint32_t(std::abs(int(a % X) - int(b % X)) + std::abs(int(a / X) - int(b / X)));
}

void expect_neighbour_ring(const HwConfig& hw) {
  auto ring = ring_order(hw);
  ASSERT_EQ(ring.size(), hw.slice.chips() * hw.chip.cores);
  std::set<std::pair<uint32_t, uint32_t>> seen;
  for (size_t i = 0; i < ring.size(); ++i) {
    EXPECT_TRUE(seen.insert({ring[i].chip, ring[i].core}).second);
    const auto& a = ring[i];
    const auto& b = ring[(i + 1) % ring.size()];
    EXPECT_LE(hops(hw, a.chip, b.chip), 1u) << "ring step " << i << ": chip " << a.chip << " -> " << b.chip;
  }
}

TEST(RingOrder, V3_8IsANeighbourCycleThroughAllEightCores) { expect_neighbour_ring(v3_8()); }

TEST(RingOrder, LargerMeshesOfEvenSize) {
  auto hw = v3_8();
  for (auto dims : std::vector<std::vector<uint32_t>>{{4, 4}, {4, 2}, {2, 4}, {4, 3}, {8, 8}}) {
    hw.slice.topology.dims = dims;
    hw.slice.topology.wraparound = {false, false};
    SCOPED_TRACE(std::to_string(dims[0]) + "x" + std::to_string(dims[1]));
    expect_neighbour_ring(hw);
  }
}

TEST(AllReduce, EveryCoreMovesTwoTimesNMinusOneChunksEachWay) {
  auto hw = v3_8();
  auto ring = ring_order(hw);
  const uint32_t n = uint32_t(ring.size());
  std::vector<isa::CoreProgram> cores(n);
  std::vector<std::unique_ptr<ProgramBuilder>> own;
  std::vector<ProgramBuilder*> builders;
  for (uint32_t i = 0; i < n; ++i) {
    cores[i].chip = ring[i].chip;
    cores[i].core = ring[i].core;
    own.push_back(std::make_unique<ProgramBuilder>(cores[i], hw.chip.core.vmem.size_bytes()));
    builders.push_back(own.back().get());
  }
  const uint64_t bytes = 64ull << 20;
  uint32_t tags = 0;
  AllReduceOptions opt;
  opt.piece_bytes = 1 << 20;
  emit_all_reduce(builders, ring, bytes, std::vector<std::vector<uint32_t>>(n), opt, &tags);
  // Per direction the chunk is bytes / (2n) = 4 MiB = 4 pieces; 2 phases x (n-1) steps x 2 directions.
  EXPECT_EQ(tags, 2u * (n - 1) * 2 * 4);
  for (uint32_t i = 0; i < n; ++i) {
    uint64_t sent = 0, received = 0;
    for (const auto& in : cores[i].instrs) {
      if (in.op == isa::Op::kSend) sent += in.bytes;
      if (in.op == isa::Op::kRecv) received += in.bytes;
    }
    // 2(n-1)/n of the bytes leave and arrive at every core (bandwidth-optimal ring).
    EXPECT_EQ(sent, 2ull * (n - 1) * bytes / n);
    EXPECT_EQ(received, sent);
  }
}

}  // namespace
}  // namespace tpusim::compiler
