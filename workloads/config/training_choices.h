// The enumerated settings of a `kind: training` workload as typed values. The YAML keeps its
// strings (the user-facing form: dumps and report.json print them); the loader resolves them once
// into TrainingChoices (TrainingWorkload::choices), and everything past the loader reads these.
// Each enum's table of names below is the one place its strings are spelt: the schema's allowed
// values come from it too.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "models/optimizers.h"
#include "workloads/data/batching.h"

namespace tpusim {

struct TrainingWorkload;

enum class Precision { kFp32, kBf16, kBf16Downcast, kMixedBf16 };
enum class EvalPrecision { kSame, kBf16 };                  // Trainer bf16_full_eval
enum class Sharding { kDataParallel, kFsdp };
enum class Task { kSequenceClassification, kMaskedLm, kImageClassification, kCausalLm, kSeq2seq };
enum class FrameworkKind { kTorchXla, kTfKeras, kJax };     // workloads/loop/framework.h
enum class Launcher { kXlaSpawn, kNotebookFork };
enum class TpuRuntime { kVm, kNode };
enum class DataLocation { kLocal, kGcs };
enum class EvalStrategy { kEpoch, kSteps, kNo };

// Each enum's YAML names, in the order the schema lists them.
template <class E>
using NameTable = std::vector<std::pair<E, const char*>>;
const NameTable<Precision>& precision_names();
const NameTable<EvalPrecision>& eval_precision_names();
const NameTable<Sharding>& sharding_names();
const NameTable<Task>& task_names();
const NameTable<FrameworkKind>& framework_kind_names();
const NameTable<Launcher>& launcher_names();
const NameTable<TpuRuntime>& tpu_runtime_names();
const NameTable<DataLocation>& data_location_names();
const NameTable<EvalStrategy>& eval_strategy_names();

// The names of a table, for a schema's one_of.
template <class E>
std::vector<std::string> names_of(const NameTable<E>& t) {
  std::vector<std::string> n;
  for (const auto& [e, s] : t) n.push_back(s);
  return n;
}

// The YAML name of a value.
template <class E>
const char* name_of(const NameTable<E>& t, E e) {
  for (const auto& [v, s] : t)
    if (v == e) return s;
  return "?";
}

// The value of a YAML name (the schema has checked it is one of the table's).
template <class E>
E value_of(const NameTable<E>& t, const std::string& name) {
  for (const auto& [v, s] : t)
    if (name == s) return v;
  return t.front().first;
}

struct TrainingChoices {
  data::PaddingSpec padding;
  Precision precision = Precision::kFp32;
  EvalPrecision eval_precision = EvalPrecision::kSame;
  Sharding sharding = Sharding::kDataParallel;
  models::OptimizerKind optimizer = models::OptimizerKind::kAdamW;
  Task task = Task::kSequenceClassification;
  FrameworkKind framework = FrameworkKind::kTorchXla;
  Launcher launcher = Launcher::kXlaSpawn;
  TpuRuntime tpu_runtime = TpuRuntime::kVm;
  DataLocation data_location = DataLocation::kLocal;
  EvalStrategy eval_strategy = EvalStrategy::kEpoch;
};

// The typed values of t's strings. Throws ConfigError (yaml path = the key) for a string that is
// not a name of its table; the schema has checked them before the loader calls this.
TrainingChoices resolve_choices(const TrainingWorkload& t);

}  // namespace tpusim
