// An imported convolution's im2col operand, simulated: the dot tiler streams a broadcast's source
// that cannot stay whole in VMEM block by block (compiler/lower/dot_tiling.cc) instead of the importer
// writing the K-times-larger im2col matrix to HBM and reading it back (docs/hlo.md "convolution").
#include <gtest/gtest.h>

#include <string>

#include "compiler/hlo/hlo_import.h"
#include "compiler/hlo/hlo_parser.h"
#include "compiler/step/spmd_step.h"
#include "config/hw_loader.h"
#include "sim/engine/engine.h"

namespace tpusim::hlo {
namespace {

// A 3x3 "same" convolution of a [b, 56, 56, 64] bf16 input: ResNet-50's conv2 block at batch b.
std::string conv_module(int batch) {
  const std::string x = "bf16[" + std::to_string(batch) + ",56,56,64]";
  return "HloModule conv\nENTRY e {\n  x = " + x + " parameter(0)\n  k = bf16[3,3,64,64] parameter(1)\n  ROOT c = " + x +
         " convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f\n}\n";
}

struct Simulated {
  uint64_t dot_hbm_bytes = 0, flops = 0;  // the convolution's dot kernel
  double device_time_s = 0;
};

Simulated simulate(int batch, const char* engine) {
  const HwConfig hw = load_hw_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/v3-8.yaml");
  const HloImport r = import_hlo(parse_hlo_module(conv_module(batch), "conv.hlo"));
  for (const models::Node& n : r.graph.nodes()) EXPECT_FALSE(n.materialize) << n.name;
  const compiler::CompiledStep sp = compiler::compile_spmd_graph(r.graph, hw, "conv", {compiler::ring_order(hw)[0]});
  const RunResult rr = make_engine(engine, hw)->run(sp.program, nullptr);
  Simulated s{0, 0, rr.device_time_s};
  for (const isa::KernelRange& k : sp.program.cores.at(0).kernels)
    if (k.flops > 0) s.dot_hbm_bytes += k.hbm_bytes, s.flops += k.flops;
  return s;
}

// At batch 32 the input is 12.25 MiB: too large to stay whole in a v3 core's 16 MiB VMEM beside the
// dot's tiles. It compiles, and the dot moves about what the convolution must: the input and the
// output once each (both 2x in HBM: 64 features pad to the 128 lanes of a tile) and the kernel once
// per column block; reading the im2col matrix alone would be 9x the input.
TEST(HloConvolution, LargeInputStreamsItsIm2colView) {
  const Simulated s = simulate(32, "analytical");
  const uint64_t input = 32ull * 56 * 56 * 64 * 2;
  EXPECT_EQ(s.flops, 2ull * 32 * 56 * 56 * 64 * 9 * 64);
  EXPECT_GE(s.dot_hbm_bytes, 4 * input);
  EXPECT_LT(s.dot_hbm_bytes, 5 * input) << "the im2col matrix (" << 9 * input << " bytes) went through HBM";
  EXPECT_GT(s.device_time_s, 0);
}

// Time per example is about the same whether the input stays whole in VMEM (batch 4: 1.5 MiB) or is
// streamed (batch 32): streaming costs no more than its share of the traffic.
TEST(HloConvolution, StreamingCostsAboutWhatHoldingWholeDoes) {
  for (const char* engine : {"analytical", "systemc"}) {
    const Simulated small = simulate(4, engine), large = simulate(32, engine);
    const double per_small = small.device_time_s / 4, per_large = large.device_time_s / 32;
    EXPECT_LT(per_large, 1.25 * per_small) << engine;
    EXPECT_GT(per_large, 0.75 * per_small) << engine;
  }
}

}  // namespace
}  // namespace tpusim::hlo
