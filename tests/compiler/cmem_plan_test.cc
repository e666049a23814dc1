// CMEM placement (compiler/plan/memory_plan.h, place_in_cmem) and its lowering: DMAs of CMEM-resident
// buffers are tagged, the chip's capacity holds, v4 kernels and training steps run faster with
// CMEM than without, and v2/v3 programs carry no CMEM tag.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include <algorithm>

#include "compiler/compile.h"
#include "compiler/plan/fusion.h"
#include "compiler/plan/memory_plan.h"
#include "compiler/step/data_parallel.h"
#include "config/hw_loader.h"
#include "models/bert.h"
#include "models/families.h"
#include "sim/engine/engine.h"

namespace tpusim::compiler {
namespace {

HwConfig hw_of(const std::string& f, const std::vector<Override>& ovs = {}) {
  return load_hw_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/" + f, ovs);
}
HwConfig v4() { return hw_of("v4-8.yaml"); }
HwConfig v4_off() { return hw_of("v4-8.yaml", {parse_override("chip.cmem.size_mib=0")}); }

isa::Program matmul(const HwConfig& hw, uint64_t n = 2048) {
  return compile_kernel({"matmul", {{"m", n}, {"k", n}, {"n", n}}, models::DType::kF32, models::DotPrecision::kDefault}, hw);
}

struct DmaCount {
  uint64_t cmem = 0, hbm = 0, cmem_bytes = 0;
};
DmaCount dmas(const isa::Program& p) {
  DmaCount c;
  for (size_t k = 0; k < p.cores.size(); ++k)
    for (const auto& i : isa::expanded_instrs(p.stream(k))) {
      if (i.op != isa::Op::kDmaLoad && i.op != isa::Op::kDmaStore) continue;
      if (i.mem == isa::MemSpace::kCmem) {
        ++c.cmem;
        c.cmem_bytes += i.bytes;
      } else {
        ++c.hbm;
      }
    }
  return c;
}

// Policy on a hand-made plan: most accesses first, then smaller; first fit over live ranges.
TEST(CmemPlacement, GreedyByAccessesThenFirstFitOverLiveRanges) {
  MemoryPlan mp;
  auto add = [&](const char* name, uint64_t mib, int first, int last, int accesses, BufferKind kind) {
    HbmBuffer b;
    b.name = name;
    b.bytes = mib << 20;
    b.first_kernel = first;
    b.last_kernel = last;
    b.accesses = accesses;
    b.kind = kind;
    b.node = int(mp.buffers.size());
    mp.buffers.push_back(b);
  };
  add("weights", 40, 0, 9, 4, BufferKind::kParameter);  // 4 accesses: first
  add("big", 30, 2, 5, 2, BufferKind::kTemporary);     // 2 accesses, larger: after "small"
  add("small", 20, 4, 6, 2, BufferKind::kTemporary);
  add("late", 30, 7, 9, 2, BufferKind::kTemporary);    // fits after "big" died
  add("batch", 1, 0, 3, 9, BufferKind::kInput);        // never: inputs stay in HBM in a step
  add("unused", 1, 0, 0, 0, BufferKind::kTemporary);   // never: no traffic to save
  ChipParams chip;
  chip.cmem = CmemParams{.size_mib = 128, .bandwidth_gbyte_per_s = 2400, .latency_ns = 100};
  // Two replicas share the chip: 64 MiB each. weights 40; small 20 (60 at kernels 4-6); big
  // would make 90 at 4-5: out; late 40 + 30 = 70: out. With the whole 128 MiB: all but the two.
  place_in_cmem(mp, mp.buffers.size(), chip, 2, /*inputs_in_hbm=*/true);
  EXPECT_EQ(mp.cmem_budget_bytes, 64ull << 20);
  std::vector<bool> want = {true, false, true, false, false, false};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(mp.buffers[i].in_cmem, want[i]) << mp.buffers[i].name;
  EXPECT_EQ(mp.cmem_peak_bytes, 60ull << 20);
  EXPECT_EQ(mp.cmem_chip_bytes, 120ull << 20);
  EXPECT_LE(mp.cmem_chip_bytes, cmem_size_bytes(chip));
  place_in_cmem(mp, mp.buffers.size(), chip, 1, true);
  want = {true, true, true, true, false, false};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(mp.buffers[i].in_cmem, want[i]) << mp.buffers[i].name;
  EXPECT_EQ(mp.cmem_peak_bytes, 90ull << 20);  // kernels 4-5: 40 + 30 + 20
  EXPECT_EQ(mp.cmem_node, (std::vector<bool>{true, true, true, true, false, false}));
  chip.cmem->size_mib = 0;
  place_in_cmem(mp, mp.buffers.size(), chip, 1, true);
  EXPECT_EQ(mp.cmem_buffers, 0u);
  EXPECT_TRUE(mp.cmem_node.empty());
}

// A 2048^3 f32 matmul on v4: its three 16 MiB operands fit the 128 MiB CMEM, so every DMA is
// tagged and none touches HBM; the program info says so.
TEST(CmemLowering, AV4KernelPlacesItsBuffersWithinCapacity) {
  const HwConfig hw = v4();
  const isa::Program p = matmul(hw);
  const DmaCount c = dmas(p);
  EXPECT_GT(c.cmem, 0u);
  EXPECT_EQ(c.hbm, 0u);
  EXPECT_EQ(p.info.cmem_bytes, c.cmem_bytes);
  EXPECT_EQ(p.info.hbm_bytes, 0u);
  EXPECT_EQ(p.info.cmem_resident_bytes, 3ull * 2048 * 2048 * 4);
  EXPECT_LE(p.info.cmem_resident_bytes, cmem_size_bytes(hw.chip));
  // Too big for CMEM (3 x 64 MiB operands): the placement keeps what fits (two of them).
  const isa::Program big = matmul(hw, 4096);
  EXPECT_EQ(big.info.cmem_resident_bytes, 2ull * 4096 * 4096 * 4);
  EXPECT_GT(big.info.hbm_bytes, 0u);
  EXPECT_GT(dmas(big).hbm, 0u);
}

// The same kernel with CMEM disabled is all HBM and slower, on both engines. A memory-bound
// kernel (layernorm) gains the most.
TEST(CmemLowering, TheSameKernelRunsFasterWithCmem) {
  for (const char* kernel : {"matmul", "layernorm"}) {
    const std::map<std::string, uint64_t> shape = std::string(kernel) == "matmul"
                                                      ? std::map<std::string, uint64_t>{{"m", 1024}, {"k", 1024}, {"n", 1024}}
                                                      : std::map<std::string, uint64_t>{{"rows", 8192}, {"cols", 1024}};
    const isa::Program with = compile_kernel({kernel, shape, models::DType::kF32, models::DotPrecision::kDefault}, v4());
    const isa::Program without = compile_kernel({kernel, shape, models::DType::kF32, models::DotPrecision::kDefault}, v4_off());
    EXPECT_EQ(dmas(without).cmem, 0u) << kernel;
    EXPECT_EQ(without.info.cmem_bytes, 0u) << kernel;
    EXPECT_EQ(with.info.cmem_bytes + with.info.hbm_bytes, without.info.hbm_bytes) << kernel;  // same traffic
    for (const char* engine : {"analytical", "systemc"}) {
      const uint64_t fast = make_engine(engine, v4())->run(with, nullptr).device_cycles;
      const uint64_t slow = make_engine(engine, v4_off())->run(without, nullptr).device_cycles;
      EXPECT_LT(fast, slow) << kernel << " on " << engine;
      std::printf("%s on %s: %llu cycles with CMEM, %llu without (%.2fx)\n", kernel, engine, (unsigned long long)fast,
                  (unsigned long long)slow, double(slow) / double(fast));
    }
  }
}

// v2/v3 have no CMEM: no DMA is tagged and the JSON carries no CMEM key, so their programs
// serialize exactly as before the field existed.
TEST(CmemLowering, V2AndV3ProgramsCarryNoCmemTag) {
  for (const char* f : {"v2-8.yaml", "v3-8.yaml"}) {
    const isa::Program p = matmul(hw_of(f), 512);
    EXPECT_EQ(dmas(p).cmem, 0u) << f;
    const std::string json = nlohmann::json(p).dump();
    EXPECT_EQ(json.find("\"mem\""), std::string::npos) << f;
    EXPECT_EQ(json.find("cmem"), std::string::npos) << f;
    // And the round trip keeps every instruction.
    const isa::Program back = nlohmann::json::parse(json).get<isa::Program>();
    EXPECT_EQ(nlohmann::json(back).dump(), json);
  }
  // A tagged program round-trips its tags.
  const isa::Program t = matmul(v4(), 512);
  const isa::Program back = nlohmann::json::parse(nlohmann::json(t).dump()).get<isa::Program>();
  EXPECT_EQ(dmas(back).cmem, dmas(t).cmem);
  EXPECT_EQ(back.info.cmem_bytes, t.info.cmem_bytes);
}

// A data-parallel v4 step: both replicas of a chip place the same buffers in half its CMEM
// each (the chip's total within its capacity), the input batch and the gradients stay in HBM,
// and the step runs faster than with CMEM off.
TEST(CmemLowering, AV4TrainingStepSharesTheChipsCmemBetweenItsReplicas) {
  models::BertGraphOptions o;
  o.batch = 4;
  o.seq = 128;
  models::OptimizerConfig opt;
  auto s = models::build_training_step(models::find_preset("bert-tiny"), o, opt);
  DataParallelStep dp;
  dp.graph = &s.model.graph;
  shard_data_parallel(s.model.graph, s.grads.grads);
  for (auto [in, out] : s.optimizer.donated) dp.donated[out] = in;
  const HwConfig hw = v4();
  const CompiledStep with = compile_spmd_step(data_parallel_step(dp, hw), hw, "bert-tiny");
  const CompiledStep without = compile_spmd_step(data_parallel_step(dp, v4_off()), v4_off(), "bert-tiny");
  EXPECT_EQ(with.memory.cmem_budget_bytes, cmem_size_bytes(hw.chip) / 2);
  EXPECT_GT(with.memory.cmem_buffers, 0u);
  EXPECT_LE(with.memory.cmem_peak_bytes, with.memory.cmem_budget_bytes);
  EXPECT_EQ(with.memory.cmem_chip_bytes, 2 * with.memory.cmem_peak_bytes);
  EXPECT_LE(with.memory.cmem_chip_bytes, cmem_size_bytes(hw.chip));
  for (const auto& b : with.memory.buffers)
    if (b.kind == BufferKind::kInput) {
      EXPECT_FALSE(b.in_cmem) << b.name;
    }
  for (int gr : data_parallel_step(dp, hw).gradients)  // all-reduced in HBM
    EXPECT_FALSE(with.memory.cmem_node[size_t(gr)]) << "gradient " << gr;
  // A one-replica compile (nothing transfers its gradients) shares the chip's CMEM as the slice's
  // replicas do, and may place the gradients there.
  const CompiledStep one = compile_spmd_step(data_parallel_step(dp, hw, 1), hw, "bert-tiny");
  EXPECT_EQ(one.memory.cmem_budget_bytes, with.memory.cmem_budget_bytes);
  EXPECT_GT(one.memory.cmem_buffers, 0u);
  EXPECT_EQ(with.memory.peak_bytes, without.memory.peak_bytes);  // HBM homes unchanged
  EXPECT_GT(dmas(with.program).cmem, 0u);
  EXPECT_EQ(dmas(without.program).cmem, 0u);
  const uint64_t fast = make_engine("analytical", hw)->run(with.program, nullptr).device_cycles;
  const uint64_t slow = make_engine("analytical", v4_off())->run(without.program, nullptr).device_cycles;
  EXPECT_LT(fast, slow);
  std::printf("bert-tiny B=4 S=128 step on v4-8 (analytical): %llu cycles with CMEM, %llu without (%.2fx)\n",
              (unsigned long long)fast, (unsigned long long)slow, double(slow) / double(fast));
}

}  // namespace
}  // namespace tpusim::compiler
