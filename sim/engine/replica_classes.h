// Classes of symmetric replicas: cores the analytical engine may simulate once for all.
//
// SPMD programs run one stream on every core of a slice; on a torus most cores then do exactly the
// same thing at the same cycles, only with other peers. The analytical engine simulates one core
// per class (its representative, the class's first core) and gives every other member the
// representative's figures. That is exact when every member's simulation is the representative's,
// which holds, round by round of the engine, when the classes are an equitable partition with
// positions (sim/README.md, "Symmetric replicas"):
//   * the members run the same stream (the same CoreProgram),
//   * every send of the stream takes, on each member, the same first stage of the transfer queue
//     and the same number of ICI hops (its timing: sim/ici/ici_timing.h send_estimate),
//   * the peer of every send and receive of the stream is, on each member, in the same class and
//     at the same position of the peer's stream,
//   * the group of every barrier has, on each member, the same participants up to the class
//     (the sorted list of participant class and barrier position).
// Then, by induction over the engine's rounds (sends and barrier arrivals take effect at a round's
// end, whatever the order of the cores), every member is in its representative's state after every
// round. find_replica_classes() computes the coarsest such partition by colour refinement and
// checks every member against its representative exactly (hashes only pick the candidates).
#pragma once
#include <cstdint>
#include <vector>

#include "sim/analysis/program_plan.h"
#include "sim/hw/hw_config.h"

namespace tpusim {

struct ReplicaClasses {
  std::vector<uint32_t> rep_of;  // per slot (ProgramPlan::cores() index): its class's representative
  std::vector<uint32_t> reps;    // the representatives, ascending (each the first slot of its class)
  bool reduced() const { return reps.size() < rep_of.size(); }
};

// Every core its own class: what the engine simulates without the reduction.
ReplicaClasses every_core(size_t cores);

// The classes of symmetric replicas of `plan` on `hw` (see above).
ReplicaClasses find_replica_classes(const ProgramPlan& plan, const HwConfig& hw);

}  // namespace tpusim
