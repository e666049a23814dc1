#include "sim/power/energy_model.h"

namespace tpusim {

namespace {
constexpr double kJPerPj = 1e-12;
}  // namespace

Activity& Activity::operator+=(const Activity& o) {
  flops += o.flops;
  vreg_ops += o.vreg_ops;
  hbm_bytes += o.hbm_bytes;
  ici_bytes += o.ici_bytes;
  return *this;
}

Activity Activity::scaled(double k) const { return {flops * k, vreg_ops * k, hbm_bytes * k, ici_bytes * k}; }

Activity activity_of(const OpProfile& p) {
  Activity a;
  for (const OpProfileEntry& e : p.entries) {
    a.flops += double(e.flops);
    a.vreg_ops += double(e.vpu_vreg_ops);
    a.hbm_bytes += double(e.hbm_bytes);
    a.ici_bytes += double(e.ici_bytes);
  }
  return a;
}

Energy energy(const PowerParams& p, const Activity& a, double seconds, double chips) {
  Energy e;
  e.static_j = p.static_w * seconds * chips;
  e.mxu_j = p.mxu_pj_per_flop * a.flops * kJPerPj;
  e.vpu_j = p.vpu_pj_per_vreg_op * a.vreg_ops * kJPerPj;
  e.hbm_j = p.hbm_pj_per_byte * a.hbm_bytes * kJPerPj;
  e.ici_j = p.ici_pj_per_byte * a.ici_bytes * kJPerPj;
  return e;
}

double average_power_w_per_chip(const Energy& e, double seconds, double chips) {
  return seconds > 0 && chips > 0 ? e.total_j() / (seconds * chips) : 0;
}

}  // namespace tpusim
