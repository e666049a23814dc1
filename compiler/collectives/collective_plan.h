// A collective as a plan: rounds of core-to-core transfers over chunk ids, independent of
// instructions. The plan generators (collectives_ring.cc, collectives_dims.cc,
// collectives_all_to_all.cc) build plans; collectives_emit.cc turns a plan into kSend/kRecv/DMA/VPU
// instructions; execute_plan() runs a plan symbolically (tests check every contribution arrives
// exactly once). An all-reduce with `device` set is checked per device instead of per core.
//
// Data model: the per-core tensor of `bytes` is split into `lanes` equal parts (a lane is an
// independent stream of the collective, e.g. one direction of a bidirectional ring); a lane is
// split into `chunks` chunks of `chunk_bytes`, with ids 0..chunks-1 in byte order. A transfer moves
// a contiguous range of chunk ids of one lane (so it is one message, cut into pieces at emission).
//
// A step is one round in which every core sends exactly one transfer (to `send_to[i]`) and
// receives exactly one (send_to is a permutation without fixed points), all with the same chunk
// count: the SPMD shape that keeps every core's instruction stream identical up to its peers.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tpusim::compiler {

enum class CollectiveKind { kAllReduce, kReduceScatter, kAllGather, kAllToAll };
enum class CollectiveAlgorithm { kAuto, kRing, kDimensionByDimension };

const char* collective_name(CollectiveKind kind);          // "all-reduce", ...
const char* algorithm_name(CollectiveAlgorithm algorithm);  // "auto", "ring", "dims"

enum class Combine : uint8_t {
  kReduce,  // the receiver adds the received chunks into its own
  kCopy,    // the receiver stores them (all-gather, all-to-all)
};

struct PlanStep {
  Combine combine = Combine::kCopy;
  uint32_t lane = 0;
  uint32_t count = 0;                // chunks per transfer
  std::vector<uint32_t> send_to;     // per core index: the core it sends to
  std::vector<uint32_t> first;       // per core index: first chunk id it sends
  std::vector<uint32_t> recv_first;  // per core index: first chunk id it receives
  const char* what = "";             // phase name for labels ("reduce-scatter", "all-gather", ...)
  bool from_input = false;           // sends only chunks of the collective's input (never received)
};

struct CollectivePlan {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::kRing;
  uint32_t cores = 0;
  uint32_t lanes = 1;
  uint32_t chunks = 0;  // per lane
  uint64_t chunk_bytes = 0;
  // Reduce-scatter result / all-gather input: owner[lane][chunk] = the core index holding that
  // chunk's shard. All-to-all (chunks = 2 x cores): chunk c < cores of core i is the piece core i
  // addresses to core c, chunk cores + c the piece core c addressed to core i; owner is unused.
  std::vector<std::vector<uint32_t>> owner;
  // A megacore all-reduce (collectives.h, CollectiveOptions::per_device): the device (chip) of each
  // core index. Its result is complete when every device holds every chunk fully reduced on one of
  // its cores (they share its HBM). Empty: every core is a device and needs every chunk.
  std::vector<uint32_t> device;
  std::vector<PlanStep> steps;

  // Adds a step. recv_first defaults to the chunk ids sent (recv_first[send_to[i]] = first[i]).
  PlanStep& add(Combine combine, uint32_t lane, uint32_t count, std::vector<uint32_t> send_to,
                std::vector<uint32_t> first, const char* what, std::vector<uint32_t> recv_first = {});
  uint64_t transfer_bytes(const PlanStep& s) const { return uint64_t(s.count) * chunk_bytes; }
};

// The result of executing a plan symbolically: "" when every core ends with exactly what the
// kind promises (all-reduce: every chunk holds every core's contribution once; reduce-scatter:
// each core its owned chunks fully reduced; all-gather: every chunk from its owner; all-to-all:
// each core the chunk each peer addressed to it), else a description of the first violation
// (a contribution counted twice, a chunk sent before it exists, a missing one).
std::string execute_plan(const CollectivePlan& plan);

}  // namespace tpusim::compiler
