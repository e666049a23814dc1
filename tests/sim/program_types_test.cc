// The value types of program.h: isa::Label (interned strings) and isa::SmallVector (deps), and
// their JSON form inside an Instr.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "sim/isa/program.h"

namespace tpusim::isa {
namespace {

TEST(Label, InternedComparesAndConvertsLikeAString) {
  const std::string text = std::string("fusion.") + "3:matmul";  // built at run time
  Label a = text, b = "fusion.3:matmul", c = std::string_view("fusion.4");
  EXPECT_EQ(a, b);
  EXPECT_EQ(&a.str(), &b.str());  // one pool entry
  EXPECT_NE(a, c);
  EXPECT_TRUE(a == "fusion.3:matmul" && "fusion.3:matmul" == a && a == text && a == std::string_view(text));
  EXPECT_TRUE((a <=> c) < 0) << "ordered as strings";
  const std::string& ref = a;
  std::string_view view = a;
  EXPECT_EQ(ref, text);
  EXPECT_EQ(view, text);
  EXPECT_EQ("'" + a + "'", "'fusion.3:matmul'");
  EXPECT_EQ(a + "!", "fusion.3:matmul!");
  EXPECT_EQ(std::string("x") + a, "xfusion.3:matmul");
  std::ostringstream os;
  os << a;
  EXPECT_EQ(os.str(), text);
  EXPECT_EQ(a.size(), text.size());
  EXPECT_STREQ(a.c_str(), text.c_str());
}

TEST(Label, EmptyIsTheDefault) {
  Label e;
  EXPECT_TRUE(e.empty());
  EXPECT_EQ(e, Label(""));
  EXPECT_EQ(e, "");
  EXPECT_EQ(e.str(), "");
  EXPECT_EQ(e.size(), 0u);
}

using Vec = SmallVector<uint32_t, 4>;

TEST(SmallVector, InlineUpToCapacityThenHeap) {
  Vec v = {1, 2, 3};
  EXPECT_EQ(v.size(), 3u);
  EXPECT_EQ(v.capacity(), 4u);
  const uint32_t* inline_data = v.data();
  v.push_back(4);
  EXPECT_EQ(v.data(), inline_data);
  v.push_back(5);  // spills
  EXPECT_NE(v.data(), inline_data);
  EXPECT_GE(v.capacity(), 5u);
  EXPECT_EQ(v, (std::vector<uint32_t>{1, 2, 3, 4, 5}));
  v.clear();
  EXPECT_TRUE(v.empty());
}

TEST(SmallVector, CopyMoveAndAssign) {
  Vec small = {7, 8};
  Vec big = {1, 2, 3, 4, 5, 6};
  Vec a = small, b = big;
  EXPECT_EQ(a, small);
  EXPECT_EQ(b, big);
  EXPECT_NE(b.data(), big.data());  // deep copy
  Vec m = std::move(b);
  EXPECT_EQ(m, big);
  EXPECT_TRUE(b.empty());
  a = big;  // inline <- heap
  EXPECT_EQ(a, big);
  a = small;  // heap storage reused for a smaller copy
  EXPECT_EQ(a, small);
  a = std::vector<uint32_t>{9, 9, 9, 9, 9};
  EXPECT_EQ(a.size(), 5u);
  a = {3};
  EXPECT_EQ(a, Vec{3});
  const Vec& alias = a;
  a = alias;  // self-assignment
  EXPECT_EQ(a, Vec{3});
}

TEST(SmallVector, InsertAssignAndSelfAliasing) {
  Vec v = {1, 2};
  const std::vector<uint32_t> more = {3, 4, 5};
  v.insert(v.end(), more.begin(), more.end());
  EXPECT_EQ(v, (std::vector<uint32_t>{1, 2, 3, 4, 5}));
  v.insert(v.begin() + 1, 9);
  EXPECT_EQ(v, (std::vector<uint32_t>{1, 9, 2, 3, 4, 5}));
  Vec w = {1, 2, 3};
  w.insert(w.end(), w.begin(), w.end());  // grows while reading itself
  EXPECT_EQ(w, (std::vector<uint32_t>{1, 2, 3, 1, 2, 3}));
  Vec x = {1, 2, 3, 4};
  x.push_back(x[0]);  // grows while reading itself
  EXPECT_EQ(x, (std::vector<uint32_t>{1, 2, 3, 4, 1}));
  x.assign(more.begin(), more.end());
  EXPECT_EQ(x, more);
  x.erase(x.begin());
  EXPECT_EQ(x, (std::vector<uint32_t>{4, 5}));
  x.resize(6, 7);
  EXPECT_EQ(x, (std::vector<uint32_t>{4, 5, 7, 7, 7, 7}));
}

TEST(Instr, CopiesAndJsonKeepLabelsAndDeps) {
  Instr i;
  i.op = Op::kDmaLoad;
  i.bytes = 4096;
  i.deps = {0, 1, 2, 3, 4, 5};
  i.label = "k:load x";
  Instr j = i;
  EXPECT_EQ(j.deps, i.deps);
  EXPECT_EQ(j.label, i.label);
  nlohmann::json js = j;
  EXPECT_EQ(js["label"], "k:load x");
  EXPECT_EQ(js["deps"], nlohmann::json::array({0, 1, 2, 3, 4, 5}));
  Instr k = js.get<Instr>();
  EXPECT_EQ(k.deps, i.deps);
  EXPECT_EQ(k.label, i.label);
  EXPECT_EQ(nlohmann::json(k), js);
  EXPECT_THROW(nlohmann::json({{"label", 3}}).get<Instr>(), nlohmann::json::exception);
  EXPECT_THROW(nlohmann::json({{"deps", "x"}}).get<Instr>(), nlohmann::json::exception);
}

// The collective mark (program.h) is written only when set, on instructions and kernels, and
// reads back; programs written before it existed load unmarked.
TEST(Instr, CollectiveMarkRoundTripsAndIsOmittedWhenUnset) {
  Instr i;
  i.op = Op::kSend;
  EXPECT_FALSE(nlohmann::json(i).contains("collective"));
  i.collective = Collective::kReduceScatter;
  const nlohmann::json js = i;
  EXPECT_EQ(js["collective"], "reduce-scatter");
  EXPECT_EQ(js.get<Instr>().collective, Collective::kReduceScatter);
  KernelRange k;
  k.name = "all-gather";
  EXPECT_FALSE(nlohmann::json(k).contains("collective"));
  k.collective = Collective::kAllGather;
  EXPECT_EQ(nlohmann::json(k).get<KernelRange>().collective, Collective::kAllGather);
  EXPECT_EQ(nlohmann::json({{"name", "x"}}).get<KernelRange>().collective, Collective::kNone);
}

}  // namespace
}  // namespace tpusim::isa
