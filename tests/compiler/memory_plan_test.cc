// HBM liveness: persistent parameters, temporaries freed after their last reader, donation.
#include <gtest/gtest.h>

#include "compiler/plan/fusion.h"
#include "compiler/plan/memory_plan.h"
#include "models/graph.h"

namespace tpusim::compiler {
namespace {

using models::DType;
using models::EwOp;

// x -> relu(x @ w) = h (stored) -> reduce_sum(h) = s ; w' = w - 0.1 (an "update", donated).
struct Fixture {
  models::Graph g;
  int x, w, h, s, w2;
  Fixture() {
    x = g.parameter("x", {1024, 256}, DType::kF32);  // 1 MiB input
    w = g.parameter("w", {256, 512}, DType::kF32);   // 512 KiB parameter
    int d = g.dot(x, w, {{}, {}, {1}, {0}}, models::DotPrecision::kDefault, "dot");
    h = g.ew(EwOp::kRelu, d, -1, "h");
    int hh = g.ew(EwOp::kMul, h, h, "hh");  // two uses of h: the dot kernel must store it
    s = g.reduce(hh, 1, models::ReduceOp::kSum);
    w2 = g.ew(EwOp::kSub, w, g.constant(0.1, DType::kF32), "w_new");
    g.mark_output(s);
    g.mark_output(w2);
  }
};

BufferKind roles(const models::Graph& g, int id) {
  return g.node(id).name == "x" ? BufferKind::kInput : BufferKind::kParameter;
}

TEST(MemoryPlan, PersistentParametersAndTemporaries) {
  Fixture f;
  auto plan = plan_fusions(f.g);
  auto mp = plan_memory(f.g, plan, [&](int id) { return roles(f.g, id); });
  EXPECT_EQ(mp.persistent_bytes, 256u * 512 * 4);  // only w
  // The peak holds w, the input x (read by the dot kernel) and the dot's 2 MiB output h.
  EXPECT_GE(mp.peak_bytes, mp.persistent_bytes + 1024u * 256 * 4 + 1024u * 512 * 4);
  bool found_h = false;
  for (const auto& b : mp.buffers)
    if (b.bytes == 1024u * 512 * 4 && b.kind == BufferKind::kTemporary) found_h = true;
  EXPECT_TRUE(found_h);
}

TEST(MemoryPlan, DonatedUpdateNeedsNoExtraBuffer) {
  Fixture f;
  auto plan = plan_fusions(f.g);
  auto without = plan_memory(f.g, plan, [&](int id) { return roles(f.g, id); });
  auto with = plan_memory(f.g, plan, [&](int id) { return roles(f.g, id); }, {{f.w2, f.w}});
  EXPECT_EQ(without.buffers.size(), with.buffers.size() + 1);
  EXPECT_LE(with.peak_bytes, without.peak_bytes);
}

TEST(MemoryPlan, InputsAreFreedAfterTheirLastReader) {
  Fixture f;
  auto plan = plan_fusions(f.g);
  auto mp = plan_memory(f.g, plan, [&](int id) { return roles(f.g, id); });
  for (const auto& b : mp.buffers)
    if (b.name == "x") {
      EXPECT_EQ(b.kind, BufferKind::kInput);
      EXPECT_LT(b.last_kernel, int(plan.fusions.size()) - 1);
    }
}

}  // namespace
}  // namespace tpusim::compiler
