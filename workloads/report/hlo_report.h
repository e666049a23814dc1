// report.json and the stdout summary of a `kind: hlo` run (workloads/loop/hlo_run.h). The steps[]
// and programs[] elements are the training report's (training_report.h).
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "compiler/hlo/hlo_import.h"
#include "workloads/loop/hlo_run.h"
#include "workloads/report/report.h"

namespace tpusim {

// The module's op statistics as report.json's `hlo` keys (and `tpusim hlo-stats --json`'s):
// instructions (count by opcode), dot_flops, convolution_flops, parameter_bytes, output_bytes,
// unmodelled [{instruction, opcode, line, reason}].
nlohmann::ordered_json hlo_stats_json(const hlo::HloStats& st);

// report.json's `hlo.spmd`: whether the module was partitioned and why, the collectives inserted by
// opcode (count, one partition's result bytes), local slices, shardings given and propagated, and the
// module's own statistics (its whole computation) when partitioned.
nlohmann::ordered_json hlo_spmd_json(const hlo::SpmdReport& s, const hlo::HloStats& module);

// The whole report.json tree; deterministic for the same inputs except `run.wall_time_s`.
nlohmann::json make_hlo_report(const HwConfig& hw, const WorkloadConfig& w, const HloRunResult& r, const RunContext& ctx);

// What `tpusim run` prints.
std::string format_hlo_summary(const HwConfig& hw, const WorkloadConfig& w, const HloRunResult& r, const RunContext& ctx);

}  // namespace tpusim
