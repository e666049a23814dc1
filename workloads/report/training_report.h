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

// Seconds for people: "412 ms", "3.21 s", "2 min 05 s", "31.2 h", "2.1e+03 days".
std::string format_duration(double s);

// One element of report.json's steps[] and programs[] (the hlo report's too: hlo_report.h).
nlohmann::json step_json(const StepRecord& s);
nlohmann::json program_json(const ProgramRecord& p);
// The units of their numeric fields, by report.json path ("steps[].device_s": "s", ...).
nlohmann::json step_program_units();

// "Where did the time go": a breakdown table and the key figures.
std::string format_training_summary(const HwConfig& hw, const WorkloadConfig& w, const TrainingRunResult& r,
                                    const RunContext& ctx);

// torch_xla-style metric summary of `m` in `unit` (s or bytes): {count, total_U, mean_U,
// percentiles_U{p1..p99}, samples_U: [[value, count], ...] (distinct values ascending)}.
nlohmann::json metric_json(const MetricSamples& m, const std::string& unit = "s");

}  // namespace tpusim
