// Collectives lowered to core-to-core transfers (kSend/kRecv) plus the vector work of reductions.
// docs/collectives.md explains the algorithms, the cost formulas and the choice between them.
//
// Layout of the implementation: a collective is first built as a plan (collective_plan.h: rounds
// of transfers over chunk ids) by an algorithm's generator (collectives_ring.cc: the 1-D
// bidirectional ring; collectives_dims.cc: dimension by dimension; collectives_all_to_all.cc),
// then emitted as instructions (collectives_emit.cc). collective_cost.h holds the closed-form
// costs and the per-tensor choice of algorithm.
//
// Invariant: every core emits the same instruction sequence (ops, bytes, deps, labels, tags, in the
// same order), differing only in the peers of its sends and receives, and meets its peers in the
// same pattern. Identical SPMD streams can therefore be compiled once and shared.
#pragma once
#include <cstdint>
#include <vector>

#include "compiler/collectives/collective_plan.h"
#include "compiler/lower/program_builder.h"
#include "sim/hw/hw_config.h"
#include "sim/isa/program.h"

namespace tpusim::compiler {

struct CoreId {
  uint32_t chip = 0, core = 0;
  bool operator==(const CoreId& o) const { return chip == o.chip && core == o.core; }
};

// A cycle through every core of the slice in which consecutive members are one ICI hop (or the
// on-chip network) apart: the two cores of a chip are adjacent, and chips follow a Hamiltonian
// cycle of the mesh (boustrophedon rows returning along column 0) or of the torus.
std::vector<CoreId> ring_order(const HwConfig& hw);

// The points of an X x Y grid (id x + X*y) in a cycle of one-step moves where one exists: a
// boustrophedon over the rows returning along column 0 (a Hamiltonian cycle when X or Y is even);
// on a torus (both wrap) the row snake closed through the wrap links. A line (X or Y = 1) is listed
// in order (a cycle only if it wraps).
std::vector<uint32_t> grid_cycle(uint32_t X, uint32_t Y, bool wrap_x, bool wrap_y);

struct CollectiveOptions {
  uint64_t piece_bytes = 1ull << 20;  // pipelining granularity of a transfer (4 pieces must fit VMEM)
  uint32_t tag_base = 0;              // tags [tag_base, tag_base + tags_used) are taken
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kAuto;
  // Asynchronous (XLA's all-reduce-start/done): the collective's DMAs and vector work go on the
  // cores' background queues (isa::Instr::async) and its staging buffers at the top of VMEM, so
  // that kernels emitted after it run meanwhile (they must be compiled with that VMEM reserved:
  // staging_bytes(), ProgramBuilder::reserve_vmem_top).
  bool background = false;
  // All-reduce on megacore hardware (chip.megacore): the result is needed once per device (chip),
  // in its shared HBM, not on every core: the chip's cores reduce-scatter among themselves first,
  // then each core all-reduces its 1/cores share with the cores of the same index on the other
  // chips, and the on-chip all-gather is left out (each core updates the parameters of its share:
  // compiler/step/data_parallel.h). Needs `cores` to be whole chips; otherwise (or without megacore)
  // ignored.
  bool per_device = false;
  // Multislice (hw.multislice): the collective also spans this many slices over the data-center
  // network, the same groups in every slice (collectives_dcn.cc: run hierarchically). 1: one slice.
  uint32_t slices = 1;
};

// The VMEM a collective with pieces of `piece_bytes` stages in (received and local piece, double
// buffered).
inline uint64_t staging_bytes(uint64_t piece_bytes) { return 4 * piece_bytes; }

struct CollectiveResult {
  std::vector<uint32_t> done;  // per core: the instruction completing it
  uint32_t tags_used = 0;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;  // the one used
  uint64_t bytes_sent_per_core = 0;
  uint64_t dcn_bytes_per_core = 0;  // sent over the data-center network to other slices (multislice)
};

// builders[i] emits cores[i]'s stream (cores: any order, normally ring_order(hw)). bytes: the full
// tensor (all-reduce: input per core; reduce-scatter: input per core, each core keeps bytes/n;
// all-gather: output per core, each core contributes bytes/n; all-to-all: per-core buffer, bytes/n
// to each peer). after[i]: instructions of core i the collective waits for. Elements are fp32.
CollectiveResult emit_collective(CollectiveKind kind, std::vector<ProgramBuilder*>& builders,
                                 const std::vector<CoreId>& cores, const HwConfig& hw, uint64_t bytes,
                                 const std::vector<std::vector<uint32_t>>& after, const CollectiveOptions& opt);

// A program of one collective over every core of `hw` in ring order, every replica sharing core 0's
// stream (compiler/collectives/replicas.h): what benchmarks and fidelity tests simulate. Sets *result if given.
isa::Program collective_program(CollectiveKind kind, const HwConfig& hw, uint64_t bytes, const CollectiveOptions& opt,
                                CollectiveResult* result = nullptr);

// The plan emit_collective() emits (kAuto resolved with choose_algorithm()); `per_device` as
// CollectiveOptions::per_device.
CollectivePlan plan_collective(CollectiveKind kind, const std::vector<CoreId>& cores, const HwConfig& hw,
                               uint64_t bytes, CollectiveAlgorithm algorithm, bool per_device = false);

// The per-tensor choice (collective_cost.h has the formulas): the algorithm with the smaller
// closed-form time for `cores` cores of `hw` (dimension by dimension only when the group is the
// whole slice).
CollectiveAlgorithm choose_algorithm(CollectiveKind kind, uint64_t bytes, const HwConfig& hw, uint32_t cores);

// ---- the original all-reduce entry point (compiler/step/spmd_step.cc) ----
struct AllReduceOptions {
  uint64_t piece_bytes = 1ull << 20;  // pipelining granularity of a chunk (4 pieces must fit VMEM)
  uint32_t tag_base = 0;              // tags [tag_base, tag_base + tags_used) are taken
};

// Appends a bidirectional ring all-reduce of `bytes` (fp32 elements) over `ring` to the builders
// (builders[i] emits core ring[i]'s stream; consecutive members exchange data). `after[i]`:
// instructions of core i the collective waits for. Returns, per core, the instruction that
// completes it; sets *tags_used.
std::vector<uint32_t> emit_all_reduce(std::vector<ProgramBuilder*>& builders, const std::vector<CoreId>& ring,
                                      uint64_t bytes, const std::vector<std::vector<uint32_t>>& after,
                                      const AllReduceOptions& opt, uint32_t* tags_used);

// A collective that spans `opt.slices` > 1 slices (collectives_dcn.cc), as XLA runs one across the
// data-center network: all-reduce = reduce-scatter within the slice, all-reduce of each core's
// share across the slices, all-gather within the slice; reduce-scatter = the first two. Other kinds
// stay within a slice (std::invalid_argument). emit_collective() calls it when opt.slices > 1.
CollectiveResult emit_multislice_collective(CollectiveKind kind, std::vector<ProgramBuilder*>& builders,
                                            const std::vector<CoreId>& cores, const HwConfig& hw, uint64_t bytes,
                                            const std::vector<std::vector<uint32_t>>& after,
                                            const CollectiveOptions& opt);

// Emits `plan` (built for `cores`): the common back end of the functions above.
CollectiveResult emit_plan(const CollectivePlan& plan, std::vector<ProgramBuilder*>& builders,
                           const std::vector<CoreId>& cores, const std::vector<std::vector<uint32_t>>& after,
                           uint64_t piece_bytes, uint32_t tag_base, bool background = false);

}  // namespace tpusim::compiler
