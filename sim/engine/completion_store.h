// The analytical engine's completion times: one per instruction of every core's stream, its largest
// state (a full v3 pod: 2048 cores x ~1.6e5 instructions, 2.7 GB as one 64-bit word each).
//
// Kept per core in chunks of kChunk consecutive instructions. A chunk that still has instructions
// to schedule is a private array of 64-bit words (completion | kDone; 0: not done yet). Once all of
// its instructions are done it never changes again, and it is frozen: a base cycle plus 32-bit
// offsets (when its span fits in 32 bits; else it stays as it is), and equal offset arrays are kept
// once for the whole run. SPMD replicas run the same stream in step, so a finished chunk of most
// cores equals, up to a shift in time, one that another core already froze: a pod holds a few
// distinct chunks, not one per core. Only instructions whose deps and successors are close are
// read after the chunk froze, through the same accessors: every value read back is the one that
// was written, so the sharing changes memory, never a result (completion_store_test).
#pragma once
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

namespace tpusim {

class CompletionStore {
 public:
  static constexpr uint32_t kShift = 10;
  static constexpr uint32_t kChunk = 1u << kShift;
  static constexpr uint64_t kDone = uint64_t(1) << 63;

  // One core's completion times (a view into the store that owns the memory).
  class Core {
   public:
    bool done(uint32_t i) const { return word(i) & kDone; }
    uint64_t completion(uint32_t i) const { return word(i) & ~kDone; }
    // Instruction i is done at `cycle` (< 2^63); each instruction once.
    void finish(uint32_t i, uint64_t cycle) {
      Chunk& c = chunks_[i >> kShift];
      if (c.words == zeros()) c.words = store_->take_words();
      c.words[i & kMask] = cycle | kDone;
      if (--c.left == 0) store_->freeze(c);
    }
    uint32_t size() const { return size_; }

   private:
    friend class CompletionStore;
    static constexpr uint32_t kMask = kChunk - 1;
    struct Chunk {
      uint64_t* words = nullptr;          // private words, zeros() before the first is written, or
      const uint32_t* offsets = nullptr;  // ... nullptr once frozen: base + offsets[j]
      uint64_t base = 0;                  // frozen: the chunk's earliest completion | kDone
      uint32_t left = 0;                  // instructions not done yet
      uint32_t len = 0;                   // instructions in the chunk (kChunk but for the last)
    };
    uint64_t word(uint32_t i) const {
      const Chunk& c = chunks_[i >> kShift];
      return c.words ? c.words[i & kMask] : c.base + c.offsets[i & kMask];
    }
    CompletionStore* store_ = nullptr;
    std::vector<Chunk> chunks_;
    uint32_t size_ = 0;
  };

  CompletionStore() = default;
  CompletionStore(const CompletionStore&) = delete;
  CompletionStore& operator=(const CompletionStore&) = delete;

  // Starts a run: `core` gets `instructions` completion times, none done. Keeps the memory of the
  // previous run for reuse.
  void begin_run();
  void reset(Core& core, uint32_t instructions);

  // What the run holds (for tests and benchmarks): private chunks now and at most, frozen chunks
  // and the distinct offset arrays behind them.
  struct Usage {
    uint64_t private_chunks = 0, peak_private_chunks = 0, frozen_chunks = 0, distinct_chunks = 0;
    uint64_t bytes() const { return (peak_private_chunks * 2 + distinct_chunks) * kChunk * 4; }
  };
  const Usage& usage() const { return usage_; }

 private:
  static uint64_t* zeros();
  uint64_t* take_words();
  void give_back(uint64_t* words);
  void freeze(Core::Chunk& c);

  std::vector<std::unique_ptr<uint64_t[]>> words_;  // every private array ever allocated
  std::vector<uint64_t*> free_words_;
  // Distinct frozen offset arrays of this run, by hash (a bucket may hold several).
  std::vector<std::unique_ptr<uint32_t[]>> distinct_;
  std::unordered_multimap<uint64_t, std::pair<const uint32_t*, uint32_t>> by_hash_;  // -> array, length
  std::vector<uint32_t> scratch_;
  Usage usage_;
};

}  // namespace tpusim
