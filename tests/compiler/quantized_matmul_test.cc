// Quantized matmuls (models::DotPrecision kInt8 / kFp8, compiler/lower/dot_parts.cc): the MXU streams
// at the chip's int8 (fp8) rate (chip mxu.int8_rate: twice bf16 on v5e, v5p and v6e; the bf16 rate
// on v4), the operands' quantization and the result's dequantization add VPU work, the flops are
// the matmul's. A large MXU-bound matmul streams half the row slots where the rate is 2 and takes
// more than half its bf16 time (the quantization), no less than its bf16 time where the rate is 1;
// a chip without the format refuses the kernel.
#include <gtest/gtest.h>

#include "sim/base/sim_error.h"
#include "compiler/compile.h"
#include "config/hw_loader.h"
#include "sim/engine/engine.h"
#include "sim/mxu/mxu_timing.h"

namespace tpusim::compiler {
namespace {

HwConfig hw_named(const std::string& name) { return load_hw_config(std::string(TPUSIM_SOURCE_DIR) + "/configs/hw/" + name + ".yaml"); }

struct Timed {
  double s = 0;
  uint64_t flops = 0, row_slots = 0;
};

Timed run(const HwConfig& hw, models::DotPrecision p, uint64_t n = 4096) {
  const isa::Program prog =
      compile_kernel({"matmul", {{"m", n}, {"k", n}, {"n", n}}, models::DType::kBF16, p}, hw);
  Timed t;
  t.flops = prog.info.flops;
  for (const isa::CoreProgram& c : isa::unshared(prog).cores)
    for (const isa::Instr& i : c.instrs)
      if (i.op == isa::Op::kMxuMatmul) t.row_slots += mxu_row_slots(i.rows, i.passes, i.packing);
  t.s = make_engine("analytical", hw)->run(prog, nullptr).device_time_s;
  return t;
}

TEST(QuantizedMatmul, Int8RunsAtTheChipsRate) {
  const HwConfig v6e = hw_named("v6e-8");
  const Timed bf16 = run(v6e, models::DotPrecision::kDefault);
  const Timed int8 = run(v6e, models::DotPrecision::kInt8);
  const Timed fp8 = run(v6e, models::DotPrecision::kFp8);
  EXPECT_EQ(int8.flops, bf16.flops);            // the matmul's flops, whatever the format
  EXPECT_EQ(int8.row_slots * 2, bf16.row_slots);  // two int8 rows per bf16 row slot
  // The MXU's time halves; the quantization's VPU work (each operand quantized once, the result
  // dequantized) takes part of the gain back: between half and three quarters of the bf16 time (0.73).
  EXPECT_LT(int8.s, 0.75 * bf16.s);
  EXPECT_GT(int8.s, 0.5 * bf16.s);
  EXPECT_EQ(fp8.s, int8.s);                       // v6e: fp8 at the int8 rate
  // v4: int8 at the bf16 rate; the quantization costs on top.
  const HwConfig v4 = hw_named("v4-8");
  EXPECT_GE(run(v4, models::DotPrecision::kInt8).s, run(v4, models::DotPrecision::kDefault).s);
}

TEST(QuantizedMatmul, ChipsWithoutTheFormatRefuse) {
  EXPECT_THROW(run(hw_named("v3-8"), models::DotPrecision::kInt8, 512), SimError);
  EXPECT_THROW(run(hw_named("v5p-8"), models::DotPrecision::kFp8, 512), SimError);
}

}  // namespace
}  // namespace tpusim::compiler
