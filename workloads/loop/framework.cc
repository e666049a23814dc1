#include "workloads/loop/framework.h"

#include <algorithm>

#include <fmt/format.h>

namespace tpusim {

FrameworkPersonality framework_personality(FrameworkKind kind, uint32_t steps_per_execution) {
  FrameworkPersonality p;
  p.name = enum_name(kind);
  if (kind == FrameworkKind::kTfKeras) {
    p.clients = FrameworkPersonality::Clients::kOne;
    p.trace_every_step = false;
    p.lazy_optimizer_state = false;
    p.per_client_shapes = false;
    p.steps_per_execution = steps_per_execution;
  } else if (kind == FrameworkKind::kJax) {
    p.clients = FrameworkPersonality::Clients::kPerHost;
    p.trace_every_step = false;
    p.lazy_optimizer_state = false;
    p.per_client_shapes = false;
  }
  return p;
}

FrameworkPersonality framework_personality(const TrainingWorkload& t) {
  FrameworkPersonality p = framework_personality(t.framework, t.steps_per_execution);
  if (t.framework == FrameworkKind::kTorchXla && t.spmd) {  // xr.use_spmd(): a process per host, global shapes
    p.clients = FrameworkPersonality::Clients::kPerHost;
    p.per_client_shapes = false;
    p.spmd = true;
  }
  return p;
}

uint32_t slice_devices(const HwConfig& hw) { return hw.slice.chips() * devices_per_chip(hw.chip); }
uint32_t devices_per_host(const HwConfig& hw) { return hw.slice.chips_per_host * devices_per_chip(hw.chip); }

uint32_t FrameworkPersonality::client_count(const HwConfig& hw, uint32_t devices) const {
  switch (clients) {
    case Clients::kPerDevice: return devices;
    case Clients::kPerHost: return (devices + devices_per_host(hw) - 1) / devices_per_host(hw);
    case Clients::kOne: return 1;
  }
  return 1;
}

uint32_t FrameworkPersonality::first_device(const HwConfig& hw, uint32_t devices, uint32_t c) const {
  switch (clients) {
    case Clients::kPerDevice: return c;
    case Clients::kPerHost: return c * devices_per_host(hw);
    case Clients::kOne: return 0;
  }
  return 0;
}

uint32_t FrameworkPersonality::device_count(const HwConfig& hw, uint32_t devices, uint32_t c) const {
  switch (clients) {
    case Clients::kPerDevice: return 1;
    case Clients::kPerHost: return std::min(devices_per_host(hw), devices - first_device(hw, devices, c));
    case Clients::kOne: return devices;
  }
  return devices;
}

uint32_t FrameworkPersonality::host_of(const HwConfig& hw, uint32_t devices, uint32_t c) const {
  return first_device(hw, devices, c) / devices_per_host(hw);
}

std::string FrameworkPersonality::describe(const HwConfig& hw, uint32_t devices, const std::string& launcher) const {
  const uint32_t n = client_count(hw, devices);
  switch (clients) {
    case Clients::kPerDevice: return fmt::format("{} process{} ({})", n, n == 1 ? "" : "es", launcher);
    case Clients::kPerHost:
      return fmt::format("{} process{} (one per host, {})", n, n == 1 ? "" : "es",
                         spmd ? "torch_xla SPMD mode" : "jax.distributed");
    case Clients::kOne: return "1 client (TPUStrategy)";
  }
  return "";
}

}  // namespace tpusim
