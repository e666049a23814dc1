// report.json and the stdout summary of a training run (the kernel run's are in report.h).
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "workloads/report/report.h"
#include "workloads/loop/training_run.h"

namespace tpusim {

// The whole report.json tree; every numeric field's unit is in `units`. Deterministic for the same
// inputs except `run.wall_time_s`.
nlohmann::json make_training_report(const HwConfig& hw, const WorkloadConfig& w, const TrainingRunResult& r,
                                    const RunContext& ctx);

// "Where did the time go": a breakdown table and the key figures.
std::string format_training_summary(const HwConfig& hw, const WorkloadConfig& w, const TrainingRunResult& r,
                                    const RunContext& ctx);

// torch_xla-style metric summary of `m` in `unit` (s or bytes): {count, total_U, mean_U,
// percentiles_U{p1..p99}, samples_U: [[value, count], ...] (distinct values ascending)}.
nlohmann::json metric_json(const MetricSamples& m, const std::string& unit = "s");

}  // namespace tpusim
