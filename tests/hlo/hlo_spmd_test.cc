// SPMD partitioning by sharding annotations (compiler/hlo/hlo_spmd.h, docs/hlo.md "SPMD
// partitioning"): hand-written pre-partitioning modules partitioned, imported, compiled across one core
// per partition and simulated: data parallel (no collective, flops / N), Megatron's column- then
// row-parallel pair (one all-reduce), a contracting-sharded dot, a replicated parameter used by a
// sharded op, the same module already partitioned by hand (same device time), detection of
// partitioned dumps, and bad or unsupported shardings (HloError, or unmodelled with the line).
#include <gtest/gtest.h>

#include <string>

#include "compiler/hlo/hlo_error.h"
#include "tests/hlo/hlo_spmd_test_util.h"

namespace tpusim::hlo {
namespace {

using namespace spmd_test;  // NOLINT: the helpers of hlo_spmd_test_util.h

const char* kDataParallel = R"(HloModule dp, num_partitions=4
ENTRY main {
  x = f32[512,1024] parameter(0), sharding={devices=[4,1]0,1,2,3}
  w = f32[1024,2048] parameter(1), sharding={replicated}
  b = f32[2048] parameter(2), sharding={replicated}
  d = f32[512,2048] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[512,2048] broadcast(b), dimensions={1}
  ROOT y = f32[512,2048] add(d, bb)
})";

// (a) and (d): a batch-sharded dot with a replicated weight and bias: each partition computes its
// rows, no collective, no slice; the dot's flops divide by the partitions.
TEST(HloSpmd, DataParallelDot) {
  for (int n : {2, 4}) {
    std::string text = kDataParallel;
    if (n == 2) {
      text.replace(text.find("num_partitions=4"), 16, "num_partitions=2");
      text.replace(text.find("[4,1]0,1,2,3"), 12, "[2,1]0,1");
    }
    const Module m = parse_hlo_module(text, "t.hlo");
    const SpmdResult r = spmd_partition(m);
    ASSERT_TRUE(r.report.partitioned) << r.report.reason;
    ASSERT_TRUE(r.module);
    EXPECT_EQ(inserted(r.report), 0);
    EXPECT_EQ(r.report.local_slices, 0);
    EXPECT_TRUE(r.report.unmodelled.empty());
    EXPECT_EQ(r.report.given, 3);
    EXPECT_EQ(r.report.propagated, 3);
    EXPECT_EQ(entry_inst(*r.module, "x").shape.dims, (std::vector<int64_t>{512 / n, 1024}));
    EXPECT_EQ(entry_inst(*r.module, "y").shape.dims, (std::vector<int64_t>{512 / n, 2048}));
    EXPECT_EQ(entry_inst(*r.module, "bb").shape.dims, (std::vector<int64_t>{512 / n, 2048}));
    EXPECT_EQ(hlo_statistics(*r.module).dot_flops * uint64_t(n), hlo_statistics(m).dot_flops);
    EXPECT_GT(device_time(*r.module, n), 0);
  }
}

// Megatron's MLP: the first matmul column-parallel, the second row-parallel: one all-reduce of the
// output (its bytes: the whole [B, H] in f32), over the four partitions.
const char* kMegatron = R"(HloModule megatron, num_partitions=4
ENTRY main {
  x = f32[256,1024] parameter(0), sharding={replicated}
  w1 = f32[1024,4096] parameter(1), sharding={devices=[1,4]0,1,2,3}
  w2 = f32[4096,1024] parameter(2), sharding={devices=[4,1]0,1,2,3}
  h = f32[256,4096] dot(x, w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  zero = f32[] constant(0)
  zeros = f32[256,4096] broadcast(zero), dimensions={}
  a = f32[256,4096] maximum(h, zeros)
  ROOT y = f32[256,1024] dot(a, w2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})";

TEST(HloSpmd, MegatronOneAllReduce) {
  const SpmdResult r = partition(kMegatron);
  ASSERT_TRUE(r.module);
  ASSERT_EQ(r.report.collectives.size(), 1u);
  const SpmdCollectiveStats& ar = r.report.collectives.at("all-reduce");
  EXPECT_EQ(ar.count, 1);
  EXPECT_EQ(ar.result_bytes, 256u * 1024 * 4);
  EXPECT_EQ(r.report.local_slices, 0);
  EXPECT_EQ(entry_inst(*r.module, "h").shape.dims, (std::vector<int64_t>{256, 1024}));
  EXPECT_EQ(entry_inst(*r.module, "y").shape.dims, (std::vector<int64_t>{256, 1024}));
  const Instruction& root = r.module->entry_computation().root_instruction();
  EXPECT_EQ(root.opcode, "all-reduce");
  EXPECT_EQ(root.attr("replica_groups")->value, "{{0,1,2,3}}");
  // With two data-parallel copies (replica_count 2): groups within each copy.
  const SpmdResult r2 = partition(kMegatron, 2);
  EXPECT_EQ(r2.module->entry_computation().root_instruction().attr("replica_groups")->value, "{{0,1,2,3},{4,5,6,7}}");
  const HloImport imp = import_hlo(*r.module);
  EXPECT_TRUE(imp.stats.unmodelled.empty());
  int collectives = 0;
  for (const models::Node& n : imp.graph.nodes()) collectives += n.kind == models::OpKind::kCollective;
  EXPECT_EQ(collectives, 1);
}

// (c) A dot contracting a dimension both operands shard: partial sums and an all-reduce; a reduce
// over a sharded dimension likewise, with the reduce's own computation.
TEST(HloSpmd, ContractingShardedAllReduce) {
  const SpmdResult r = partition(R"(HloModule k, num_partitions=4
max_f {
  p = f32[] parameter(0)
  q = f32[] parameter(1)
  ROOT m = f32[] maximum(p, q)
}
ENTRY main {
  x = f32[128,2048] parameter(0), sharding={devices=[1,4]0,1,2,3}
  w = f32[2048,512] parameter(1), sharding={devices=[4,1]0,1,2,3}
  d = f32[128,512] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  init = f32[] constant(-inf)
  mx = f32[128] reduce(x, init), dimensions={1}, to_apply=max_f
  ROOT t = (f32[128,512], f32[128]) tuple(d, mx)
})");
  ASSERT_TRUE(r.module);
  EXPECT_EQ(r.report.collectives.at("all-reduce").count, 2);
  EXPECT_EQ(r.report.collectives.at("all-reduce").result_bytes, (128u * 512 + 128) * 4);
  EXPECT_EQ(entry_inst(*r.module, "d").shape.dims, (std::vector<int64_t>{128, 512}));
  const Module& pm = *r.module;
  const HloImport imp = import_hlo(pm);
  EXPECT_TRUE(imp.stats.unmodelled.empty());
  int sums = 0, maxes = 0;
  for (const models::Node& n : imp.graph.nodes())
    if (n.kind == models::OpKind::kCollective) (n.collective.reduce == models::ReduceOp::kMax ? maxes : sums)++;
  EXPECT_EQ(sums, 1);
  EXPECT_EQ(maxes, 1);
}

// Resharding: a with_sharding_constraint moving the tile to another dimension is an all-to-all, to
// replicated an all-gather, replicated to tiled a local slice; a device order change a permute.
TEST(HloSpmd, Reshards) {
  const SpmdResult r = partition(R"(HloModule rs, num_partitions=4
ENTRY main {
  x = f32[64,256] parameter(0), sharding={devices=[4,1]0,1,2,3}
  moved = f32[64,256] custom-call(x), custom_call_target="Sharding", sharding={devices=[1,4]0,1,2,3}
  whole = f32[64,256] custom-call(moved), custom_call_target="Sharding", sharding={replicated}
  tiled = f32[64,256] custom-call(whole), custom_call_target="Sharding", sharding={devices=[4,1]0,1,2,3}
  ROOT order = f32[64,256] custom-call(tiled), custom_call_target="Sharding", sharding={devices=[4,1]1,0,3,2}
})");
  ASSERT_TRUE(r.module);
  const auto& c = r.report.collectives;
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c.at("all-to-all").count, 1);
  EXPECT_EQ(c.at("all-gather").count, 1);
  EXPECT_EQ(c.at("all-gather").result_bytes, 64u * 256 * 4);
  EXPECT_EQ(c.at("collective-permute").count, 1);
  EXPECT_EQ(r.report.local_slices, 1);
  EXPECT_EQ(entry_inst(*r.module, "moved").shape.dims, (std::vector<int64_t>{64, 64}));
  const HloImport imp = import_hlo(*r.module);
  EXPECT_TRUE(imp.stats.unmodelled.empty()) << imp.stats.unmodelled.front().reason;
}

// (e) The Megatron module as XLA's partitioner writes it (per-partition shapes, the all-reduce in
// the text, no sharding): the pass leaves it alone, and it takes the partitioned form's device time.
TEST(HloSpmd, SameTimeAsPartitionedByHand) {
  const char* by_hand = R"(HloModule megatron_spmd, num_partitions=4
add_f {
  p = f32[] parameter(0)
  q = f32[] parameter(1)
  ROOT s = f32[] add(p, q)
}
ENTRY main {
  x = f32[256,1024] parameter(0)
  w1 = f32[1024,1024] parameter(1)
  w2 = f32[1024,1024] parameter(2)
  h = f32[256,1024] dot(x, w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  zero = f32[] constant(0)
  zeros = f32[256,1024] broadcast(zero), dimensions={}
  a = f32[256,1024] maximum(h, zeros)
  y = f32[256,1024] dot(a, w2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT ar = f32[256,1024] all-reduce(y), channel_id=1, replica_groups={{0,1,2,3}}, use_global_device_ids=true, to_apply=add_f
})";
  const SpmdResult hand = partition(by_hand);
  EXPECT_FALSE(hand.report.partitioned);
  EXPECT_NE(hand.report.reason.find("no sharding"), std::string::npos) << hand.report.reason;
  const SpmdResult pre = partition(kMegatron);
  ASSERT_TRUE(pre.module);
  const double a = device_time(*pre.module, 4), b = device_time(parse_hlo_module(by_hand, "h.hlo"), 4);
  EXPECT_NEAR(a / b, 1.0, 0.03) << "pre-partitioning " << a << " s, partitioned by hand " << b << " s";
  std::printf("[ figures  ] Megatron MLP on 4 cores of v3-8: partitioned by tpusim %.2f us, by hand %.2f us; "
              "as written on every core %.2f us\n", a * 1e6, b * 1e6,
              device_time(parse_hlo_module(kMegatron, "w.hlo()"), 4) * 1e6);
}

// Which modules are partitioned: num_partitions 1, an after_optimizations dump, fusion instructions,
// spmd modes.
TEST(HloSpmd, Detection) {
  EXPECT_TRUE(partition(kMegatron).report.partitioned);
  EXPECT_FALSE(partition(kMegatron, 1, SpmdMode::kAsWritten).report.partitioned);
  EXPECT_FALSE(partition(kMegatron, 1, SpmdMode::kAuto, "m.after_optimizations.txt").report.partitioned);
  EXPECT_TRUE(partition(kMegatron, 1, SpmdMode::kPartition, "m.after_optimizations.txt").report.partitioned);
  std::string one = kMegatron;
  one.replace(one.find(", num_partitions=4"), 18, "");
  const SpmdResult r = partition(one);
  EXPECT_FALSE(r.report.partitioned);
  EXPECT_NE(r.report.reason.find("num_partitions is 1"), std::string::npos);
  EXPECT_FALSE(r.module);
}

// A shard_map-style manual region (SPMDFullToShardShape ... SPMDShardToFullShape) keeps its shapes
// and its own collective (its groups repeated per copy); a tuple parameter takes a tuple sharding.
TEST(HloSpmd, ManualRegionAndTuples) {
  const std::string text = R"(HloModule sm, num_partitions=2
add_f {
  p = f32[] parameter(0)
  q = f32[] parameter(1)
  ROOT s = f32[] add(p, q)
}
ENTRY main {
  x = f32[8,128] parameter(0), sharding={devices=[2,1]0,1}
  s = f32[8,128] custom-call(x), custom_call_target="Sharding", sharding={devices=[2,1]0,1}
  l = f32[4,128] custom-call(s), custom_call_target="SPMDFullToShardShape", sharding={manual}
  e = f32[4,128] exponential(l), sharding={manual}
  ar = f32[4,128] all-reduce(e), channel_id=1, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=add_f, sharding={manual}
  f = f32[8,128] custom-call(ar), custom_call_target="SPMDShardToFullShape", sharding={devices=[2,1]0,1}
  p = (f32[8,16], f32[16]) parameter(1), sharding={{devices=[2,1]0,1}, {replicated}}
  a = f32[8,16] get-tuple-element(p), index=0
  b = f32[16] get-tuple-element(p), index=1
  bb = f32[8,16] broadcast(b), dimensions={1}
  sum = f32[8,16] add(a, bb)
  ROOT t = (f32[8,128], f32[8,16]) tuple(f, sum)
})";
  const SpmdResult r = partition(text, 2);
  ASSERT_TRUE(r.module) << r.report.reason;
  EXPECT_EQ(inserted(r.report), 0);
  EXPECT_TRUE(r.report.unmodelled.empty()) << r.report.unmodelled.front().reason;
  EXPECT_EQ(entry_inst(*r.module, "x").shape.dims, (std::vector<int64_t>{4, 128}));
  EXPECT_EQ(entry_inst(*r.module, "l").shape.dims, (std::vector<int64_t>{4, 128}));
  EXPECT_EQ(entry_inst(*r.module, "f").shape.dims, (std::vector<int64_t>{4, 128}));
  EXPECT_EQ(entry_inst(*r.module, "p").shape.to_string(), "(f32[4,16], f32[16])");
  EXPECT_EQ(entry_inst(*r.module, "sum").shape.dims, (std::vector<int64_t>{4, 16}));
  EXPECT_EQ(entry_inst(*r.module, "ar").attr("replica_groups")->value, "{{0,1},{2,3}}");
  ImportOptions io;
  io.replicas = 4;
  const HloImport imp = import_hlo(*r.module, io);
  EXPECT_TRUE(imp.stats.unmodelled.empty()) << imp.stats.unmodelled.front().reason;
  int collectives = 0;
  for (const models::Node& n : imp.graph.nodes()) collectives += n.kind == models::OpKind::kCollective;
  EXPECT_EQ(collectives, 1);
}

// A two-dimensional mesh (data 2 x model 4 on 8 partitions, last_tile_dim_replicate, iota device
// lists): the row-parallel all-reduce is over each data row's four model devices.
TEST(HloSpmd, TwoDimensionalMesh) {
  const SpmdResult r = partition(R"(HloModule mesh, num_partitions=8
ENTRY main {
  x = f32[256,1024] parameter(0), sharding={devices=[2,1,4]<=[8] last_tile_dim_replicate}
  w1 = f32[1024,4096] parameter(1), sharding={devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}
  w2 = f32[4096,1024] parameter(2), sharding={devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}
  h = f32[256,4096] dot(x, w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT y = f32[256,1024] dot(h, w2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
  ASSERT_TRUE(r.module);
  EXPECT_EQ(inserted(r.report), 1) << r.module->entry_computation().root_instruction().opcode;
  EXPECT_EQ(entry_inst(*r.module, "h").shape.dims, (std::vector<int64_t>{128, 1024}));
  const Instruction& root = r.module->entry_computation().root_instruction();
  ASSERT_EQ(root.opcode, "all-reduce");
  EXPECT_EQ(root.attr("replica_groups")->value, "{{0,1,2,3},{4,5,6,7}}");
  EXPECT_GT(device_time(*r.module, 8), 0);
}

// (f) Bad shardings are HloError at the attribute; ops the pass does not partition are listed with
// their line, their operands gathered.
TEST(HloSpmd, BadAndUnsupported) {
  auto error_of = [](const std::string& sharding) -> std::string {
    try {
      partition("HloModule b, num_partitions=4\nENTRY main {\n  ROOT x = f32[8,8] parameter(0), sharding=" + sharding + "\n}\n");
    } catch (const HloError& e) {
      EXPECT_EQ(e.line(), 3);
      EXPECT_EQ(e.instruction(), "x");
      return e.what();
    }
    return "no error";
  };
  EXPECT_NE(error_of("{devices=[4]0,1,2,3}").find("tile dimensions for the rank-2"), std::string::npos);
  EXPECT_NE(error_of("{devices=[2,2]0,1,1,3}").find("twice"), std::string::npos);
  EXPECT_NE(error_of("{devices=[2,1]0,1}").find("num_partitions 4"), std::string::npos);
  EXPECT_NE(error_of("{maximal device=7}").find("not a partition"), std::string::npos);
  EXPECT_NE(error_of("{devices=[2,2]0,1,2,3 last_tile_dim_replicate}").find("one more with last_tile_dim_replicate"),
            std::string::npos);
  const SpmdResult r = partition(R"(HloModule u, num_partitions=2
ENTRY main {
  table = f32[1000,64] parameter(0), sharding={devices=[2,1]0,1}
  ids = s32[32,1] parameter(1), sharding={replicated}
  ROOT g = f32[32,64] gather(table, ids), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,64}
})");
  ASSERT_TRUE(r.module);
  ASSERT_EQ(r.report.unmodelled.size(), 1u);
  EXPECT_EQ(r.report.unmodelled[0].instruction, "g");
  EXPECT_EQ(r.report.unmodelled[0].line, 5);
  EXPECT_NE(r.report.unmodelled[0].reason.find("gathered"), std::string::npos);
  EXPECT_EQ(r.report.collectives.at("all-gather").count, 1);
  EXPECT_EQ(entry_inst(*r.module, "g").shape.dims, (std::vector<int64_t>{32, 64}));
}

}  // namespace
}  // namespace tpusim::hlo
