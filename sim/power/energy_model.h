// The energy rule, one place for kernel and training runs (docs/energy.md):
//
//   E = static_w x seconds x chips
//     + mxu_pj_per_flop x flops + vpu_pj_per_vreg_op x vreg_ops + hbm_pj_per_byte x hbm_bytes
//     + ici_pj_per_byte x ici_bytes                       (pJ -> J: x 1e-12)
//
// `chips` are the chips powered for `seconds` (the whole slice in a training run: chips idle at
// static power while the host compiles or traces); the events are counted over every core that ran.
// The events come from the op profile (sim/analysis/op_profile.h), which both engines fill the same way.
#pragma once
#include <cstdint>

#include "sim/analysis/op_profile.h"
#include "sim/hw/power_params.h"

namespace tpusim {

// Counted events (doubles: a run multiplies per-execution counts by executions and cores).
struct Activity {
  double flops = 0;       // MXU flops
  double vreg_ops = 0;    // VPU vector-register operations
  double hbm_bytes = 0;   // HBM <-> VMEM bytes
  double ici_bytes = 0;   // bytes sent to other chips

  Activity& operator+=(const Activity& o);
  Activity scaled(double k) const;
};

// The events of one execution of a profiled core's stream: the sums over its op profile entries.
Activity activity_of(const OpProfile& p);

// Energy by component, J.
struct Energy {
  double static_j = 0, mxu_j = 0, vpu_j = 0, hbm_j = 0, ici_j = 0;
  double dynamic_j() const { return mxu_j + vpu_j + hbm_j + ici_j; }
  double total_j() const { return static_j + dynamic_j(); }
};

Energy energy(const PowerParams& p, const Activity& a, double seconds, double chips);

// Average power per chip over `seconds` (0 when seconds or chips is 0).
double average_power_w_per_chip(const Energy& e, double seconds, double chips);

}  // namespace tpusim
