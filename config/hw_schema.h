// The schema of the hardware config (HwConfig and every struct in it), declared in hw_schema.cc.
// Besides loading (hw_loader.h), it gives JSON for reports and structural equality:
//   hw_schema().to_json(hw), hw_schema().equal(a, b), hw_schema().has_path("chip.core.mxu.count").
#pragma once
#include "config/schema.h"
#include "sim/hw/hw_config.h"

namespace tpusim {

const config::Schema<HwConfig>& hw_schema();
// The `chip:` section alone (a chip file such as configs/hw/chips/tpu_v3.yaml).
const config::Schema<ChipParams>& chip_schema();

}  // namespace tpusim
