// Chip: its TensorCores and its HBM. The chip binds every core's memory socket to the HBM target
// (socket index = core index) and passes the cores' barrier ports up to the slice.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>
#include <systemc>

#include "sim/chip/chip_params.h"
#include "sim/core/core_ifs.h"
#include "sim/core/tensor_core.h"
#include "sim/hbm/hbm.h"

namespace tpusim {

class Chip : public sc_core::sc_module {
 public:
  sc_core::sc_port<BarrierIf> sync;  // the cores' barrier ports, bound by the slice to its sync service

  // Structure (cores, MXUs per core, HBM variant) is fixed here; configure() applies the rest.
  Chip(sc_core::sc_module_name name, const ChipParams& chip);

  void configure(const ChipParams& chip);
  TensorCore& core(uint32_t i) { return *cores_[i]; }
  uint32_t cores() const { return uint32_t(cores_.size()); }
  Hbm& hbm() { return *hbm_; }

 private:
  std::vector<std::unique_ptr<TensorCore>> cores_;
  std::unique_ptr<Hbm> hbm_;
};

}  // namespace tpusim
