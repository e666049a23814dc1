// Host copies (models::OpKind::kHostOffload / kHostReload; compiler/step/spmd_step.h): one
// transfer each on the host queue, issued where scheduled. The kernels after an offload do not
// wait for it (its done does), a reload is awaited by its first reader, and the copies overlap
// the matmuls: the program takes about the longer of the two, not their sum, on both engines.
#include <gtest/gtest.h>

#include <algorithm>

#include "compiler/step/spmd_step.h"
#include "config/hw_loader.h"
#include "sim/engine/engine.h"

namespace tpusim::compiler {
namespace {

using models::DType;

// y = x w1 (offloaded), z = x w2 (independent of the copy), the copy awaited, brought back and
// read: out = r + z.
models::Graph offload_graph(bool offload) {
  models::Graph g;
  const int64_t n = 4096;
  const int x = g.parameter("x", {n, n}, DType::kBF16);
  const int w1 = g.parameter("w1", {n, n}, DType::kBF16, models::ParamRole::kTrainable);
  const int w2 = g.parameter("w2", {n, n}, DType::kBF16, models::ParamRole::kTrainable);
  models::DotDims mm;
  mm.lhs_contract = {1};
  mm.rhs_contract = {0};
  const int y = g.dot(x, w1, mm, models::DotPrecision::kDefault, "y");
  g.set_materialize(y);
  int r = y;
  int off = -1;
  if (offload) off = g.host_offload(y, "y.offload");
  const int z = g.dot(x, w2, mm, models::DotPrecision::kDefault, "z");
  if (offload) r = g.host_reload(g.collective_done(off, "y.offload-done"), "y.reload");
  g.mark_output(g.ew(models::EwOp::kAdd, r, z, "out"));
  g.set_scheduled(true);
  return g;
}

TEST(HostCopy, RunsBesideTheKernelsAndIsAwaitedWhereScheduled) {
  const HwConfig hw = load_hw_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/v6e-1.yaml");
  const std::vector<CoreId> core = {ring_order(hw).front()};
  const CompiledStep with = compile_spmd_graph(offload_graph(true), hw, "offload", core);
  const CompiledStep without = compile_spmd_graph(offload_graph(false), hw, "kept", core);
  const uint64_t bytes = 4096ull * 4096 * 2;
  EXPECT_EQ(with.host_offload_bytes, bytes);
  EXPECT_EQ(with.host_reload_bytes, bytes);
  EXPECT_EQ(with.memory.host_peak_bytes, bytes);
  const isa::CoreProgram& c = with.program.cores[0];
  uint32_t store = UINT32_MAX, load = UINT32_MAX;
  for (uint32_t i = 0; i < c.instrs.size(); ++i) {
    if (c.instrs[i].op == isa::Op::kHostStore) store = i;
    if (c.instrs[i].op == isa::Op::kHostLoad) load = i;
  }
  ASSERT_NE(store, UINT32_MAX);
  ASSERT_NE(load, UINT32_MAX);
  ASSERT_LT(store, load);
  // z's instructions (between the store and the load) do not wait for the store; the load comes
  // after the done, which waits for it.
  for (uint32_t i = store + 1; i < load; ++i)
    for (uint32_t d : c.instrs[i].deps) EXPECT_NE(d, store) << "instruction " << i;
  for (const char* engine : {"analytical", "systemc"}) {
    const double t_with = double(make_engine(engine, hw)->run(with.program, nullptr).device_cycles);
    const double t_without = double(make_engine(engine, hw)->run(without.program, nullptr).device_cycles);
    // 32 MiB each way over PCIe at 32 GB/s: ~1 ms apart, the matmul z ~0.15 ms; the store overlaps
    // z, so the program with copies takes less than the copies plus the program without them.
    const double copy_cycles = 2.0 * double(bytes) / 32e9 * hw.chip.core.clock_mhz * 1e6;
    EXPECT_GT(t_with, t_without + 0.8 * copy_cycles) << engine;  // the copies are on the path
    EXPECT_LT(t_with, t_without + 1.1 * copy_cycles) << engine;
  }
}

}  // namespace
}  // namespace tpusim::compiler
