// Workload settings checked against the slice (hf_arguments.h): Accelerate `num_processes` (the hardware
// decides the processes) and a kernel's chip and core.
#include <fmt/format.h>

#include "base/config_error.h"
#include "workloads/loop/framework.h"
#include "workloads/config/hf_arguments.h"

namespace tpusim {

void check_num_processes(const HwConfig& hw, const WorkloadConfig& w) {
  if (w.kind() != WorkloadKind::kTraining || w.training().num_processes == 0) return;
  const TrainingWorkload& t = w.training();
  const uint32_t devices = slice_devices(hw);
  if (t.framework != FrameworkKind::kTorchXla)
    throw ConfigError({t.num_processes_file, "num_processes", t.num_processes_line, std::to_string(t.num_processes),
                       "is an Accelerate (PyTorch/XLA) setting; framework " + std::string(enum_name(t.framework)) + " does not use it", "remove it"});
  if (t.num_processes == devices) return;
  throw ConfigError({t.num_processes_file, "num_processes", t.num_processes_line, std::to_string(t.num_processes),
                     fmt::format("does not match the slice: tpusim runs one process per device, and {} has {} devices "
                                 "({} chips x {} per chip)",
                                 hw.name, devices, hw.slice.chips(), devices / hw.slice.chips()),
                     fmt::format("use num_processes: {} (or remove it)", devices)});
}

void check_kernel_placement(const HwConfig& hw, const WorkloadConfig& w) {
  if (w.kind() != WorkloadKind::kKernel) return;
  const KernelWorkload& k = w.kernel();
  if (k.chip >= hw.slice.chips())
    throw ConfigError({k.chip_file, "chip", k.chip_line, std::to_string(k.chip),
                       fmt::format("is not a chip of {}: it has {} chips (0 to {})", hw.name, hw.slice.chips(), hw.slice.chips() - 1),
                       "use a chip index below " + std::to_string(hw.slice.chips())});
  if (k.core >= hw.chip.cores)
    throw ConfigError({k.core_file, "core", k.core_line, std::to_string(k.core),
                       fmt::format("is not a core of a {} chip: it has {} TensorCores (0 to {})", hw.chip.generation,
                                   hw.chip.cores, hw.chip.cores - 1),
                       "use a core index below " + std::to_string(hw.chip.cores)});
}

}  // namespace tpusim
