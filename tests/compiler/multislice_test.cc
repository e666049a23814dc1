// Collectives across slices (compiler/collectives/collectives_dcn.cc): the hierarchical form's
// parts and bytes, and its time on both engines against the DCN's closed form.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "compiler/collectives/collectives.h"
#include "compiler/collectives/replicas.h"
#include "config/hw_loader.h"
#include "sim/engine/engine.h"
#include "sim/hw/resolved_hw.h"

namespace tpusim::compiler {
namespace {

HwConfig v6e_8(uint32_t slices) {
  HwConfig hw = load_hw_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/v6e-8.yaml");
  hw.multislice.slices = slices;
  return hw;
}

struct Counted {
  uint64_t dcn_stores = 0, dcn_bytes = 0, host_loads = 0, load_bytes = 0, sends = 0;
  std::vector<std::string> kernels;
};
Counted count(const isa::Program& p) {  // core 0's stream
  Counted c;
  for (const isa::Instr& in : p.cores[0].instrs) {
    if (in.op == isa::Op::kHostStore && in.dcn) ++c.dcn_stores, c.dcn_bytes += in.bytes;
    if (in.op == isa::Op::kHostLoad) ++c.host_loads, c.load_bytes += in.bytes;
    if (in.op == isa::Op::kSend) ++c.sends;
  }
  for (const isa::KernelRange& k : p.cores[0].kernels) c.kernels.push_back(k.name.str());
  return c;
}

constexpr uint64_t kBytes = 64ull << 20;

// An all-reduce of 64 MiB over a v6e-8 (8 cores) and S slices: a reduce-scatter within the slice
// leaves each core 8 MiB; the ring over the slices sends 2 (S-1) steps of 8 MiB / S, in pieces of
// at most 1 MiB (at least 4 per step), each received back by a host load; then the all-gather within
// the slice.
TEST(Multislice, AllReduceIsReduceScatterDcnRingAllGather) {
  for (uint32_t s : {2u, 4u}) {
    CollectiveOptions opt;
    opt.slices = s;
    CollectiveResult res;
    const isa::Program p = collective_program(CollectiveKind::kAllReduce, v6e_8(s), kBytes, opt, &res);
    const Counted c = count(p);
    EXPECT_EQ(c.kernels, (std::vector<std::string>{"reduce-scatter", "all-reduce (DCN)", "all-gather"}));
    const uint64_t step = (8ull << 20) / s, pieces = std::max<uint64_t>(4, (step + (1 << 20) - 1) >> 20);
    EXPECT_EQ(c.dcn_stores, 2 * (s - 1) * pieces) << s;
    EXPECT_EQ(c.dcn_bytes, 2 * (s - 1) * step) << s;
    EXPECT_EQ(c.load_bytes, c.dcn_bytes);
    EXPECT_EQ(res.dcn_bytes_per_core, c.dcn_bytes);
    EXPECT_GT(c.sends, 0u);  // the in-slice parts
  }
}

TEST(Multislice, ReduceScatterLeavesOutTheAllGatherAndAGroupOfOneTheSlicesParts) {
  CollectiveOptions opt;
  opt.slices = 2;
  const Counted rs = count(collective_program(CollectiveKind::kReduceScatter, v6e_8(2), kBytes, opt));
  EXPECT_EQ(rs.kernels, (std::vector<std::string>{"reduce-scatter", "all-reduce (DCN)"}));
  EXPECT_EQ(rs.dcn_bytes, 8ull << 20);  // 2 (S-1) / S x 8 MiB

  // One core per slice: the whole tensor crosses the network, nothing within the slice.
  HwConfig one = load_hw_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/v6e-1.yaml");
  one.multislice.slices = 2;
  const Counted alone = count(collective_program(CollectiveKind::kAllReduce, one, kBytes, opt));
  EXPECT_EQ(alone.kernels, (std::vector<std::string>{"all-reduce (DCN)"}));
  EXPECT_EQ(alone.dcn_bytes, kBytes);
  EXPECT_EQ(alone.sends, 0u);
}

TEST(Multislice, OnlySumsCrossSlices) {
  CollectiveOptions opt;
  opt.slices = 2;
  EXPECT_THROW(collective_program(CollectiveKind::kAllGather, v6e_8(2), kBytes, opt), std::invalid_argument);
  EXPECT_THROW(collective_program(CollectiveKind::kAllToAll, v6e_8(2), kBytes, opt), std::invalid_argument);
}

// On both engines the step takes the in-slice all-reduce's time (its reduce-scatter and all-gather)
// plus the DCN part's closed form, every core's 2 (S-1) / S x share at its share of the host's NICs
// (12.5 GB/s per v6e chip), and not much more: the stores stream back to back; what is added is,
// per step, the last piece's trip (PCIe and DCN latency) and its load and addition (measured: 7% of
// the bound at S = 2, 3% at S = 4 on the analytical engine; 13% and 6% on SystemC, whose host NICs
// interleave the chips' trains).
TEST(Multislice, TimeIsTheNetworksBandwidthBoundOnBothEngines) {
  for (uint32_t s : {2u, 4u}) {
    const HwConfig hw = v6e_8(s);
    CollectiveOptions opt;
    opt.slices = s;
    const isa::Program p = collective_program(CollectiveKind::kAllReduce, hw, kBytes, opt);
    const isa::Program within = collective_program(CollectiveKind::kAllReduce, hw, kBytes, {});
    const ResolvedHw r = resolve_hw(hw);
    const double bound = 2.0 * (s - 1) / s * double(8ull << 20) / r.dcn_core_bytes_per_cycle;
    for (const char* engine : {"analytical", "systemc"}) {
      const double t = double(make_engine(engine, hw)->run(p, nullptr).device_cycles);
      const double t1 = double(make_engine(engine, hw)->run(within, nullptr).device_cycles);
      EXPECT_GT(t, bound + 0.8 * t1) << engine << " S=" << s;
      EXPECT_LT(t, 1.2 * bound + t1) << engine << " S=" << s;
    }
  }
}

}  // namespace
}  // namespace tpusim::compiler
