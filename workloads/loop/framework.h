// Framework personalities: how PyTorch/XLA, TF/Keras and JAX drive the same TPU slice differently
// (docs/sources.md). A device is what the framework sees: a TensorCore on v2/v3, a chip on a megacore
// chip (TPU v4, chip.megacore: both cores are one device, e.g. 4 devices and 4 torch_xla processes
// on a v4-8). The training loop (training_run.cc) is one; a personality sets who compiles, when
// the host traces, and what a step costs the host:
//
//   torch_xla  one process per device (xmp.spawn / xla_spawn.py), each tracing every step
//              lazily (the graph is re-recorded every step, then looked up in the process's cache),
//              each compiling its own graphs; torch.optim creates its state in the first step, a
//              second train graph.
//   tf_keras   one client for the whole slice (TPUStrategy): a tf.function is traced and compiled
//              once per input signature, as one SPMD program for every replica; a step costs the
//              host only its dispatch, once per `steps_per_execution` steps (the compiled program
//              loops over them on the device). Keras builds the optimizer's slots before the first
//              step: no second train graph. On a TPU Node the input pipeline runs on the user's VM
//              and reaches the TPU host over the network, and it cannot read the VM's local disk.
//   torch_xla with `spmd` (xr.use_spmd(), Trainer's FSDPv2): one process per host, still tracing
//              every step and building the optimizer state in the first, compiling one program for
//              the global batch shape, partitioned over the devices.
//   jax        one process per host (jax.distributed), each tracing (jax.jit) and compiling the
//              global SPMD program (pjit) once per input signature; a step costs a Python dispatch.
//              optax's state is initialized outside the step: one train graph.
#pragma once
#include <cstdint>
#include <string>

#include "sim/hw/hw_config.h"
#include "workloads/config/workload_config.h"

namespace tpusim {

// The slice's devices as frameworks see them (chips x devices_per_chip) and those of one host.
uint32_t slice_devices(const HwConfig& hw);
uint32_t devices_per_host(const HwConfig& hw);

struct FrameworkPersonality {
  std::string name;
  // Client processes and what they drive: one per device (torch_xla), per host (jax), or one (tf_keras).
  enum class Clients { kPerDevice, kPerHost, kOne } clients = Clients::kPerDevice;
  bool trace_every_step = true;      // lazy tensors re-trace each step; jit/tf.function only on a new signature
  bool lazy_optimizer_state = true;  // the first optimizer step is its own graph
  bool per_client_shapes = true;     // a client compiles its own batch's shape (else the global SPMD shape)
  uint32_t steps_per_execution = 1;  // steps per host dispatch (tf_keras)
  bool spmd = false;                 // torch_xla in SPMD mode (a process per host; traces every step)

  // The clients driving `devices` devices of the slice (the first ones in process order; a training
  // run drives every device: slice_devices).
  uint32_t client_count(const HwConfig& hw, uint32_t devices) const;
  // The devices (data-parallel replicas) client `c` drives, as [first, first + count) in process
  // (device) order.
  uint32_t first_device(const HwConfig& hw, uint32_t devices, uint32_t c) const;
  uint32_t device_count(const HwConfig& hw, uint32_t devices, uint32_t c) const;
  // The host client `c` runs on (compiles on one host share its CPUs).
  uint32_t host_of(const HwConfig& hw, uint32_t devices, uint32_t c) const;
  // "8 processes (xla_spawn)", "1 client (TPUStrategy)", ...; `launcher` names how per-device
  // processes were started.
  std::string describe(const HwConfig& hw, uint32_t devices, const std::string& launcher) const;
};

// A framework's personality (named as the workload names it), with tf_keras's steps_per_execution.
FrameworkPersonality framework_personality(FrameworkKind kind, uint32_t steps_per_execution = 1);
FrameworkPersonality framework_personality(const TrainingWorkload& t);

}  // namespace tpusim
