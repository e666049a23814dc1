// `tpusim advise`: "what should I set?" for a training workload on a slice. Runs the small set of
// settings that matter on TPU — padding strategies (max_length, longest, multiple_of 8/16/32/64),
// precisions (fp32, bf16, mixed_bf16), remat policies and meshes (Llama family) and per-core batch
// sizes that fit in HBM — and ranks them by
// simulated time-to-train (the whole run: compiles, warm-up, steps, evaluation), with compile counts
// and peak memory as the evidence.
//
// The search is coordinate-wise, not a full cross product (which would be ~100 runs): paddings at
// the workload's batch and precision, then precisions at the best padding, then (Llama-family
// models) MaxText's remat policies at the best of both, then (Llama family) the meshes: FSDP or data parallel over the devices a tensor axis of 1, 2, 4 or 8 leaves (the
// sizes that divide the devices and the key/value heads), then batch sizes at the best of all
// those; a batch that does not fit with that policy is tried with the policies that keep less
// (down to `full`) before the search stops. Every run is a normal training run
// (analytical engine, replay on).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sim/engine/run_estimate.h"
#include "sim/hw/hw_config.h"
#include "workloads/data/batching.h"
#include "workloads/data/dataset.h"
#include "workloads/config/workload_config.h"

namespace tpusim {

struct AdviceRow {
  data::PaddingSpec padding;
  Precision precision = Precision::kFp32;
  double batch = 0;          // per device (a fraction: shared by a tensor x sequence group)
  models::RematPolicy remat = models::RematPolicy::kNone;  // kCustom: the workload's remat_tensors
  // The parallel layout: data parallel or FSDP over the devices the tensor axis leaves, tensor
  // (Megatron) parallel over `tensor` devices (1: none).
  Sharding sharding = Sharding::kDataParallel;
  uint32_t tensor = 1;
  std::string mesh;          // as the table shows it: "fsdp 4 x tensor 2", "data 8"
  bool is_base = false;      // the workload as given
  bool fits = true;          // false: the run failed (out of HBM, ...); `error` says why
  std::string error;
  double total_time_s = 0, steady_step_time_s = 0, compile_time_s = 0, examples_per_s = 0;
  uint64_t compiles = 0, peak_hbm_bytes = 0, global_batch = 0;
  // Set on the recommended row when compilation dominates its run (kCompileDominates) and the
  // workload has no persistent compile cache: the simulated time of a second run of the same setting
  // whose programs load from a warm persistent cache (compile_cache.persistent_dir). < 0: not run.
  double rerun_with_cache_s = -1;
};

// Compilation "dominates" a run from this share of its total time on: the persistent compile cache is
// then worth suggesting (it removes most of that share from every later run).
inline constexpr double kCompileDominates = 0.25;

struct AdviceOptions {
  data::LengthTables tables;  // as TrainingRunOptions::tables
  std::string datasets_dir = data::default_datasets_dir();
  std::vector<uint32_t> batches = {1, 2, 4, 8, 16, 32, 64};
  bool meshes = true;  // Llama family: search the meshes (false: the workload's own)
  std::function<void(const std::string&)> on_run;  // progress: called before each run
  RunLimits limits;  // as TrainingRunOptions::limits
};

// Rows ranked by total_time_s (runs that fit first); each distinct setting once.
std::vector<AdviceRow> advise(const HwConfig& hw, const WorkloadConfig& w, const AdviceOptions& o);

// The ranked table and a one-paragraph recommendation, for stdout.
std::string format_advice(const std::vector<AdviceRow>& rows, const WorkloadConfig& w);

}  // namespace tpusim
