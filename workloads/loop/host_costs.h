// Host-side cost models of the training driver: lazy tracing, XLA compilation, the first execution of
// a program, parameter upload, and host RAM of the framework processes. Each is a closed formula of
// documented HostParams (configs/hw/*.yaml `host:`), with its derivation in host_costs.cc.
#pragma once
#include <cstdint>
#include <string>

#include "sim/hw/hw_config.h"

namespace tpusim {

// reference_cpu_ghz / cpu_ghz: host work is CPU-bound and single-threaded per process, so it scales
// with the clock (a first-order model; IPC differences between hosts are not modelled).
double host_speed_scale(const HostParams& host);

// Seconds to trace one step of `graph_nodes` nodes and dispatch it: nodes x trace_s_per_node x scale
// + step_overhead_s x scale.
double trace_time_s(const HostParams& host, uint64_t graph_nodes);

// Seconds of one XLA compilation in one process:
//   (compile_base_s + compile_s_per_hlo_op x hlo_ops + compile_s_per_kernel x kernels) x scale
// x max(1, processes / cpus) (the processes compile concurrently, one CPU each).
double compile_time_s(const HostParams& host, uint64_t hlo_ops, uint32_t kernels, uint32_t processes);

// Seconds to move `bytes` host -> HBM (`load`) or HBM -> host over one chip's PCIe link, from the
// closed form of the multi-chip model (sim/ici/ici_timing.h host_transfer_estimate).
double pcie_transfer_s(const HwConfig& hw, bool load, uint64_t bytes);

// Host RAM the framework processes need, bytes: processes x process_ram_gib, plus one copy of the
// model per process that builds it (x2: from_pretrained holds the random init and the loaded
// state_dict at once) or a single copy shared copy-on-write when it is built once before forking.
struct HostRamNeed {
  uint64_t need_bytes = 0, have_bytes = 0;
  uint64_t model_bytes = 0;  // one copy of the parameters
  uint32_t copies = 0;       // model copies held
  bool fits() const { return need_bytes <= have_bytes; }
};
HostRamNeed host_ram_need(const HostParams& host, uint32_t processes, uint64_t model_param_bytes,
                          bool model_in_each_process);

// Activations offloaded to host memory (remat_tensors offload) are pinned in the host's RAM: the
// peak of one device (compiler::MemoryPlan::host_peak_bytes) times the devices of one host.
uint64_t pinned_host_bytes(const HwConfig& hw, uint64_t per_device);

}  // namespace tpusim
