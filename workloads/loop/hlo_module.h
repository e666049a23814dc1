// The module of a `kind: hlo` workload: `module:` names a file, or a directory of XLA dumps
// (--xla_dump_to) from which the step module is picked by name (docs/hlo.md, "kind: hlo").
#pragma once
#include <string>
#include <vector>

#include "compiler/hlo/hlo_ast.h"
#include "compiler/hlo/hlo_spmd.h"
#include "workloads/config/workload_config.h"

namespace tpusim {

// One candidate file of a dump directory: its path, size and `HloModule` name.
struct DumpedModule {
  std::string file;
  std::string name;
  uint64_t bytes = 0;
};

// The HLO text modules of a dump directory in the preferred tier of file names: the
// `*.before_optimizations.txt` dumps when there are any (the project's own fusion decides the
// kernels), else `*.after_optimizations.txt`, else every `*.txt` and `*.hlo`; sorted by file name.
// Files whose text has no `HloModule` line are left out.
std::vector<DumpedModule> dumped_modules(const std::string& dir);

// Whether a module name is a training step's by the frameworks' naming: PyTorch/XLA's
// `SyncTensorsGraph.N`, a `train_step` function, or JAX's `jit_<function>`.
bool is_step_module_name(const std::string& name);

// The file to run: `module` itself when it is a file (whose name must then contain `module_name`
// when that is given), else the directory's step module: with `module_name`, the one whose name
// equals it (or the one containing it); without, the largest whose name is a step's. Throws
// ConfigError at the workload's `module` key when the path does not exist or nothing (or more than
// one) matches, listing the modules found.
std::string select_step_module(const HloWorkload& h);

// A kind: hlo workload's module contents as a digest, "module <file name> fnv1a64:<hex>" of the
// selected file's bytes, which config_hash covers (a changed module is another run); "" for other
// kinds, or when no module can be selected (the run then fails at `module`).
std::string hlo_module_digest(const WorkloadConfig& w);

// Parses the selected module (hlo::parse_hlo_file: a ConfigError with file, line and column on bad
// text). `file` receives the selected path.
hlo::Module load_step_module(const HloWorkload& h, std::string* file);

// The module's SPMD partitioning for `replicas` cores (hlo::spmd_partition, the workload's `spmd`
// mode): a partitioned module runs one partition per core, replicas / num_partitions copies of it.
// Throws ConfigError at `replicas` (or `module`) when a partitioned module's num_partitions does not
// divide the replicas, HloError for a malformed sharding.
hlo::SpmdResult partition_step_module(const HloWorkload& h, const hlo::Module& m, uint32_t replicas);

}  // namespace tpusim
