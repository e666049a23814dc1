// The compiler's entry point: a kernel or graph in, a resolved Program out.
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "models/graph.h"
#include "sim/hw/hw_config.h"
#include "sim/isa/program.h"

namespace tpusim::compiler {

struct KernelRequest {
  std::string kernel;                     // see models/kernel_specs.h
  std::map<std::string, uint64_t> shape;  // the kernel's shape keys
  models::DType dtype = models::DType::kF32;  // tensor dtype in HBM (f32 | bf16)
  models::DotPrecision precision = models::DotPrecision::kDefault;
  uint32_t chip = 0;
  uint32_t core = 0;
};

// The kernel's graph (models/), checked: ConfigError at yaml path "shape" when a tensor has more
// than 2^40 elements or does not fit in a core's HBM (what compile_kernel lowers; validate runs it
// alone, without lowering).
models::Graph build_kernel_graph(const KernelRequest& req, const HwConfig& hw);

// Builds the kernel's graph (build_kernel_graph), lowers it for `hw` and returns the Program for one core.
// Throws ConfigError for an unknown kernel or a missing/zero shape key (models::build_kernel).
isa::Program compile_kernel(const KernelRequest& req, const HwConfig& hw);

// Lowers a built graph for one core (used by compile_kernel and the training compiler).
isa::Program compile_graph(const tpusim::models::Graph& g, const HwConfig& hw, const std::string& name, uint32_t chip,
                           uint32_t core);

// Lower bounds for reports and the fidelity benchmark (core cycles on one core).
struct IdealCycles {
  uint64_t compute_cycles = 0;  // flops / peak flops per cycle of the core's MXUs
  uint64_t hbm_cycles = 0;      // compulsory HBM bytes / core HBM bytes per cycle (at peak, no efficiency derate)
};
IdealCycles ideal_cycles(const isa::Program& program, const HwConfig& hw);

}  // namespace tpusim::compiler
