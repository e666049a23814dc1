// Workload schemas kept in files of their own; workload_config.cc registers them by kind.
#pragma once
#include "config/schema.h"
#include "workloads/config/workload_config.h"

namespace tpusim {

const config::Schema<WorkloadConfig>& training_schema();      // kind: training (training_schema.cc)
const config::Schema<WorkloadConfig>& hlo_workload_schema();  // kind: hlo (hlo_workload_schema.cc)

}  // namespace tpusim
