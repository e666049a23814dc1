// Host cost formulas. Calibration of the default coefficients (config/hw_schema.cc, repeated with
// their source in configs/hw/*.yaml), all at the 2.0 GHz reference clock:
//
// * Tracing. docs/sources.md: PyTorch/XLA records BERT-base's forward pass in ~25 ms whatever the
//   batch size (tracing cost is per IR node, not per element). tpusim's BERT-base forward graph for
//   sequence classification has 1,300 nodes (models/bert.cc; printed by
//   tests/workloads/training_test.cc), so 25 ms / 1.3k ≈ 19 µs per node — in line with the
//   10–20 µs per op that lazy-tensor dispatch costs in CPython. The whole training step
//   (forward + backward + AdamW) has ~3x the forward's nodes, ~70 ms of tracing.
// * Compilation: t = base + a x hlo_ops + b x kernels.
//   - small graphs compile in ≈ 0.4 s → base = 0.3 s (plus a few ops);
//   - graphs of ~10^5 IR nodes take "several minutes" → a ≈ 3e-4 s/op gives 30 s + the kernels'
//     share (~2x10^4 kernels x 5 ms = 100 s), ≈ 2–3 minutes in total;
//   - a Transformers BERT fine-tune had 5 compiles totalling 28.9 s (≈ 3–11 s each): tpusim's
//     BERT-base training step (~6k ops, ~1.3k kernels) comes to ≈ 0.3 + 1.9 + 6.5 ≈ 9 s, the
//     evaluation graph ≈ 2–3 s, i.e. 2 train + 1 eval compiles of a 3-epoch run ≈ 20 s.
// * RAM: a forked torch_xla worker's private RSS (Python heap + XLA client state) ≈ 0.5 GiB; the
//   rest of the interpreter and libraries are shared copy-on-write with the notebook's process.
#include "workloads/loop/host_costs.h"

#include <algorithm>

#include "sim/base/clock.h"
#include "sim/hw/resolved_hw.h"
#include "sim/ici/ici_timing.h"

namespace tpusim {

double host_speed_scale(const HostParams& host) {
  return host.cpu_ghz > 0 ? host.reference_cpu_ghz / host.cpu_ghz : 1.0;
}

double trace_time_s(const HostParams& host, uint64_t graph_nodes) {
  return (double(graph_nodes) * host.trace_s_per_node + host.step_overhead_s) * host_speed_scale(host);
}

double compile_time_s(const HostParams& host, uint64_t hlo_ops, uint32_t kernels, uint32_t processes) {
  const double one = host.compile_base_s + host.compile_s_per_hlo_op * double(hlo_ops) +
                     host.compile_s_per_kernel * double(kernels);
  // Each process runs its own single-threaded compilation; with more processes than CPUs they share.
  const double oversubscription = host.cpus > 0 ? std::max(1.0, double(processes) / double(host.cpus)) : 1.0;
  return one * host_speed_scale(host) * oversubscription;
}

double pcie_transfer_s(const HwConfig& hw, bool load, uint64_t bytes) {
  if (bytes == 0) return 0;
  const TransferEstimate e = host_transfer_estimate(hw, resolve_hw(hw), load, bytes);
  return double(e.total_cycles()) / (hw.chip.core.clock_mhz * 1e6);
}

HostRamNeed host_ram_need(const HostParams& host, uint32_t processes, uint64_t model_param_bytes,
                          bool model_in_each_process) {
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  HostRamNeed r;
  r.model_bytes = model_param_bytes;
  r.copies = model_in_each_process ? 2 * processes : 1;
  r.need_bytes = uint64_t(double(processes) * host.process_ram_gib * kGiB) + uint64_t(r.copies) * model_param_bytes;
  r.have_bytes = uint64_t(double(host.ram_gib) * kGiB);
  return r;
}

uint64_t pinned_host_bytes(const HwConfig& hw, uint64_t per_device) {
  return per_device * devices_per_chip(hw.chip) * std::max<uint32_t>(hw.slice.chips_per_host, 1);
}

}  // namespace tpusim
