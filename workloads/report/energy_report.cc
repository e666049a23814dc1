#include "workloads/report/energy_report.h"

#include <set>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "workloads/report/report_fields.h"

namespace tpusim {
namespace {

using nlohmann::json;

constexpr double kSecondsPerHour = 3600;

json components_json(const Energy& e) {
  return {{"static", e.static_j}, {"mxu", e.mxu_j}, {"vpu", e.vpu_j}, {"hbm", e.hbm_j}, {"ici", e.ici_j}};
}

double safe_div(double a, double b) { return b > 0 ? a / b : 0; }

// "1.23 kJ", "45.6 J", "789 mJ".
std::string joules(double j) {
  if (j >= 1e6) return fmt::format("{:.2f} MJ", j / 1e6);
  if (j >= 1e3) return fmt::format("{:.2f} kJ", j / 1e3);
  if (j >= 1) return fmt::format("{:.2f} J", j);
  if (j >= 1e-3) return fmt::format("{:.2f} mJ", j * 1e3);
  return fmt::format("{:.2f} µJ", j * 1e6);
}

std::string usd(double v) { return v >= 0.01 ? fmt::format("${:.2f}", v) : fmt::format("${:.2g}", v); }

}  // namespace

std::optional<KernelEnergy> kernel_energy(const HwConfig& hw, const KernelRunResult& r) {
  if (!hw.chip.power) return std::nullopt;
  std::set<uint32_t> chips;
  for (const CoreRunResult& c : r.run.cores) chips.insert(c.chip);
  KernelEnergy k;
  k.chips = double(std::max<size_t>(1, chips.size()));
  // The profiled core's events, on every core that ran a stream (kernels are compiled per core).
  const Activity per_core = activity_of(r.run.op_profile);
  const double t = r.run.device_time_s;
  k.energy = energy(*hw.chip.power, per_core.scaled(std::max<uint32_t>(1, r.cores_used)), t, k.chips);
  k.average_power_w_per_chip = average_power_w_per_chip(k.energy, t, k.chips);
  k.all_cores_power_w_per_chip = average_power_w_per_chip(energy(*hw.chip.power, per_core.scaled(hw.chip.cores), t, 1), t, 1);
  return k;
}

const ProgramRecord* steady_train_program(const TrainingRunResult& r) {
  const ProgramRecord* best = nullptr;
  for (const ProgramRecord& p : r.programs) {
    if (!p.op_profile || p.op_profile->entries.empty()) continue;
    auto rank = [](const ProgramRecord& x) { return std::pair(x.graph == GraphKind::kTrain, x.executions); };
    if (!best || rank(p) > rank(*best)) best = &p;
  }
  return best;
}

std::optional<TrainingEnergy> training_energy(const HwConfig& hw, const TrainingRunResult& r) {
  if (!hw.chip.power) return std::nullopt;
  const PowerParams& pw = *hw.chip.power;
  const double chips = hw.run_chips();
  const double cores = chips * hw.chip.cores;
  Activity run;
  for (const ProgramRecord& p : r.programs)
    if (p.op_profile) run += activity_of(*p.op_profile).scaled(double(p.executions) * cores);
  TrainingEnergy e;
  e.total = energy(pw, run, r.total_time_s, chips);
  const ProgramRecord* step = steady_train_program(r);
  const Activity step_events = step ? activity_of(*step->op_profile).scaled(cores) : Activity{};
  e.per_step = energy(pw, step_events, r.steady_step_time_s, chips);
  e.average_power_w_per_chip = average_power_w_per_chip(e.total, r.total_time_s, chips);
  e.steady_power_w_per_chip = average_power_w_per_chip(e.per_step, r.steady_step_time_s, chips);
  e.examples_per_j = safe_div(r.steady_examples_per_s * r.steady_step_time_s, e.per_step.total_j());
  e.end_to_end_examples_per_j = safe_div(double(r.train_examples), e.total.total_j());
  return e;
}

std::optional<RunCost> kernel_cost(const HwConfig& hw, const KernelRunResult& r) {
  if (!hw.chip.cost) return std::nullopt;
  std::set<uint32_t> chips;
  for (const CoreRunResult& c : r.run.cores) chips.insert(c.chip);
  RunCost c;
  c.usd_per_chip_hour = hw.chip.cost->usd_per_chip_hour;
  c.usd_total = r.run.device_time_s / kSecondsPerHour * double(std::max<size_t>(1, chips.size())) * c.usd_per_chip_hour;
  return c;
}

std::optional<RunCost> training_cost(const HwConfig& hw, const TrainingRunResult& r) {
  if (!hw.chip.cost) return std::nullopt;
  RunCost c;
  c.usd_per_chip_hour = hw.chip.cost->usd_per_chip_hour;
  const double per_s = hw.run_chips() * c.usd_per_chip_hour / kSecondsPerHour;
  c.usd_total = r.total_time_s * per_s;
  c.usd_per_1k_steps = 1000 * r.steady_step_time_s * per_s;
  if (r.steady_tokens_per_s_per_chip > 0)
    c.usd_per_million_tokens = 1e6 * c.usd_per_chip_hour / kSecondsPerHour / r.steady_tokens_per_s_per_chip;
  return c;
}

json kernel_energy_json(const std::optional<KernelEnergy>& e) {
  if (!e) return nullptr;
  return {{"total_j", e->energy.total_j()},
          {"chips", e->chips},
          {"average_power_w_per_chip", e->average_power_w_per_chip},
          {"all_cores_power_w_per_chip", e->all_cores_power_w_per_chip},
          {"by_component_j", components_json(e->energy)}};
}

json training_energy_json(const std::optional<TrainingEnergy>& e) {
  if (!e) return nullptr;
  return {{"per_step_j", e->per_step.total_j()},
          {"total_j", e->total.total_j()},
          {"average_power_w_per_chip", e->average_power_w_per_chip},
          {"steady_power_w_per_chip", e->steady_power_w_per_chip},
          {"examples_per_j", e->examples_per_j},
          {"end_to_end_examples_per_j", e->end_to_end_examples_per_j},
          {"per_step_by_component_j", components_json(e->per_step)},
          {"total_by_component_j", components_json(e->total)}};
}

json cost_json(const std::optional<RunCost>& c) {
  if (!c) return nullptr;
  json j = {{"usd_per_chip_hour", c->usd_per_chip_hour}, {"usd_total", c->usd_total},
            {"usd_per_1k_steps", c->usd_per_1k_steps}};
  if (c->usd_per_million_tokens) j["usd_per_million_tokens"] = *c->usd_per_million_tokens;
  return j;
}

void add_energy_units(json& u) {
  for (const ReportField& f : report_fields()) {
    const std::string_view path = f.path;
    if ((path.starts_with("/summary/energy/") || path.starts_with("/summary/cost/")) &&
        (f.in(kTrainingReport) || f.in(kKernelReport)))
      u[f.key_in_units()] = f.unit_text();
  }
}

std::string kernel_energy_text(const std::optional<KernelEnergy>& e, const std::optional<RunCost>& c) {
  if (!e) return "";
  std::string s = fmt::format("{} on {:g} chip{}, {:.1f} W per chip ({:.1f} W if every core of the chip ran it); "
                              "dynamic {:.0f}%",
                              joules(e->energy.total_j()), e->chips, e->chips == 1 ? "" : "s",
                              e->average_power_w_per_chip, e->all_cores_power_w_per_chip,
                              100 * safe_div(e->energy.dynamic_j(), e->energy.total_j()));
  if (c) s += fmt::format("; {} at {}/chip-hour", usd(c->usd_total), usd(c->usd_per_chip_hour));
  return s;
}

std::string training_energy_text(const std::optional<TrainingEnergy>& e, const std::optional<RunCost>& c) {
  if (!e) return "";
  std::string s = fmt::format("{} per step ({:.1f} W per chip), {:.3g} examples/J; run {}, {:.1f} W per chip on average",
                              joules(e->per_step.total_j()), e->steady_power_w_per_chip, e->examples_per_j,
                              joules(e->total.total_j()), e->average_power_w_per_chip);
  if (c) s += fmt::format("; cost {} at {}/chip-hour ({} per 1k steps{})", usd(c->usd_total), usd(c->usd_per_chip_hour),
                          usd(c->usd_per_1k_steps),
                          c->usd_per_million_tokens ? fmt::format(", {} per million tokens", usd(*c->usd_per_million_tokens)) : "");
  return s;
}

}  // namespace tpusim
