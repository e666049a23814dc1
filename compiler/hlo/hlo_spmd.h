// SPMD partitioning of a pre-partitioning HLO module by its `sharding` annotations (docs/hlo.md,
// "SPMD partitioning"): what XLA's sharding propagation and SPMD partitioner do, to the degree that
// timing needs it. The ENTRY computation, and the computations its while, call and conditional
// instructions run (one version per set of operand tilings), are rewritten into one partition's
// program (an AST -> AST pass: the importer then reads it like any module): every instruction takes
// its per-partition shape (each tiled dimension ceil(dim / tiles)), and the collectives the
// partitioner would insert are instructions of the rewritten module (all-reduce of partial sums, or
// a reduce-scatter where the sum is used sliced; all-gather, all-to-all, collective-permute), their
// replica_groups derived from the tile assignments. Each partition runs on
// its own core; `copies` data-parallel copies of the partitioned program (the module's replica_count)
// take the cores copies x num_partitions.
//
// Shardings not given are propagated forward through the ops (the rules are in docs/hlo.md); an op
// the pass does not partition gathers its operands and runs whole on every partition, and is listed
// in SpmdReport::unmodelled with its line (never silently). A malformed sharding (tiles that do not fit
// the shape's rank, devices that are not each partition once) is HloError at the attribute.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/enum_names.h"
#include "compiler/hlo/hlo_ast.h"

namespace tpusim::hlo {

enum class SpmdMode {
  kAuto,       // partition a module that has num_partitions > 1 and sharding annotations, unless it is
               // an already partitioned dump (spmd_detect)
  kPartition,  // partition whenever num_partitions > 1
  kAsWritten,  // never: every core runs the module as written
};

// The names of the modes (a kind: hlo workload's `spmd`, hlo-stats' --spmd): auto, partition, as_written.
// Inline: the workload schema reads it without linking the HLO library.
inline const NameTable<SpmdMode>& enum_names(SpmdMode) {
  static const NameTable<SpmdMode> t = {
      {SpmdMode::kAuto, "auto"}, {SpmdMode::kPartition, "partition"}, {SpmdMode::kAsWritten, "as_written"}};
  return t;
}
// nullopt for a name that is none of them.
std::optional<SpmdMode> spmd_mode_named(std::string_view name);

struct SpmdOptions {
  SpmdMode mode = SpmdMode::kAuto;
  int64_t copies = 1;  // data-parallel copies of the partitioned program (cores = copies x num_partitions)
};

struct SpmdCollectiveStats {
  int64_t count = 0;
  uint64_t result_bytes = 0;  // one partition's result bytes, summed over the inserted collectives
};

struct SpmdNote {
  std::string instruction, opcode;
  int line = 0;
  std::string reason;
};

struct SpmdReport {
  bool partitioned = false;
  std::string reason;  // why the module was (not) partitioned
  int64_t num_partitions = 1;
  std::map<std::string, SpmdCollectiveStats> collectives;  // inserted, by opcode
  int64_t local_slices = 0;  // replicated -> tiled: a slice of the local tile, no communication
  int64_t given = 0;         // instructions partitioned (ENTRY's and each called version's) whose sharding the module gives
  int64_t propagated = 0;    // ... whose sharding the pass propagated
  std::vector<SpmdNote> unmodelled;  // what the pass did not partition as XLA would, with the line
};

struct SpmdResult {
  SpmdReport report;
  std::optional<Module> module;  // one partition's module, when partitioned
};

// Whether `m` is a pre-partitioning module (shapes global, sharding annotations to apply), and why.
struct SpmdDetection {
  bool pre_partitioning = false;
  std::string reason;
};
SpmdDetection spmd_detect(const Module& m, SpmdMode mode);

// Throws HloError (a malformed sharding) and nothing else for well-formed modules.
SpmdResult spmd_partition(const Module& m, const SpmdOptions& options = {});

}  // namespace tpusim::hlo
