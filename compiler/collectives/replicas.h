// SPMD replica streams. Every core of a data-parallel (or FSDP) step runs the same program; the
// streams differ only inside collective sections, where each core talks to its own peers. The
// compiler therefore lowers the step once, on core 0's builder (`main()`), and emits each
// collective through one builder per core (`begin_section()`): the other cores record only their
// sections, at the stream indices core 0's section occupies. `finish()` then gives every core
// its stream: core 0's with its own sections spliced in.
//
// Every collective emitter emits the same instruction count per core (compiler/collectives/collectives.h), so
// stream indices, and therefore dependencies on earlier instructions, are the same on every core:
// a section's first instructions may depend on core 0's indices (e.g. `main().entry_deps()`).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "compiler/collectives/collectives.h"
#include "compiler/lower/program_builder.h"
#include "sim/isa/program.h"

namespace tpusim::compiler {

// Whether ReplicaStreams made from now on mirror kernels (set_mirroring): on, except where tests
// compile both ways to compare.
inline bool& mirror_replicas_default() {
  static bool on = true;
  return on;
}

class ReplicaStreams {
 public:
  // Sets up `prog.cores` for `cores` (core 0 = cores[0]). `vmem_bytes`: VMEM capacity per core.
  ReplicaStreams(isa::Program& prog, const std::vector<CoreId>& cores, uint64_t vmem_bytes);
  ~ReplicaStreams();

  ProgramBuilder& main() { return *main_; }
  isa::Program& program() { return prog_; }
  // One builder per core ([0] = &main()) for a collective section starting at main()'s current
  // stream index. Sections do not nest; call end_section() when the collective is emitted.
  std::vector<ProgramBuilder*> begin_section();
  void end_section();
  // Assembles every core's stream: a replica whose sections differ from core 0's only in the
  // peers shares core 0's stream (isa::CoreProgram::stream_of, peers); others get a copy.
  // Throws std::logic_error when a core's section length differs from core 0's (the streams
  // would not line up).
  void finish();
  // Off: every replica gets a copy of its own (for tests and tools that read streams per core).
  void set_sharing(bool on) { share_ = on; }
  // Off: replicas emit every kernel of their sections, even where the emitter can tell it is core
  // 0's but for the peers (ProgramBuilder::mirror_kernel); for tests comparing both.
  void set_mirroring(bool on) { mirror_ = on; }

 private:
  struct Section {
    size_t from = 0, len = 0;              // stored instructions (core 0's; a section has no repeats)
    size_t start = 0;                      // the stream index of its first instruction
    size_t alloc_from = 0, alloc_len = 0;  // VMEM allocations
  };
  isa::Program& prog_;
  uint64_t vmem_bytes_;
  std::unique_ptr<ProgramBuilder> main_;
  std::vector<Section> sections_;
  std::vector<std::vector<isa::CoreProgram>> recorded_;  // [core][section], core 0 unused
  std::vector<std::unique_ptr<ProgramBuilder>> open_;    // builders of the open section
  bool in_section_ = false;
  bool share_ = true;
  bool mirror_ = mirror_replicas_default();

  // Replica c's recording is checked against core 0's kernel by kernel and dropped when it differs
  // only in peers (only its peers are kept): a 2048-core collective then never holds 2048 copies
  // of its section. A replica that cannot be checked that way (core 0 has not emitted the kernel
  // yet, or it differs) keeps recording; finish() rebuilds what was dropped.
  struct Dropped {
    size_t instrs = 0, allocs = 0;      // dropped from the front of the section's recording
    isa::PeerTable peers;               // the dropped transfers' peers
  };
  std::vector<std::vector<Dropped>> dropped_;  // [core][section]
  std::vector<uint8_t> keep_;                  // [core]: stopped dropping
  void check_and_drop(size_t c, size_t k, ProgramBuilder& b);
  uint32_t mirror(size_t c, size_t k, ProgramBuilder& b, std::vector<isa::PeerRef>& peers);
  // The transfers of core 0's kernel starting at stream index mirrored_at_ (counted once).
  uint32_t mirrored_at_ = UINT32_MAX;
  size_t mirrored_transfers_ = 0;
  void restore_dropped(size_t c);

  bool can_share(size_t c, isa::PeerTable& peers) const;
};

inline constexpr uint32_t kNoInstr = UINT32_MAX;

// One collective over `cores` in a section of its own, after core 0's current kernel: every
// replica waits for the same instructions (main()'s entry deps, the same stream indices on every
// replica). In the background (opt.background) it also waits for `previous` (the last background
// collective, kNoInstr: none: they run one after another), and the next kernel waits for the
// kernel before it, not for the collective.
CollectiveResult emit_collective_after_kernel(ReplicaStreams& streams, const std::vector<CoreId>& cores,
                                              const HwConfig& hw, CollectiveKind kind, uint64_t bytes,
                                              const CollectiveOptions& opt, uint32_t previous = kNoInstr);

}  // namespace tpusim::compiler
