// Megacore (chip.megacore, TPU v4): the device all-reduce (compiler/collectives/collectives_device.cc) and the
// data-parallel step of a megacore device (compiler/step/data_parallel.h): the chip's cores reduce-scatter
// on the chip, each core all-reduces its half with the same core of the other chips, each updates
// half of every parameter, and the memory plan is the chip's.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "compiler/collectives/collective_algorithms.h"
#include "compiler/collectives/collectives.h"
#include "compiler/step/data_parallel.h"
#include "config/hw_loader.h"
#include "sim/engine/engine.h"
#include "tests/compiler/dp_steps.h"

namespace tpusim::compiler {
namespace {

HwConfig hw_of(const std::string& name, const std::vector<Override>& ovs = {}) {
  return load_hw_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/" + name + ".yaml", ovs);
}

TEST(DeviceAllReduce, RingPlanReducesOncePerChip) {
  for (const char* name : {"v4-8", "v4-16", "v4-32"}) {
    SCOPED_TRACE(name);
    const HwConfig hw = hw_of(name);
    const std::vector<CoreId> cores = ring_order(hw);
    ASSERT_TRUE(device_plan_applicable(cores, hw));
    const CollectivePlan p = device_ring_plan(cores, hw, 30ull << 20);
    EXPECT_EQ(execute_plan(p), "");
    ASSERT_EQ(p.device.size(), cores.size());
    // Within a chip only the reduce-scatter (one step per lane for two cores); across chips only
    // between cores of the same index.
    size_t on_chip = 0;
    for (const PlanStep& s : p.steps)
      for (uint32_t i = 0; i < p.cores; ++i) {
        const CoreId a = cores[i], b = cores[s.send_to[i]];
        if (a.chip == b.chip) {
          EXPECT_EQ(s.combine, Combine::kReduce);
          ++on_chip;
        } else {
          EXPECT_EQ(a.core, b.core);
        }
      }
    EXPECT_EQ(on_chip, 2 * cores.size());  // 2 lanes x (cores - 1 = 1) step x every core
    // Without the device semantics the plan would not leave every core with every chunk.
    CollectivePlan per_core = p;
    per_core.device.clear();
    EXPECT_NE(execute_plan(per_core), "");
  }
}

TEST(DeviceAllReduce, DimsPlanSkipsTheOnChipAllGather) {
  const HwConfig hw = hw_of("v4-16");
  const std::vector<CoreId> cores = ring_order(hw);
  const CollectivePlan full = dims_plan(CollectiveKind::kAllReduce, cores, hw, 30ull << 20);
  const CollectivePlan dev = dims_plan(CollectiveKind::kAllReduce, cores, hw, 30ull << 20, /*per_device=*/true);
  EXPECT_EQ(execute_plan(full), "");
  EXPECT_EQ(execute_plan(dev), "");
  EXPECT_EQ(dev.steps.size() + dev.lanes, full.steps.size());  // one on-chip all-gather step per lane fewer
  for (const PlanStep& s : dev.steps)
    for (uint32_t i = 0; i < dev.cores; ++i)
      if (cores[i].chip == cores[s.send_to[i]].chip) {
        EXPECT_EQ(s.combine, Combine::kReduce);
      }
}

TEST(DeviceAllReduce, OnlyForAllReducesOnMegacoreChips) {
  const HwConfig v4 = hw_of("v4-8"), v3 = hw_of("v3-8");
  EXPECT_FALSE(device_plan_applicable(ring_order(v3), v3));
  std::vector<CoreId> half = ring_order(v4);
  half.pop_back();  // not whole chips
  EXPECT_FALSE(device_plan_applicable(half, v4));
  EXPECT_TRUE(plan_collective(CollectiveKind::kAllReduce, ring_order(v4), v4, 1 << 20, CollectiveAlgorithm::kRing, true)
                  .device.size() > 0);
  EXPECT_TRUE(plan_collective(CollectiveKind::kAllReduce, ring_order(v4), v4, 1 << 20, CollectiveAlgorithm::kRing, false)
                  .device.empty());
  EXPECT_TRUE(plan_collective(CollectiveKind::kReduceScatter, ring_order(v4), v4, 1 << 20, CollectiveAlgorithm::kRing, true)
                  .device.empty());
  EXPECT_TRUE(plan_collective(CollectiveKind::kAllReduce, ring_order(v3), v3, 1 << 20, CollectiveAlgorithm::kRing, true)
                  .device.empty());
}

// bert-tiny at 2 examples per core (4 per megacore device) on a v4-8: megacore against the same
// slice with every core its own device.
struct Compiled {
  test::Step step;
  std::vector<int> grads;  // the gradients' nodes in the compiled (SPMD) graph
  CompiledStep c;
};
Compiled compile(const HwConfig& hw) {
  Compiled out{test::make_step("bert-tiny", 2, 128), {}, {}};
  const SpmdStep s = data_parallel_step(out.step.dp, hw);
  out.grads = s.gradients;
  out.c = compile_spmd_step(s, hw, "bert-tiny");
  return out;
}

TEST(MegacoreStep, GradientsTakeOnePathPerChip) {
  const HwConfig hw = hw_of("v4-8");
  const Compiled m = compile(hw);
  ASSERT_FALSE(test::allreduces(m.c).empty());
  const isa::Program p = isa::unshared(m.c.program);
  ASSERT_EQ(p.cores.size(), 8u);
  // Per core: sends to its chip's other core (the on-chip reduce-scatter) and, across chips, only
  // to the core of its own index; each core sends half of what a v4 core-per-device ring would.
  std::map<uint32_t, uint64_t> ici_bytes_by_chip;
  for (const isa::CoreProgram& cp : p.cores) {
    uint64_t on_chip = 0;
    for (const isa::Instr& i : cp.instrs) {
      if (i.op != isa::Op::kSend) continue;
      if (i.peer_chip == cp.chip) {
        EXPECT_NE(i.peer_core, cp.core);
        on_chip += i.bytes;
      } else {
        EXPECT_EQ(i.peer_core, cp.core);
        ici_bytes_by_chip[cp.chip] += i.bytes;
      }
    }
    EXPECT_GT(on_chip, 0u);
  }
  // Each chip's links carry the ring all-reduce of one copy of the gradients: 2 (n-1)/n x bytes
  // over n = 4 chips, the two cores' halves together.
  for (const auto& [chip, bytes] : ici_bytes_by_chip)
    EXPECT_NEAR(double(bytes), 2.0 * 3 / 4 * double(m.c.allreduce_bytes), 0.01 * double(m.c.allreduce_bytes)) << chip;
}

TEST(MegacoreStep, MemoryIsTheChipsAndStateIsStoredOnce) {
  const HwConfig mega = hw_of("v4-8"), cores = hw_of("v4-8", {parse_override("chip.megacore=false")});
  const Compiled m = compile(mega), c = compile(cores);
  EXPECT_EQ(m.c.memory.cores_per_device, 2u);
  EXPECT_EQ(c.c.memory.cores_per_device, 1u);
  // Parameters and optimizer state once per chip: what one core-device holds.
  EXPECT_EQ(m.c.memory.persistent_bytes, c.c.memory.persistent_bytes);
  // Activations per core: the chip holds more than one core, less than two cores' everything.
  EXPECT_GT(m.c.memory.peak_bytes, c.c.memory.peak_bytes);
  EXPECT_LT(m.c.memory.peak_bytes, 2 * c.c.memory.peak_bytes);
  uint64_t params = 0, grads = 0, per_core = 0;
  for (const HbmBuffer& b : m.c.memory.buffers) {
    if (b.kind == BufferKind::kParameter || b.kind == BufferKind::kOptimizerState) {
      EXPECT_EQ(b.copies, 1u) << b.name;
      params += b.bytes;
    } else if (std::find(m.grads.begin(), m.grads.end(), b.node) != m.grads.end()) {
      EXPECT_EQ(b.copies, 1u) << b.name;
      grads += b.bytes;
    } else {
      // Activations, inputs, temporaries: per core; what the optimizer writes: once.
      EXPECT_TRUE(b.copies == 1 || b.copies == 2) << b.name;
      per_core += b.copies == 2;
    }
  }
  EXPECT_EQ(params, m.c.memory.persistent_bytes);
  EXPECT_GT(grads, 0u);
  EXPECT_GT(per_core, 0u);
}

TEST(MegacoreStep, EachCoreUpdatesHalfOfTheParameters) {
  const HwConfig mega = hw_of("v4-8"), cores = hw_of("v4-8", {parse_override("chip.megacore=false")});
  const Compiled m = compile(mega), c = compile(cores);
  // The same forward and backward per core; the optimizer's traffic is halved.
  EXPECT_LT(m.c.program.info.hbm_bytes + m.c.program.info.cmem_bytes, c.c.program.info.hbm_bytes + c.c.program.info.cmem_bytes);
  EXPECT_LE(m.c.program.info.flops, c.c.program.info.flops);
  // And the step is faster than a core that updates everything.
  const double tm = make_engine("analytical", mega)->run(m.c.program, nullptr).device_time_s;
  const double tc = make_engine("analytical", cores)->run(c.c.program, nullptr).device_time_s;
  EXPECT_LT(tm, tc);
}

}  // namespace
}  // namespace tpusim::compiler
