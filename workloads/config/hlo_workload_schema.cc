// The schema of `kind: hlo` workloads (docs/hlo.md, "kind: hlo"), registered with the other kinds in
// workload_config.cc.
#include "workloads/config/workload_schemas.h"

#include "workloads/config/training_choices.h"

namespace tpusim {

using config::Schema;

const Schema<WorkloadConfig>& hlo_workload_schema() {
  static const Schema<WorkloadConfig> s = [] {
    using HW = HloWorkload;
    Schema<WorkloadConfig> s("Workload, kind: hlo",
                             "Runs an XLA HLO text module (the step a framework compiled: PyTorch/XLA, JAX or "
                             "TensorFlow) on `replicas` cores for `steps` steps, with the framework's host and "
                             "compile model, as docs/hlo.md (\"kind: hlo\") describes.");
    s.tag("kind", "hlo", "workload kind (selects this schema)");
    s.field(&WorkloadConfig::name, "name").default_value("", "file stem").doc("workload name, shown in reports");
    s.field(&WorkloadConfig::spec, &HW::module, "module")
        .doc("HLO text file, or a directory of XLA dumps (--xla_dump_to) to pick the step module from; relative to "
             "the workload file")
        .details("In a directory the candidates are the `*.before_optimizations.txt` dumps (else "
                 "`*.after_optimizations.txt`, else every `*.txt` and `*.hlo`) whose module name contains "
                 "`SyncTensorsGraph` (PyTorch/XLA) or `train_step`, or starts with `jit_` (JAX); the largest file is "
                 "the step. `module_name` picks one by name instead.");
    s.field(&WorkloadConfig::spec, &HW::module_name, "module_name").default_value("", "picked by name")
        .doc("in a directory of dumps: the module (its `HloModule` name, exactly or as a substring matching one) "
             "to run");
    s.field(&WorkloadConfig::spec, &HW::replicas, "replicas").range(0, 1 << 20)
        .default_value(0, "replica_count x num_partitions")
        .doc("cores that run the module, each on its own data (the first ones in ring order); at most the slice's cores");
    s.field(&WorkloadConfig::spec, &HW::steps, "steps").range(1, 1 << 30).default_value(10)
        .doc("steps run: the first compiles, the rest run the cached executable");
    s.field(&WorkloadConfig::spec, &HW::framework, "framework")
        .default_value(FrameworkKind::kTorchXla).doc("framework personality of the host (docs/training.md, \"Frameworks\")")
        .details("`torch_xla` traces the step lazily on every step; `jax` (jax.jit) and `tf_keras` (tf.function) "
                 "trace once and then dispatch the cached executable. All pay one XLA compile at the first step.");
    s.field(&WorkloadConfig::spec, &HW::while_trip_count, "while_trip_count").range(0, 1 << 30)
        .default_value(0, "read from the loop")
        .doc("iterations of a `while` whose trip count the loop does not show (0: such a loop runs once and is "
             "listed as unmodelled)");
    s.field(&WorkloadConfig::spec, &HW::spmd, "spmd").default_value(hlo::SpmdMode::kAuto)
        .doc("SPMD partitioning by the module's `sharding` annotations (docs/hlo.md, \"SPMD partitioning\")")
        .details("`auto` partitions a module with num_partitions > 1 and sharding annotations into one partition per "
                 "core, unless it is an already partitioned dump (an `after_optimizations` or `after_spmd` file, "
                 "`fusion` instructions, or a collective outside a manual region); `partition` always partitions when num_partitions > 1; `as_written` runs the module "
                 "as written on every core.");
    return s;
  }();
  return s;
}

}  // namespace tpusim
