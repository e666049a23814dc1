// Data-parallel training steps: SPMD replicas, the gradient all-reduce between backward and
// optimizer, memory accounting, and simulation on both engines.
#include <gtest/gtest.h>

#include <algorithm>

#include "compiler/step/data_parallel.h"
#include "tests/compiler/dp_steps.h"
#include "config/hw_loader.h"
#include "models/bert.h"
#include "models/families.h"
#include "sim/engine/engine.h"

namespace tpusim::compiler {
namespace {

using test::Step;
using test::v3_8;
using test::allreduces;

Step tiny_step(models::DType dtype = models::DType::kF32) { return test::make_step("bert-tiny", 2, 16, dtype); }

TEST(DataParallel, EveryCoreRunsTheSameComputeAndTheAllReduce) {
  auto hw = v3_8();
  auto st = tiny_step();
  auto c = compile_spmd_step(data_parallel_step(st.dp, hw), hw, "bert-tiny");
  ASSERT_EQ(c.program.cores.size(), 8u);
  for (size_t k = 0; k < 8; ++k) EXPECT_EQ(c.program.stream(k).instrs.size(), c.program.cores[0].instrs.size());
  // Every gradient is reduced: the parameters' fp32 bytes (plus tile padding).
  EXPECT_GE(c.allreduce_bytes, 4u * 4386178u);
  EXPECT_LT(c.allreduce_bytes, 4u * 4386178u * 2);
  uint64_t sends = 0;
  for (const auto& in : c.program.stream(3).instrs) sends += in.op == isa::Op::kSend;
  EXPECT_GT(sends, 0u);
}

// SPMD: every replica runs core 0's stream; only the all-reduce's transfers differ, in their peer
// (the replica's ring neighbours). Replica streams are assembled from core 0's around their own
// collective section, so this checks the assembly too: same instructions, deps, labels, VMEM.
TEST(DataParallel, ReplicasDifferOnlyInTheirTransferPeers) {
  auto hw = v3_8();
  auto st = tiny_step();
  auto shared = compile_spmd_step(data_parallel_step(st.dp, hw), hw, "bert-tiny");
  auto one = compile_spmd_step(data_parallel_step(st.dp, hw, 1), hw, "1 replica");
  // Replicas 1.. share core 0's stream through a peer table (nothing of their own to store).
  for (size_t k = 1; k < shared.program.cores.size(); ++k) {
    EXPECT_EQ(shared.program.cores[k].stream_of, 0) << k;
    EXPECT_TRUE(shared.program.cores[k].instrs.empty()) << k;
    // One peer per send and receive of the shared stream.
    size_t transfers = 0;
    for (const auto& in : shared.program.cores[0].instrs) transfers += in.op == isa::Op::kSend || in.op == isa::Op::kRecv;
    EXPECT_EQ(shared.program.cores[k].peers.size(), transfers) << k;
  }
  struct {
    isa::Program program;
  } c{isa::unshared(shared.program)};
  const auto& c0 = c.program.cores[0];
  auto without_peer = [](const isa::Instr& in) {
    nlohmann::json j = in;
    j.erase("peer_chip");
    j.erase("peer_core");
    return j;
  };
  size_t first_send = c0.instrs.size(), last_recv = 0;
  for (size_t i = 0; i < c0.instrs.size(); ++i)
    if (c0.instrs[i].op == isa::Op::kSend || c0.instrs[i].op == isa::Op::kRecv) {
      first_send = std::min(first_send, i);
      last_recv = i;
    }
  ASSERT_LT(first_send, last_recv);
  for (size_t k = 1; k < c.program.cores.size(); ++k) {
    const auto& ck = c.program.cores[k];
    ASSERT_EQ(ck.instrs.size(), c0.instrs.size());
    size_t peers_differ = 0;
    for (size_t i = 0; i < c0.instrs.size(); ++i) {
      const auto& a = c0.instrs[i];
      const auto& b = ck.instrs[i];
      ASSERT_EQ(without_peer(a), without_peer(b)) << "core " << k << " instruction " << i;
      if (a.peer_chip != b.peer_chip || a.peer_core != b.peer_core) {
        EXPECT_TRUE(a.op == isa::Op::kSend || a.op == isa::Op::kRecv) << i;
        ++peers_differ;
      }
    }
    EXPECT_GT(peers_differ, 0u);
    EXPECT_EQ(nlohmann::json(ck.vmem_allocs), nlohmann::json(c0.vmem_allocs)) << "core " << k;
  }
  // Core 0's stream is the single-replica compile with the all-reduce inserted between the
  // backward pass (identical) and the optimizer.
  const std::vector<isa::Instr> solo = isa::expanded_instrs(one.program.cores[0]);
  size_t ar_begin = c0.instrs.size(), ar_len = 0;
  for (size_t i = 0; i < c0.instrs.size(); ++i)
    if (c0.instrs[i].collective == isa::Collective::kAllReduce) {
      EXPECT_TRUE(c0.instrs[i].label.str().starts_with("all-reduce:")) << i;
      ar_begin = std::min(ar_begin, i);
      ++ar_len;
    }
  ASSERT_LT(ar_begin, first_send);
  EXPECT_EQ(solo.size() + ar_len, c0.instrs.size());
  for (size_t i = 0; i < ar_begin; ++i)
    ASSERT_EQ(nlohmann::json(solo[i]), nlohmann::json(c0.instrs[i])) << "instruction " << i;
}

// Parameters and the two AdamW moments stay resident: 12 bytes per parameter in fp32 (the
// gradients are temporaries); XLA_USE_BF16 halves it.
TEST(DataParallel, StaticMemoryOfParametersAndAdamWState) {
  auto hw = v3_8();
  auto f32 = compile_spmd_step(data_parallel_step(tiny_step().dp, hw), hw, "f32");
  const double per_param = double(f32.memory.persistent_bytes) / 4386178.0;
  EXPECT_GT(per_param, 12.0);
  EXPECT_LT(per_param, 12.0 * 1.25);  // (8,128) tile padding of small tensors
  auto st16 = tiny_step(models::DType::kBF16);
  auto bf16 = compile_spmd_step(data_parallel_step(st16.dp, hw), hw, "bf16");
  EXPECT_NEAR(double(bf16.memory.persistent_bytes) / double(f32.memory.persistent_bytes), 0.5, 0.05);
  EXPECT_GT(f32.memory.peak_bytes, f32.memory.persistent_bytes);
}

TEST(DataParallel, SimulatesOnBothEnginesAndTheAllReduceCostsTime) {
  auto hw = v3_8();
  auto st = tiny_step();
  auto eight = compile_spmd_step(data_parallel_step(st.dp, hw), hw, "8 replicas");
  auto one = compile_spmd_step(data_parallel_step(st.dp, hw, 1), hw, "1 replica");
  ASSERT_EQ(one.program.cores.size(), 1u);
  for (const char* engine : {"analytical", "systemc"}) {
    auto r8 = make_engine(engine, hw)->run(eight.program, nullptr);
    auto r1 = make_engine(engine, hw)->run(one.program, nullptr);
    EXPECT_GT(r8.device_cycles, r1.device_cycles) << engine;
    EXPECT_EQ(r8.cores.size(), 8u) << engine;
  }
}

// A shared stream (replicas running core 0's instructions through a peer table) simulates exactly
// like the same program with a copy per core: same cycles and the same stats, on both engines.
TEST(DataParallel, SharedStreamsSimulateLikeCopies) {
  auto hw = v3_8();
  auto st = tiny_step();
  auto shared = compile_spmd_step(data_parallel_step(st.dp, hw), hw, "8 replicas");
  ASSERT_EQ(shared.program.cores[5].stream_of, 0);
  const isa::Program copies = isa::unshared(shared.program);
  for (const char* engine : {"analytical", "systemc"}) {
    auto a = make_engine(engine, hw)->run(shared.program, nullptr);
    auto b = make_engine(engine, hw)->run(copies, nullptr);
    EXPECT_EQ(a.device_cycles, b.device_cycles) << engine;
    EXPECT_EQ(a.stats, b.stats) << engine;
  }
}

// XLA's all-reduce combiner: gradients are reduced in combined tensors of at most the threshold, in
// production order, each with its own algorithm; the optimizer waits for all of them.
TEST(DataParallel, GradientsAreCombinedIntoBucketsOfTheThreshold) {
  auto hw = v3_8();
  auto st = tiny_step();
  auto whole = compile_spmd_step(data_parallel_step(st.dp, hw), hw, "one bucket");
  ASSERT_EQ(allreduces(whole).size(), 1u);  // bert-tiny's gradients are far below 30 MiB
  st.dp.allreduce_bucket_bytes = 256 << 10;
  st.dp.allreduce_algorithm = CollectiveAlgorithm::kRing;
  auto split = compile_spmd_step(data_parallel_step(st.dp, hw), hw, "256 KiB buckets");
  ASSERT_GT(allreduces(split).size(), 2u);
  uint64_t sum = 0;
  for (const auto& a : allreduces(split)) {
    sum += a.bytes;
    EXPECT_EQ(a.algorithm, CollectiveAlgorithm::kRing);
  }
  EXPECT_EQ(sum, split.allreduce_bytes);
  EXPECT_EQ(split.allreduce_bytes, whole.allreduce_bytes);
  // Buckets fill up to the threshold: only a gradient larger than it makes a bucket exceed it.
  for (size_t k = 0; k + 1 < allreduces(split).size(); ++k) EXPECT_GT(allreduces(split)[k].bytes, 0u);
  for (const char* engine : {"analytical", "systemc"}) {
    auto r = make_engine(engine, hw)->run(split.program, nullptr);
    EXPECT_GT(r.device_cycles, 0u) << engine;
  }
}

// Every replica shares core 0's stream whatever the algorithm's peer pattern: the dimension-by-
// dimension all-reduce on a 4x4 mesh meets its peers in an order that depends on the core's place
// (the chip's other core first or second), which a per-transfer peer table covers.
TEST(DataParallel, EveryReplicaSharesTheStreamWithEitherAlgorithm) {
  const HwConfig hw = load_hw_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/v3-32.yaml");
  auto st = tiny_step();
  for (auto algorithm : {CollectiveAlgorithm::kRing, CollectiveAlgorithm::kDimensionByDimension}) {
    st.dp.allreduce_algorithm = algorithm;
    auto c = compile_spmd_step(data_parallel_step(st.dp, hw), hw, "bert-tiny");
    ASSERT_EQ(c.program.cores.size(), 32u);
    for (size_t k = 1; k < 32; ++k) EXPECT_EQ(c.program.cores[k].stream_of, 0) << algorithm_name(algorithm) << " core " << k;
  }
}

// The kernel table (isa::CoreProgram::kernels): every fusion and every collective of core 0's
// stream in stream order; its flops and HBM bytes add up to ProgramInfo's; every replica runs it
// (shared streams) or has a copy; the op profile of a simulation adds up to the device time.
TEST(DataParallel, KernelTableAddsUpToProgramInfoAndProfilesTheStep) {
  auto hw = v3_8();
  auto st = tiny_step();
  for (bool overlap : {false, true}) {
    st.dp.overlap_allreduce = overlap;
    for (bool share : {true, false}) {
      auto c = compile_spmd_step(data_parallel_step(st.dp, hw), hw, "bert-tiny");
      const isa::Program prog = share ? c.program : isa::unshared(c.program);
      const auto& table = prog.stream(0).kernels;
      const std::vector<isa::Instr> stream = isa::expanded_instrs(prog.stream(0));
      uint64_t flops = 0, bytes = 0, collectives = 0, next = 0;
      for (const isa::KernelRange& k : table) {
        uint64_t alu = 0, vld = 0;  // the table's VPU work is its instructions'
        for (uint32_t i = k.first_instr; i <= k.last_instr; ++i) {
          alu += stream[i].vpu.alu_vregs;
          vld += stream[i].vpu.vld_vregs;
        }
        EXPECT_EQ(k.vpu.alu_vregs, alu);
        EXPECT_EQ(k.vpu.vld_vregs, vld);
        EXPECT_GE(k.first_instr, next);
        EXPECT_GE(k.last_instr, k.first_instr);
        next = k.last_instr + 1;
        flops += k.flops;
        bytes += k.hbm_bytes;
        collectives += k.collective == isa::Collective::kAllReduce;
      }
      EXPECT_LE(next, stream.size());
      EXPECT_EQ(flops, prog.info.flops);
      EXPECT_EQ(bytes, prog.info.hbm_bytes);
      EXPECT_EQ(table.size(), c.kernels);  // the fusions and the all-reduces (their dones are no kernels)
      EXPECT_GE(collectives, 1u);
      for (size_t k = 1; k < prog.cores.size(); ++k) {
        EXPECT_EQ(prog.stream(k).kernels.size(), table.size());
        EXPECT_EQ(prog.stream(k).kernels.back().last_instr, table.back().last_instr);
      }
    }
    const isa::Program& prog = compile_spmd_step(data_parallel_step(st.dp, hw), hw, "bert-tiny").program;
    for (const char* engine : {"analytical", "systemc"}) {
      const RunResult r = make_engine(engine, hw)->run(prog, nullptr);
      uint64_t cycles = 0, flops = 0;
      bool collective = false;
      for (const OpProfileEntry& e : r.op_profile.entries) {
        cycles += e.cycles;
        flops += e.flops;
        if (e.name == "all-reduce") {
          collective = true;
          EXPECT_EQ(e.bound, OpBound::kIci);
          EXPECT_GT(e.ici_bound_s, 0);
        }
      }
      EXPECT_TRUE(collective) << engine;
      EXPECT_EQ(cycles, r.device_cycles) << engine;
      EXPECT_EQ(flops, prog.info.flops) << engine;
    }
  }
}

TEST(DataParallel, CacheKeyFollowsTheShape) {
  auto hw = v3_8();
  auto a = tiny_step();
  models::BertGraphOptions o;
  o.batch = 2;
  o.seq = 32;
  Step b{models::build_training_step(models::find_preset("bert-tiny"), o, {}), {}};
  b.dp.graph = &b.s.model.graph;
  EXPECT_FALSE(compile_spmd_step(data_parallel_step(a.dp, hw), hw, "a").key == compile_spmd_step(data_parallel_step(b.dp, hw), hw, "b").key);
  EXPECT_EQ(compile_spmd_step(data_parallel_step(a.dp, hw), hw, "a").key, compile_spmd_step(data_parallel_step(a.dp, hw), hw, "again").key);
}

}  // namespace
}  // namespace tpusim::compiler
