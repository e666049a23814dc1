// The typed attribute readers (compiler/hlo/hlo_attrs.h) on the data modules and on small modules.
#include <gtest/gtest.h>

#include "compiler/hlo/hlo_attrs.h"
#include "tests/hlo/hlo_test_util.h"

namespace tpusim::hlo {
namespace {

using testing::data_module;
using testing::error_of;
using testing::inst;

// A one-instruction module whose ROOT carries `attrs`.
Module with_attrs(const std::string& attrs) {
  return parse_hlo_module("HloModule m\nENTRY e {\n  p = f32[4,4] parameter(0)\n  ROOT r = f32[4,4] custom-call(p), " + attrs + "\n}\n", "t.hlo");
}
const Instruction& root(const Module& m) { return m.entry_computation().root_instruction(); }

TEST(HloAttrs, IntListsAndDotDims) {
  const Module m = data_module("jax_style.hlo");
  const DotDims d = dot_dims(m, inst(m, "main.50", "bdot.41"));
  EXPECT_EQ(d.lhs_batch, std::vector<int64_t>{0});
  EXPECT_EQ(d.lhs_contracting, std::vector<int64_t>{2});
  EXPECT_EQ(d.rhs_batch, std::vector<int64_t>{0});
  EXPECT_EQ(d.rhs_contracting, std::vector<int64_t>{1});
  EXPECT_TRUE(dot_dims(m, inst(m, "main.50", "dot.40")).lhs_batch.empty());
  EXPECT_EQ(*int_list_attr(m, inst(m, "main.50", "img.61"), "dimensions"), std::vector<int64_t>{});
  EXPECT_FALSE(int_list_attr(m, inst(m, "main.50", "dot.40"), "dimensions").has_value());
  EXPECT_EQ(*int_attr(m, inst(m, "main.50", "res.51"), "index"), 1);
}

TEST(HloAttrs, SlicePaddingWindowDimLabels) {
  const Module o = data_module("old_style.hlo");
  const auto sl = *slice_attr(o, inst(o, "SyncTensorsGraph.42", "slice.22"));
  ASSERT_EQ(sl.size(), 2u);
  EXPECT_EQ(sl[0].limit, 2);
  EXPECT_EQ(sl[0].stride, 1);
  EXPECT_EQ(sl[1].stride, 2);
  const auto pad = *padding_attr(o, inst(o, "SyncTensorsGraph.42", "pad.23"));
  ASSERT_EQ(pad.size(), 2u);
  EXPECT_EQ(pad[1].low, 1);
  EXPECT_EQ(pad[1].interior, 0);
  const Module m = data_module("jax_style.hlo");
  const auto w = *window_attr(m, inst(m, "main.50", "conv.63"));
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].size, 3);
  EXPECT_EQ(w[1].stride, 2);
  EXPECT_EQ(w[1].pad_high, 1);
  const DimLabels dl = *dim_labels_attr(m, inst(m, "main.50", "conv.63"));
  EXPECT_EQ(dl.lhs, "b01f");
  EXPECT_EQ(dl.rhs, "01io");
  EXPECT_EQ(dl.out, "b01f");
  const Module p = with_attrs("padding=-1_2_3x0_0_1");
  const auto pd = *padding_attr(p, root(p));
  EXPECT_EQ(pd[0].low, -1);
  EXPECT_EQ(pd[0].interior, 3);
}

TEST(HloAttrs, ReplicaGroupsListAndIota) {
  const Module o = data_module("old_style.hlo");
  EXPECT_EQ(*replica_groups_attr(o, inst(o, "SyncTensorsGraph.42", "all-reduce.26")), (std::vector<std::vector<int64_t>>{{0, 1}}));
  const Module m = data_module("jax_style.hlo");
  // [2,4]<=[8]: iota(8) in two rows.
  EXPECT_EQ(*replica_groups_attr(m, inst(m, "main.50", "ar.44")), (std::vector<std::vector<int64_t>>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  // [4,2]<=[2,4]T(1,0): iota(8) as 2x4, transposed to 4x2 -> 0 4 1 5 2 6 3 7.
  EXPECT_EQ(*replica_groups_attr(m, inst(m, "main.50", "ag.45")), (std::vector<std::vector<int64_t>>{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  const Module e = with_attrs("replica_groups={}");
  EXPECT_TRUE(replica_groups_attr(e, root(e))->empty());
  EXPECT_EQ(*source_target_pairs_attr(m, inst(m, "main.50", "cp.46")),
            (std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {1, 2}, {2, 3}, {3, 0}}));
}

TEST(HloAttrs, StringsDirectionMetadata) {
  const Module m = data_module("jax_style.hlo");
  EXPECT_EQ(*string_attr(m, inst(m, "main.50", "dyn.57"), "custom_call_target"), "SetBound \"x\"");
  EXPECT_EQ(*direction_attr(m, inst(m, "main.50", "pr.52")), "GT");
  const auto md = *metadata_attr(m, inst(m, "main.50", "dot.40"));
  EXPECT_EQ(md.at("op_name"), "jit(train_step)/jit(main)/dot_general");
  EXPECT_EQ(md.at("source_line"), "12");
  const Module o = data_module("old_style.hlo");
  EXPECT_EQ(metadata_attr(o, inst(o, "SyncTensorsGraph.42", "p0.1"))->at("op_type"), "xla__device_data");
  const Module bad = with_attrs("direction=XY");
  try {
    direction_attr(bad, root(bad));
    ADD_FAILURE() << "expected an HloError";
  } catch (const HloError& err) {
    EXPECT_EQ(err.line(), 4);
    EXPECT_EQ(err.column(), 47);
    EXPECT_EQ(err.instruction(), "r");
  }
}

TEST(HloAttrs, Sharding) {
  const Module m = data_module("jax_style.hlo");
  const Sharding a = *sharding_attr(m, inst(m, "main.50", "Arg_0.1"));
  EXPECT_EQ(a.kind, Sharding::Kind::kTiled);
  EXPECT_EQ(a.tile_dims, (std::vector<int64_t>{8, 1}));
  EXPECT_EQ(a.devices, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  const Sharding b = *sharding_attr(m, inst(m, "main.50", "Arg_1.2"));
  EXPECT_TRUE(b.last_tile_dim_replicate);
  EXPECT_EQ(b.tile_dims, (std::vector<int64_t>{2, 1, 4}));
  EXPECT_EQ(sharding_attr(m, inst(m, "main.50", "Arg_2.3"))->kind, Sharding::Kind::kReplicated);
  const Module o = data_module("old_style.hlo");
  const Sharding mx = *sharding_attr(o, inst(o, "SyncTensorsGraph.42", "p1.2"));
  EXPECT_EQ(mx.kind, Sharding::Kind::kMaximal);
  EXPECT_EQ(mx.device, 0);
  const Module t = with_attrs("sharding={{replicated}, {devices=[2,1]<=[2]}, {manual}}");
  const Sharding tu = *sharding_attr(t, root(t));
  ASSERT_EQ(tu.kind, Sharding::Kind::kTuple);
  ASSERT_EQ(tu.elements.size(), 3u);
  EXPECT_EQ(tu.elements[1].devices, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(tu.elements[2].kind, Sharding::Kind::kManual);
  EXPECT_EQ(tu.raw, "{replicated}, {devices=[2,1]<=[2]}, {manual}");
}

// Malformed typed values: an HloError at the offending part's line and column (the ROOT is on line 4;
// its attribute's name starts at column 37: "  ROOT r = f32[4,4] custom-call(p), NAME=VALUE").
TEST(HloAttrs, MalformedValuesNamePosition) {
  struct Case {
    std::string attrs;
    int column;
    std::string expect;
  };
  for (const Case& c : std::vector<Case>{
           {"slice={[0:2], [1]}", 53, "expected ':' and the slice's limit"},
           {"padding=1x1", 46, "expected '_'"},
           {"window={size=3x3 stride=2}", 54, "has 1 dimensions but size has 2"},
           {"replica_groups=[2,4]<=[3]", 52, "lists 3 devices for 2 groups of 4"},
           {"replica_groups=[2,2]<=[2,2]T(0,0)", 70, "is not a permutation"},
           {"dim_labels=b01f_01xo->b01f", 48, "has label 'x'"},
           {"sharding={devices=[2,2]0,1,2}", 46, "do not fill the tile dimensions"},
           {"replica_groups=[1048576,1048576]<=[2]", 52, "more than 2^20 devices"},
       }) {
    const Module m = with_attrs(c.attrs);
    const Instruction& r = root(m);
    try {
      if (c.attrs.starts_with("slice")) slice_attr(m, r);
      else if (c.attrs.starts_with("padding")) padding_attr(m, r);
      else if (c.attrs.starts_with("window")) window_attr(m, r);
      else if (c.attrs.starts_with("replica")) replica_groups_attr(m, r);
      else if (c.attrs.starts_with("dim_labels")) dim_labels_attr(m, r);
      else sharding_attr(m, r);
      ADD_FAILURE() << "expected an HloError for " << c.attrs;
    } catch (const HloError& e) {
      EXPECT_EQ(e.line(), 4) << c.attrs;
      EXPECT_EQ(e.column(), c.column) << c.attrs << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find(c.expect), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("t.hlo:4: column"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace tpusim::hlo
