// Parameters of one TPU chip: its TensorCores, HBM, on-chip network, ICI ports and PCIe host interface.
#pragma once
#include <cstdint>
#include <string>

#include "sim/core/core_params.h"
#include "sim/hbm/hbm_params.h"

namespace tpusim {

struct IciParams {
  uint32_t links = 0;                              // ICI ports per chip
  double bandwidth_gbyte_per_s_per_direction = 0;  // per link, one direction
  double hop_latency_ns = 0;                       // per router hop
  uint32_t packet_bytes = 0;                       // network packet: the unit in which links, the NoC and
                                                   // PCIe are reserved (interleaving granularity)
};

// The on-chip network between the TensorCores of one chip (core-to-core transfers on one chip).
struct NocParams {
  double bandwidth_gbyte_per_s = 0;  // shared by all core-to-core transfers of the chip
  double latency_ns = 0;             // source core to destination core
};

struct PcieParams {
  double bandwidth_gbyte_per_s = 0;  // host <-> chip, one direction
  double latency_ns = 0;
};

struct ChipParams {
  std::string generation;  // "v2", "v3", "v4"
  uint32_t cores = 0;      // TensorCores per chip
  CoreParams core;         // every core of the chip is identical (declared once, replicated)
  HbmParams hbm;
  NocParams noc;
  IciParams ici;
  PcieParams pcie;
};

}  // namespace tpusim
