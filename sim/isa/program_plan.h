// The decoded form of a Program that both engines execute: every instruction assigned to a unit
// queue, dependency lists (explicit + implicit) in both directions, barrier groups, and the
// structural checks of program.h (deps point backwards, MXU weight-buffer residency, cores exist).
//
// Decoding is shared so that the SystemC and analytical engines cannot disagree on semantics; only
// timing differs (contention). Buffers are reused across builds: the training driver runs
// thousands of programs on one engine.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sim/isa/program.h"
#include "sim/slice/slice_params.h"

namespace tpusim {

// Unit queues of a TensorCore (each is in-order). Layout: 0 = DMA (all engines share one issue
// queue), 1 = VPU, 2 = sync (barriers), then per MXU m: 3 + 2m = weight-load path,
// 4 + 2m = streaming path.
struct UnitIndex {
  static constexpr uint32_t kDma = 0;
  static constexpr uint32_t kVpu = 1;
  static constexpr uint32_t kSync = 2;
  static constexpr uint32_t mxu_weights(uint32_t m) { return 3 + 2 * m; }
  static constexpr uint32_t mxu_stream(uint32_t m) { return 4 + 2 * m; }
  static constexpr uint32_t count(uint32_t mxus) { return 3 + 2 * mxus; }
};

inline constexpr uint32_t kNoIndex = UINT32_MAX;

// Compressed sparse rows: row r is items[begin[r] .. begin[r+1]).
struct Csr {
  std::vector<uint32_t> begin;
  std::vector<uint32_t> items;
  uint32_t size(uint32_t r) const { return begin[r + 1] - begin[r]; }
  const uint32_t* row(uint32_t r) const { return items.data() + begin[r]; }
};

struct CorePlan {
  const isa::CoreProgram* prog = nullptr;
  uint32_t chip = 0;
  uint32_t core = 0;
  std::string name;                     // "slice.chip0.core1"
  std::vector<uint32_t> unit;           // per instruction: its unit queue (UnitIndex)
  Csr deps;                             // per instruction: effective deps (explicit + implicit weight dep)
  Csr succs;                            // reverse of `deps`: who waits for instruction i
  Csr queues;                           // per unit: its instructions in stream order
  std::vector<uint32_t> barrier_group;  // per instruction: barrier group (kNoIndex if not a barrier)
};

class ProgramPlan {
 public:
  // Decodes and checks `program` for `hw`. Throws SimError ("invalid program: ...") when the
  // program breaks the contract of program.h or does not fit the hardware's structure.
  void build(const isa::Program& program, const HwConfig& hw);

  const std::vector<CorePlan>& cores() const { return cores_; }
  // Barrier group g completes when `barrier_participants()[g]` cores reached it.
  const std::vector<uint32_t>& barrier_participants() const { return barrier_participants_; }
  size_t instructions() const { return instructions_; }

 private:
  void build_core(CorePlan& cp, const isa::CoreProgram& prog, const HwConfig& hw);
  void check_weight_buffers(const CorePlan& cp, const HwConfig& hw);
  bool happens_before(const CorePlan& cp, uint32_t user, uint32_t load, uint32_t mxu);

  std::vector<CorePlan> cores_;
  std::vector<uint32_t> barrier_participants_;
  size_t instructions_ = 0;
  // Scratch reused across builds.
  std::vector<uint32_t> tile_of_, last_user_, stamp_, stack_, tmp_;
  uint32_t epoch_ = 0;
};

}  // namespace tpusim
