// Energy, power and cost of a run (docs/energy.md): the events of the engines' op profiles fed to
// the one energy rule (sim/power/energy_model.h), and the price table (chip.cost), for report.json
// (`summary.energy`, `summary.cost`) and the printed summaries of kernel and training runs.
#pragma once
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/power/energy_model.h"
#include "workloads/loop/kernel_run.h"
#include "workloads/loop/training_run.h"

namespace tpusim {

// A kernel run: the kernel on its core(s), the rest of its chip idle at static power.
struct KernelEnergy {
  Energy energy;                        // J over the device time, the kernel's chip(s)
  double chips = 0;                     // chips the program ran on
  double average_power_w_per_chip = 0;  // W
  // W per chip if every core of the chip ran the kernel at once (the chip's power under a
  // data-parallel step of this kernel; what the calibration compares with the published maximum).
  double all_cores_power_w_per_chip = 0;
};
// nullopt: the chip has no `power:` section.
std::optional<KernelEnergy> kernel_energy(const HwConfig& hw, const KernelRunResult& r);

// A training run: every chip of the slice for the whole run; the events of every execution of
// every program on every core (SPMD: each core runs its program's stream).
struct TrainingEnergy {
  Energy total;                         // J, the whole run
  Energy per_step;                      // J, one steady train step of the whole slice
  double average_power_w_per_chip = 0;  // W: total over run time and chips
  double steady_power_w_per_chip = 0;   // W: per_step over steady step time and chips
  double examples_per_j = 0;            // steady: global batch / per_step
  double end_to_end_examples_per_j = 0; // training examples / total
};
std::optional<TrainingEnergy> training_energy(const HwConfig& hw, const TrainingRunResult& r);

// The train program of the steady step: graph "train" first, then the most executions, among the
// programs with an op profile (nullptr: none).
const ProgramRecord* steady_train_program(const TrainingRunResult& r);

// Cost: seconds of the slice (or the kernel's chips) at the chip-hour price.
struct RunCost {
  double usd_per_chip_hour = 0;
  double usd_total = 0;          // seconds / 3600 x chips x price
  double usd_per_1k_steps = 0;   // training: 1000 steady steps; 0 for a kernel
  // Training with steady steps: a million tokens at the steady rate (the chip-hour price over
  // 3600 x tokens/s per chip).
  std::optional<double> usd_per_million_tokens;
};
std::optional<RunCost> kernel_cost(const HwConfig& hw, const KernelRunResult& r);
std::optional<RunCost> training_cost(const HwConfig& hw, const TrainingRunResult& r);

// report.json objects (null when not modelled). add_energy_units: the units of the energy and cost
// figures of both a training and a kernel report (workloads/report/report_fields.h), which either
// kind's `units` lists whole, null or not.
nlohmann::json kernel_energy_json(const std::optional<KernelEnergy>& e);
nlohmann::json training_energy_json(const std::optional<TrainingEnergy>& e);
nlohmann::json cost_json(const std::optional<RunCost>& c);
void add_energy_units(nlohmann::json& units);

// The summary lines ("" when not modelled), value text after the label.
std::string kernel_energy_text(const std::optional<KernelEnergy>& e, const std::optional<RunCost>& c);
std::string training_energy_text(const std::optional<TrainingEnergy>& e, const std::optional<RunCost>& c);

}  // namespace tpusim
