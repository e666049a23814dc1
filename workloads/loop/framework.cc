#include "workloads/loop/framework.h"

#include <fmt/format.h>

namespace tpusim {

FrameworkPersonality framework_personality(const TrainingWorkload& t) {
  FrameworkPersonality p;
  p.name = t.framework;
  if (t.choices.framework == FrameworkKind::kTfKeras) {
    p.clients = FrameworkPersonality::Clients::kOne;
    p.trace_every_step = false;
    p.lazy_optimizer_state = false;
    p.per_client_shapes = false;
    p.steps_per_execution = t.steps_per_execution;
  } else if (t.choices.framework == FrameworkKind::kJax) {
    p.clients = FrameworkPersonality::Clients::kPerHost;
    p.trace_every_step = false;
    p.lazy_optimizer_state = false;
    p.per_client_shapes = false;
  }
  return p;
}

uint32_t slice_devices(const HwConfig& hw) { return hw.slice.chips() * devices_per_chip(hw.chip); }
uint32_t devices_per_host(const HwConfig& hw) { return hw.slice.chips_per_host * devices_per_chip(hw.chip); }

uint32_t FrameworkPersonality::client_count(const HwConfig& hw) const {
  switch (clients) {
    case Clients::kPerDevice: return slice_devices(hw);
    case Clients::kPerHost: return hw.slice.hosts;
    case Clients::kOne: return 1;
  }
  return 1;
}

uint32_t FrameworkPersonality::device_count(const HwConfig& hw, uint32_t) const {
  return slice_devices(hw) / client_count(hw);
}

uint32_t FrameworkPersonality::first_device(const HwConfig& hw, uint32_t c) const { return c * device_count(hw, c); }

uint32_t FrameworkPersonality::host_of(const HwConfig& hw, uint32_t c) const {
  return first_device(hw, c) / devices_per_host(hw);
}

std::string FrameworkPersonality::describe(const HwConfig& hw, const std::string& launcher) const {
  const uint32_t n = client_count(hw);
  switch (clients) {
    case Clients::kPerDevice: return fmt::format("{} processes ({})", n, launcher);
    case Clients::kPerHost: return fmt::format("{} process{} (one per host, jax.distributed)", n, n == 1 ? "" : "es");
    case Clients::kOne: return "1 client (TPUStrategy)";
  }
  return "";
}

}  // namespace tpusim
