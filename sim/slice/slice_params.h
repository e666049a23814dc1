// Parameters of a slice: chips joined by ICI in a mesh/torus, driven by hosts.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sim/chip/chip_params.h"

namespace tpusim {

struct TopologyParams {
  std::vector<uint32_t> dims;    // chips per dimension, e.g. [2, 2] for v3-8, [4, 4] for v3-32
  std::vector<bool> wraparound;  // per dimension: torus links closing the ring
};

struct HostParams {
  uint32_t cpus = 0;        // host CPU cores
  uint32_t ram_gib = 0;     // host RAM
  double cpu_ghz = 0;       // host CPU clock (compile/tracing cost models scale by it)
};

struct SliceParams {
  TopologyParams topology;
  uint32_t hosts = 0;
  uint32_t chips_per_host = 0;
  uint32_t chips() const {
    uint32_t n = 1;
    for (uint32_t d : topology.dims) n *= d;
    return n;
  }
};

// The whole hardware config, as resolved from a hardware YAML file.
struct HwConfig {
  std::string name;  // e.g. "v3-8"
  ChipParams chip;
  SliceParams slice;
  HostParams host;
};

}  // namespace tpusim
