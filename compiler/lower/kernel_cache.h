// Kernels lowered once, so that compile time grows with the distinct kernels, not with layers. A
// decoder-only LLM's step runs the same layer 32 to 80 times, forward, recomputed and backward: the
// same fusions, over the same shapes, each lowered into the same tile loops. A core's ProgramBuilder
// keeps what each lowered kernel added to its program, under a key holding everything lowering
// reads (compiler/lower/kernel_key.h); a later kernel with an equal key is that record replayed:
// its instructions copied with their stream indices moved, its labels and VMEM buffer names
// renamed for its own fusion and nodes.
//
// Exactness: the key holds the distances of the kernel's entry deps (the previous kernel's sinks,
// awaited collectives) from the kernel's first instruction, so the record's deps and the replay's
// differ by one shift, and rerolling (compiler/lower/reroll.h), which compares deps by distance,
// rolls both up alike: a replay is what lowering the kernel would have written, instruction for
// instruction (tests/compiler/kernel_cache_test.cc compiles steps both ways).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/isa/program.h"

namespace tpusim::compiler {

// Everything lowering a fusion reads, as words (compiler/lower/kernel_key.h builds it).
struct KernelKey {
  std::vector<uint64_t> words;
  bool operator==(const KernelKey&) const = default;
};
struct KernelKeyHash {
  size_t operator()(const KernelKey& k) const {
    uint64_t h = 0xcbf29ce484222325ull;
    for (uint64_t w : k.words) h = (h ^ w) * 0x100000001b3ull;
    return size_t(h ^ (h >> 29));
  }
};

// What lowering one kernel added to its core program and builder, relative to where it began.
struct KernelRecord {
  uint32_t first = 0;          // the stream index of its first instruction
  uint32_t stream_len = 0;     // its stream instructions (its repeats expanded)
  uint32_t stored_first = 0;   // CoreProgram::instrs index of its first stored instruction
  std::vector<isa::Instr> instrs;    // its stored instructions, deps as recorded
  std::vector<isa::Repeat> repeats;  // `first` as recorded
  std::vector<isa::VmemAlloc> allocs;
  std::vector<std::string> alloc_suffixes;  // each buffer's name after "<kernel>."
  bool in_table = false;       // it has an entry in the kernel table (it has instructions)
  isa::KernelRange range;
  isa::Deps sinks;             // the next kernel's entry deps
  uint64_t vmem_top = 0;       // VMEM the kernel allocated
  // Its labels, "<kernel>:<prefix><what>": `what` is the name of the key's node `node`, or the
  // text `what` when node < 0. instr_label[k]: the label of instrs[k] (-1: the kernel's own name).
  struct LabelUse {
    std::string prefix, what;
    int node = -1;
  };
  std::vector<LabelUse> labels;
  std::vector<int32_t> instr_label;
  uint64_t flops = 0, hbm_bytes = 0, cmem_bytes = 0;  // its share of LowerContext's counts
};

// A core's records, by key.
class KernelCache {
 public:
  // The record of `key` (counted as replayed), or null.
  const KernelRecord* find(const KernelKey& key) {
    auto it = records_.find(key);
    if (it == records_.end()) return nullptr;
    ++replays_;
    return it->second.get();
  }
  void add(KernelKey key, KernelRecord record) {
    records_.try_emplace(std::move(key), std::make_unique<KernelRecord>(std::move(record)));
  }
  size_t size() const { return records_.size(); }  // kernels lowered and recorded
  size_t replays() const { return replays_; }      // kernels replayed

 private:
  std::unordered_map<KernelKey, std::unique_ptr<KernelRecord>, KernelKeyHash> records_;
  size_t replays_ = 0;
};

}  // namespace tpusim::compiler
