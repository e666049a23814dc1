// The training driver: a whole fine-tuning run of a `kind: training` workload on every TensorCore of
// the slice, step by step, under PyTorch/XLA's semantics (docs/sources.md; docs/training.md):
//
//   per step   trace the step on the host (overlaps the previous step's execution), mark_step,
//              look the graph up in the process's compilation cache: a miss compiles synchronously,
//              a hit enqueues execution; the first execution of a program loads it and allocates its
//              buffers, the very first also uploads the parameters over PCIe;
//   per epoch  the epoch plan of workloads/data/batching.h (Accelerate sharding, padding), then
//              evaluation with its own graph and batch.
//
// A device is a TensorCore on v2/v3 and a chip on a megacore chip (TPU v4, chip.megacore), whose two
// cores split each step's batch (compiler/step/data_parallel.h): per_device_batch_size is per device.
// One process per device, each with its own host clock and compilation cache: a process traces and
// looks up the graph of its own batch shape (with `padding: longest` or a short last batch the
// processes' shapes differ, and so do their compiles), and concurrent compilations share the
// host's CPUs. The device runs the processes' programs in lockstep (the all-reduce synchronizes
// them): a step starts when the last process has dispatched it, and one SPMD program is simulated
// for it, at the largest B and S over the processes' batches (the replica that gates the step).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/plan/memory_breakdown.h"
#include "sim/analysis/collective_stats.h"
#include "sim/analysis/op_profile.h"
#include "sim/base/sim_error.h"
#include "sim/engine/run_estimate.h"
#include "sim/hw/hw_config.h"
#include "workloads/config/workload_config.h"
#include "workloads/data/dataset.h"
#include "workloads/loop/run_records.h"
#include "workloads/loop/step_loop.h"
#include "workloads/loop/training_trace.h"

namespace tpusim {

struct TrainingRunOptions : LoopOptions {
  // Length tables to resolve dataset keys against; empty: read options.datasets_dir.
  data::LengthTables tables;
  std::string datasets_dir = data::default_datasets_dir();
  // A program memo directory shared with other runs (a sweep's points, workloads/loop/program_memo.h):
  // programs found there are not compiled or simulated again; programs simulated here are stored.
  // Empty: none. Not used with full_sim or a trace.
  std::string program_memo_dir;
};

// A run's length is bounded (ConfigError on `epochs`/`steps` past it): 2^20 steps, more than the
// longest published schedules of the families tpusim models (BERT pre-training: 10^6 steps, Devlin
// et al. 2019; T5: 2^19), so that no configuration can make the loop run for hours.
inline constexpr uint64_t kMaxRunSteps = uint64_t(1) << 20;
// auto_find_batch_size: the per-device batches tried (largest first) and the one the run used.
struct BatchSearch {
  std::vector<uint32_t> tried;
  uint32_t used = 0;
  double failed_s = 0;  // s: the failed attempts' time
};

struct TrainingRunResult : LoopResult {
  uint64_t epochs_run = 0;
  uint64_t logging_syncs = 0;  // logging_steps: loss.item() host syncs
  double logging_sync_s = 0;   // s: their sync + copy cost (the lost overlap shows as host time)
  BatchSearch batch_search;    // auto_find_batch_size (used == 0: off)
};

// Throws ConfigError (bad dataset, shapes) and SimError (out of HBM, out of host RAM).
TrainingRunResult run_training(const HwConfig& hw, const WorkloadConfig& w, const TrainingRunOptions& opts);

}  // namespace tpusim
