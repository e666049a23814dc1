// Parameters of a slice: chips joined by ICI in a mesh/torus, driven by hosts.
#pragma once
#include <cstdint>
#include <vector>

namespace tpusim {

struct TopologyParams {
  std::vector<uint32_t> dims;    // chips per dimension, e.g. [2, 2] for v3-8, [4, 4] for v3-32
  std::vector<bool> wraparound;  // per dimension: torus links closing the ring
};

struct HostParams {
  uint32_t cpus = 0;        // host CPU cores
  uint32_t ram_gib = 0;     // host RAM
  double cpu_ghz = 0;       // host CPU clock (compile/tracing cost models scale by it)
  // Host-side cost models of the training driver (workloads/loop/host_costs.h has the formulas and their
  // calibration). Times are at reference_cpu_ghz and scale by reference_cpu_ghz / cpu_ghz.
  double reference_cpu_ghz = 2.0;     // GHz: clock the coefficients below were calibrated at
  double trace_s_per_node = 0;        // s per graph node recorded by lazy tracing
  double step_overhead_s = 0;         // s of Python/framework dispatch per step (loader, zero_grad, loop)
  double compile_base_s = 0;          // s: fixed cost of one XLA compilation
  double compile_s_per_hlo_op = 0;    // s per HLO op of the graph (HLO passes, scheduling)
  double compile_s_per_kernel = 0;    // s per fused kernel (LLO code generation)
  double program_load_s = 0;          // s: first execution of a new program (load, buffer allocation)
  double process_ram_gib = 0;         // GiB of private RAM of one framework process (model excluded)
  // TPU Node (tpu_runtime: node): the input pipeline runs on the user's VM and each batch reaches
  // the TPU host over the data-center network (gRPC).
  double remote_input_gbyte_per_s = 0;  // GB/s of that path
  double remote_input_latency_s = 0;    // s per batch (one RPC)
};

// Several identical slices joined by the data-center network (Cloud TPU Multislice). The simulator
// runs one slice: the slices run the same program, and what crosses the DCN is modelled per chip
// (ChipParams::dcn, isa::Instr::dcn).
struct MultisliceParams {
  uint32_t slices = 1;
};

struct SliceParams {
  TopologyParams topology;
  uint32_t hosts = 0;
  uint32_t chips_per_host = 0;
  uint32_t chips() const {
    uint32_t n = 1;
    for (uint32_t d : topology.dims) n *= d;
    return n;
  }
};

}  // namespace tpusim
