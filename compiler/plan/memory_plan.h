// HBM memory planning: XLA assigns every buffer at compile time. Parameters and optimizer state
// live for the whole program (persistent, updated in place when donated); inputs live until their
// last reader; every other materialized value lives from the kernel that writes it to the last
// kernel that reads it (graph outputs to the end). The peak over the kernel sequence, plus the
// persistent bytes, is what must fit in a core's HBM.
//
// CMEM (TPU v4: 128 MiB per chip between HBM and VMEM): place_in_cmem() moves buffers out of HBM
// into CMEM, greedily by benefit per byte, first fit over their live ranges, within a per-core
// budget (see there for the policy and why).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "compiler/plan/fusion.h"
#include "models/graph.h"
#include "sim/hw/chip_params.h"

namespace tpusim::compiler {

// kGradient and kGatheredParameter are what the step compiler marks (compiler/step/spmd_step.h): a
// reduce-scattered gradient slice or a unit's all-gathered parameters, live only around their use.
// kHost: a value offloaded to the host's memory (models::OpKind::kHostOffload): no HBM.
enum class BufferKind { kParameter, kOptimizerState, kInput, kTemporary, kOutput, kGradient, kGatheredParameter, kHost };
const char* buffer_kind_name(BufferKind k);
// The buffer kind of a graph parameter of `role`.
BufferKind buffer_kind_of_role(models::ParamRole role);

struct HbmBuffer {
  std::string name;  // the value's name (the parameter or the kernel root)
  int node = -1;     // its graph node (-1: none, e.g. a collective's buffer)
  uint64_t bytes = 0;
  BufferKind kind = BufferKind::kTemporary;
  int first_kernel = 0;  // live range over the program's kernels, inclusive
  int last_kernel = 0;
  int accesses = 0;      // kernels that read or write it (its DMA traffic, in buffer sizes)
  bool in_cmem = false;  // resident in CMEM for its whole live range (place_in_cmem)
  uint32_t copies = 1;   // copies in the device's HBM: 1, or one per core of a megacore device
                         // for what each core holds for itself (plan_device_memory)
};

// Per device: a TensorCore on v2/v3; on a megacore chip (TPU v4) the chip, whose cores share its
// HBM (plan_device_memory).
struct MemoryPlan {
  std::vector<HbmBuffer> buffers;
  uint64_t persistent_bytes = 0;  // parameters + optimizer state (+ non-donated outputs' aliases)
  uint64_t peak_bytes = 0;        // persistent + the largest simultaneous set of other buffers
  int peak_kernel = 0;            // kernel index where the peak occurs
  std::vector<size_t> live_at_peak;  // indices into `buffers`, largest first (none in host memory)
  // Host memory (BufferKind::kHost): the most offloaded bytes held at once for this device. Not in
  // peak_bytes: the host's RAM holds them, the PCIe link carries them.
  uint64_t host_peak_bytes = 0;
  // CMEM (per core; zero without CMEM). peak_bytes above still counts every buffer: HBM capacity
  // is not reduced by what CMEM holds (XLA keeps an HBM home for alternate-memory buffers).
  uint64_t cmem_budget_bytes = 0;  // this core's share of its chip's CMEM
  uint64_t cmem_peak_bytes = 0;    // most bytes resident in CMEM at once (this core)
  uint64_t cmem_chip_bytes = 0;    // ... summed over the chip's cores that share it (<= capacity)
  uint64_t cmem_buffers = 0;       // buffers placed
  std::vector<bool> cmem_node;     // by graph node id: its buffer is in CMEM (empty: none)
  std::map<int, int> donated;      // output node -> the parameter node whose buffer it writes
  uint32_t cores_per_device = 1;   // the TensorCores whose buffers the plan counts (plan_device_memory)
};

// kind_of: role of each Parameter node (others are computed). donated: output node -> parameter
// node whose buffer it overwrites (optimizer updates), so it needs no buffer of its own. aliases:
// value -> the value whose buffer it is (a collective's done, an all-reduce written over its
// operand): no buffer of its own; its readers keep that buffer live. buffer_bytes: a buffer's size
// when it is not its value's stored bytes (the flat buffer of a flat all-gather's parts).
MemoryPlan plan_memory(const models::Graph& g, const FusionPlan& plan,
                       const std::function<BufferKind(int)>& kind_of, const std::map<int, int>& donated = {},
                       const std::map<int, int>& aliases = {}, const std::map<int, uint64_t>& buffer_bytes = {});

// A megacore device (chip.megacore): `cores` TensorCores that run the same per-core program on
// one shared HBM. Buffers for which `shared` holds are stored once per device (data parallel: the
// parameters, optimizer state and the combined gradients); every other buffer once per core (the
// activations of the core's share of the batch, its inputs and temporaries). Recomputes the
// persistent bytes, the peak and the buffers live at it over the kernel sequence, so that
// peak_bytes is the device's need. `shared` empty: every buffer is per core (the whole plan times
// `cores`, live ranges unchanged: an FSDP step whose shards are cut per core). cores <= 1: no-op.
void plan_device_memory(MemoryPlan& mp, uint32_t cores, const std::function<bool(const HbmBuffer&)>& shared);

// CMEM placement policy (the buffers' DMAs are then tagged isa::MemSpace::kCmem by lowering):
//  * A placed buffer lives in CMEM for its whole live range: its producer writes it there, its
//    readers read it from there; persistent buffers (parameters, optimizer state) stay there
//    across steps, so no HBM<->CMEM copies are needed.
//  * Candidates: every buffer, except program inputs when `inputs_in_hbm` (a training step's
//    batch arrives over PCIe into HBM); a standalone kernel's operands are candidates (assumed
//    resident where the compiler placed them, like parameters).
//  * Order: most accesses (kernels reading or writing it) first, i.e. the most DMA traffic saved
//    per byte of CMEM; ties: smaller first (more buffers for the same bytes), then graph order.
//    This is the benefit-per-byte greedy order of XLA's memory-space assignment, which assigns
//    buffers to an alternate memory space (on TPU: VMEM/CMEM) sorted by a memory-boundedness
//    benefit per byte and packed first-fit over live ranges.
//  * Fit: `sharers` cores of the chip run programs that each place their own buffers (SPMD
//    replicas; 1 for a lone program): each gets chip CMEM / sharers, so the chip's total stays
//    within its capacity. A buffer is placed only if at every kernel of its live range the
//    resident bytes stay within that share.
//  * `keep_in_hbm`: nodes whose buffers transfers between cores touch (collective operands):
//    kSend/kRecv read and write HBM, so these are never placed.
void place_in_cmem(MemoryPlan& mp, size_t graph_nodes, const ChipParams& chip, uint32_t sharers, bool inputs_in_hbm,
                   const std::vector<int>& keep_in_hbm = {});

}  // namespace tpusim::compiler
