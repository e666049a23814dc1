// What a step runs: which graph of the workload (GraphKind) and whether it trains or evaluates
// (StepKind). The step source compiles by GraphKind; the run records and report.json carry both, by name.
#pragma once
#include "base/enum_names.h"

namespace tpusim {

enum class GraphKind {
  kTrain,            // forward + backward + all-reduce + optimizer update
  kTrainFirstStep,   // the first optimizer step: optimizer state created inside the graph
  kAccumulate,       // non-sync micro-step: forward + backward into the .grad buffers, no all-reduce
  kEval,             // forward only, dropout off
  kImported,         // an imported module's step (whatever it computes)
};
// train | train_first_step | accumulate | eval | hlo
inline const NameTable<GraphKind>& enum_names(GraphKind) {
  static const NameTable<GraphKind> t = {{GraphKind::kTrain, "train"},
                                         {GraphKind::kTrainFirstStep, "train_first_step"},
                                         {GraphKind::kAccumulate, "accumulate"},
                                         {GraphKind::kEval, "eval"},
                                         {GraphKind::kImported, "hlo"}};
  return t;
}
inline const char* graph_kind_name(GraphKind k) { return enum_name(k); }

enum class StepKind { kTrain, kEval };
inline const NameTable<StepKind>& enum_names(StepKind) {
  static const NameTable<StepKind> t = {{StepKind::kTrain, "train"}, {StepKind::kEval, "eval"}};
  return t;
}

}  // namespace tpusim
