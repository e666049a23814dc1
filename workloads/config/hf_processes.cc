// Accelerate `num_processes` against the slice (hf_arguments.h): the hardware decides the processes.
#include <fmt/format.h>

#include "config/config_error.h"
#include "workloads/loop/framework.h"
#include "workloads/config/hf_arguments.h"

namespace tpusim {

void check_num_processes(const HwConfig& hw, const WorkloadConfig& w) {
  const TrainingWorkload& t = w.training;
  if (w.kind != "training" || t.num_processes == 0) return;
  const uint32_t devices = slice_devices(hw);
  if (t.choices.framework != FrameworkKind::kTorchXla)
    throw ConfigError({t.num_processes_file, "num_processes", t.num_processes_line, std::to_string(t.num_processes),
                       "is an Accelerate (PyTorch/XLA) setting; framework " + t.framework + " does not use it", "remove it"});
  if (t.num_processes == devices) return;
  throw ConfigError({t.num_processes_file, "num_processes", t.num_processes_line, std::to_string(t.num_processes),
                     fmt::format("does not match the slice: tpusim runs one process per device, and {} has {} devices "
                                 "({} chips x {} per chip)",
                                 hw.name, devices, hw.slice.chips(), devices / hw.slice.chips()),
                     fmt::format("use num_processes: {} (or remove it)", devices)});
}

}  // namespace tpusim
