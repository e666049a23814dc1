// Parameters of a chip's power model: static power plus energy per counted event (docs/energy.md
// has the physical grounding and the calibration to the published TPU v3/v4 chip power). Optional:
// a chip without a `power:` block reports no energy.
#pragma once

namespace tpusim {

struct PowerParams {
  double static_w = 0;            // W per chip whenever the slice is up: leakage, clocks, HBM refresh, host interface
  double mxu_pj_per_flop = 0;     // pJ per MXU flop (2 per MAC), incl. operand movement in the array
  double vpu_pj_per_vreg_op = 0;  // pJ per VPU vector-register operation (ALU, EUP, XLU, load, store)
  double hbm_pj_per_byte = 0;     // pJ per byte moved between HBM and VMEM
  double ici_pj_per_byte = 0;     // pJ per byte a core sends over ICI to another chip
};

}  // namespace tpusim
