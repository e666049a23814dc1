// compile_graph_spmd (compiler/graph_spmd.h): one graph on several cores. Every core gets the
// program (sharing core 0's stream), the engines run them all at once, and cores that share a chip
// slow each other down only through what they share (HBM on a megacore chip), never speed up.
#include <gtest/gtest.h>

#include "compiler/compile.h"
#include "compiler/graph_spmd.h"
#include "config/hw_loader.h"
#include "models/kernels.h"
#include "sim/engine/engine.h"

namespace tpusim::compiler {
namespace {

HwConfig hw_of(const std::string& f) { return load_hw_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/" + f); }

models::Graph matmul_graph(uint64_t n) {
  return models::build_kernel({"matmul", {{"m", n}, {"k", n}, {"n", n}}, models::DType::kBF16,
                               models::DotPrecision::kDefault});
}

TEST(GraphSpmd, EveryCoreRunsTheProgram) {
  const HwConfig hw = hw_of("v3-8.yaml");
  const std::vector<CoreId> cores = ring_order(hw);
  ASSERT_EQ(cores.size(), 8u);
  const models::Graph g = matmul_graph(1024);
  const SpmdProgram sp = compile_graph_spmd(g, hw, "mm", cores);
  ASSERT_EQ(sp.program.cores.size(), 8u);
  for (size_t k = 0; k < 8; ++k) EXPECT_EQ(sp.program.stream(k).instrs.size(), sp.program.stream(0).instrs.size());
  EXPECT_GT(sp.kernels, 0u);
  const isa::Program one = compile_graph(g, hw, "mm", 0, 0);
  EXPECT_EQ(sp.program.info.flops, one.info.flops);
  for (const char* engine : {"analytical", "systemc"}) {
    const uint64_t alone = make_engine(engine, hw)->run(one, nullptr).device_cycles;
    const uint64_t all = make_engine(engine, hw)->run(sp.program, nullptr).device_cycles;
    // v3's two cores per chip have HBM of their own: eight independent copies take as long as one
    // (the standalone kernel keeps its inputs where they were placed; the SPMD program reads them
    // from HBM, hence the tolerance).
    EXPECT_GE(all, alone * 0.98) << engine;
    EXPECT_LE(all, alone * 1.25) << engine;
  }
}

TEST(GraphSpmd, RejectsNoCoresAndDuplicates) {
  const HwConfig hw = hw_of("v3-8.yaml");
  const models::Graph g = matmul_graph(256);
  EXPECT_THROW(compile_graph_spmd(g, hw, "mm", {}), std::invalid_argument);
  EXPECT_THROW(compile_graph_spmd(g, hw, "mm", {{0, 0}, {0, 0}}), std::invalid_argument);
}

}  // namespace
}  // namespace tpusim::compiler
