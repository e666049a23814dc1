#include "sim/engine/hw_check.h"

#include <string>
#include <type_traits>

#include "base/config_error.h"
#include "sim/hbm/hbm_impls.h"

namespace tpusim {
namespace {

template <typename T>
void require(bool ok, const char* path, T value, const char* rule) {
  if (ok) return;
  std::string v;
  if constexpr (std::is_same_v<T, std::string>) v = value;
  else v = std::to_string(value);
  throw ConfigError({"", path, 0, v, rule, ""});
}

}  // namespace

void check_hw_for_sim(const HwConfig& hw) {
  const ChipParams& c = hw.chip;
  require(c.core.clock_mhz > 0, "chip.core.clock_mhz", c.core.clock_mhz, "must be > 0");
  require(c.cores >= 1, "chip.cores", c.cores, "must be >= 1");
  const MxuParams& m = c.core.mxu;
  require(m.count >= 1, "chip.core.mxu.count", m.count, "must be >= 1");
  require(m.rows >= 1, "chip.core.mxu.rows", m.rows, "must be >= 1");
  require(m.cols >= 1, "chip.core.mxu.cols", m.cols, "must be >= 1");
  require(m.weight_buffers >= 1, "chip.core.mxu.weight_buffers", m.weight_buffers, "must be >= 1");
  require(m.weight_load_rows_per_cycle >= 1, "chip.core.mxu.weight_load_rows_per_cycle", m.weight_load_rows_per_cycle,
          "must be >= 1");
  require(m.lhs_rows_per_cycle >= 1, "chip.core.mxu.lhs_rows_per_cycle", m.lhs_rows_per_cycle, "must be >= 1");
  const VpuParams& v = c.core.vpu;
  require(v.alu_slots >= 1, "chip.core.vpu.alu_slots", v.alu_slots, "must be >= 1");
  require(v.vld_slots >= 1, "chip.core.vpu.vld_slots", v.vld_slots, "must be >= 1");
  require(v.vst_slots >= 1, "chip.core.vpu.vst_slots", v.vst_slots, "must be >= 1");
  require(c.core.dma.engines >= 1, "chip.core.dma.engines", c.core.dma.engines, "must be >= 1");
  require(c.core.xfer.channels >= 1, "chip.core.xfer.channels", c.core.xfer.channels, "must be >= 1");
  require(c.core.dma.chunk_bytes >= 1, "chip.core.dma.chunk_bytes", c.core.dma.chunk_bytes, "must be >= 1");
  check_hbm_impl(c.hbm.impl);
  require(c.hbm.ownership == "per_core" || c.hbm.ownership == "shared", "chip.hbm.ownership", c.hbm.ownership,
          "unknown HBM ownership; known: per_core, shared");
  require(c.hbm.bandwidth_gbyte_per_s > 0, "chip.hbm.bandwidth_gbyte_per_s", c.hbm.bandwidth_gbyte_per_s, "must be > 0");
  require(c.hbm.efficiency > 0 && c.hbm.efficiency <= 1, "chip.hbm.efficiency", c.hbm.efficiency, "must be in (0, 1]");
  require(c.hbm.latency_ns >= 0, "chip.hbm.latency_ns", c.hbm.latency_ns, "must be >= 0");
  require(c.hbm.channels >= 1, "chip.hbm.channels", c.hbm.channels, "must be >= 1");
  require(c.hbm.ownership != "per_core" || c.hbm.channels >= c.cores, "chip.hbm.channels", c.hbm.channels,
          "must be >= chip.cores with per_core ownership (every core owns at least one channel)");
  if (has_cmem(c)) {
    require(c.cmem->bandwidth_gbyte_per_s > 0, "chip.cmem.bandwidth_gbyte_per_s", c.cmem->bandwidth_gbyte_per_s,
            "must be > 0");
    require(c.cmem->latency_ns >= 0, "chip.cmem.latency_ns", c.cmem->latency_ns, "must be >= 0");
  }
  require(!hw.slice.topology.dims.empty(), "slice.topology.dims", std::string("[]"), "must list at least one dimension");
  require(hw.slice.topology.dims.size() <= 3, "slice.topology.dims", hw.slice.topology.dims.size(), "at most 3 dimensions");
  for (uint32_t d : hw.slice.topology.dims) require(d >= 1, "slice.topology.dims", d, "every dimension must be >= 1");
  require(hw.slice.topology.wraparound.size() == hw.slice.topology.dims.size(), "slice.topology.wraparound",
          hw.slice.topology.wraparound.size(), "must have one entry per dimension");
  // The network (transfers between cores and with the host).
  require(c.ici.packet_bytes >= 1, "chip.ici.packet_bytes", c.ici.packet_bytes, "must be >= 1");
  require(hw.slice.chips() == 1 || c.ici.bandwidth_gbyte_per_s_per_direction > 0,
          "chip.ici.bandwidth_gbyte_per_s_per_direction", c.ici.bandwidth_gbyte_per_s_per_direction, "must be > 0");
  require(c.cores == 1 || c.noc.bandwidth_gbyte_per_s > 0, "chip.noc.bandwidth_gbyte_per_s", c.noc.bandwidth_gbyte_per_s,
          "must be > 0");
  require(c.pcie.bandwidth_gbyte_per_s > 0, "chip.pcie.bandwidth_gbyte_per_s", c.pcie.bandwidth_gbyte_per_s, "must be > 0");
  require(hw.slice.hosts >= 1 && hw.slice.chips_per_host >= 1 &&
              uint64_t(hw.slice.hosts) * hw.slice.chips_per_host == hw.slice.chips(),
          "slice.hosts", hw.slice.hosts, "hosts x chips_per_host must equal the chips of slice.topology.dims");
}

}  // namespace tpusim
