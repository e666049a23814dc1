// HBM memory planning: XLA assigns every buffer at compile time. Parameters and optimizer state
// live for the whole program (persistent, updated in place when donated); inputs live until their
// last reader; every other materialized value lives from the kernel that writes it to the last
// kernel that reads it (graph outputs to the end). The peak over the kernel sequence, plus the
// persistent bytes, is what must fit in a core's HBM.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "compiler/fusion.h"
#include "models/graph.h"

namespace tpusim::compiler {

// kGradient and kGatheredParameter are set by the FSDP planner (compiler/fsdp_memory.h): a
// reduce-scattered gradient slice or a unit's all-gathered parameters, live only around their use.
enum class BufferKind { kParameter, kOptimizerState, kInput, kTemporary, kOutput, kGradient, kGatheredParameter };
const char* buffer_kind_name(BufferKind k);

struct HbmBuffer {
  std::string name;  // the value's name (the parameter or the kernel root)
  int node = -1;     // its graph node (-1: none, e.g. a collective's buffer)
  uint64_t bytes = 0;
  BufferKind kind = BufferKind::kTemporary;
  int first_kernel = 0;  // live range over the program's kernels, inclusive
  int last_kernel = 0;
};

struct MemoryPlan {
  std::vector<HbmBuffer> buffers;
  uint64_t persistent_bytes = 0;  // parameters + optimizer state (+ non-donated outputs' aliases)
  uint64_t peak_bytes = 0;        // persistent + the largest simultaneous set of other buffers
  int peak_kernel = 0;            // kernel index where the peak occurs
  std::vector<size_t> live_at_peak;  // indices into `buffers`, largest first
};

// kind_of: role of each Parameter node (others are computed). donated: output node -> parameter
// node whose buffer it overwrites (optimizer updates), so it needs no buffer of its own.
MemoryPlan plan_memory(const models::Graph& g, const FusionPlan& plan,
                       const std::function<BufferKind(int)>& kind_of, const std::map<int, int>& donated = {});

}  // namespace tpusim::compiler
