#include "sim/engine/completion_store.h"

#include <algorithm>
#include <cstring>

namespace tpusim {

uint64_t* CompletionStore::zeros() {
  static const uint64_t kZeros[kChunk] = {};
  return const_cast<uint64_t*>(kZeros);  // read only: Core::finish() replaces it before writing
}

void CompletionStore::begin_run() {
  free_words_.clear();
  for (auto& w : words_) free_words_.push_back(w.get());
  distinct_.clear();
  by_hash_.clear();
  usage_ = Usage{};
}

void CompletionStore::reset(Core& core, uint32_t instructions) {
  core.store_ = this;
  core.size_ = instructions;
  core.chunks_.assign((size_t(instructions) + kChunk - 1) >> kShift, Core::Chunk{});
  for (size_t k = 0; k < core.chunks_.size(); ++k) {
    Core::Chunk& c = core.chunks_[k];
    c.words = zeros();
    c.len = c.left = std::min<uint32_t>(kChunk, instructions - uint32_t(k << kShift));
  }
}

uint64_t* CompletionStore::take_words() {
  if (free_words_.empty()) {
    words_.push_back(std::make_unique<uint64_t[]>(kChunk));
    free_words_.push_back(words_.back().get());
  }
  uint64_t* w = free_words_.back();
  free_words_.pop_back();
  std::memset(w, 0, sizeof(uint64_t) * kChunk);
  usage_.peak_private_chunks = std::max(usage_.peak_private_chunks, ++usage_.private_chunks);
  return w;
}

void CompletionStore::give_back(uint64_t* words) {
  free_words_.push_back(words);
  --usage_.private_chunks;
}

// Every instruction of `c` is done: keep it as base + 32-bit offsets, the offsets shared with an
// equal chunk frozen before. A chunk spanning 2^32 cycles or more keeps its words.
void CompletionStore::freeze(Core::Chunk& c) {
  uint64_t lo = UINT64_MAX, hi = 0;
  for (uint32_t j = 0; j < c.len; ++j) {
    const uint64_t t = c.words[j] & ~kDone;
    lo = std::min(lo, t);
    hi = std::max(hi, t);
  }
  if (hi - lo > UINT32_MAX) return;
  scratch_.resize(c.len);
  for (uint32_t j = 0; j < c.len; ++j) scratch_[j] = uint32_t((c.words[j] & ~kDone) - lo);
  // Four independent multiply chains (one would be bound by the multiplier's latency); equal
  // hashes are compared in full below.
  uint64_t lane[4] = {0x9e3779b97f4a7c15ull ^ c.len, 1, 2, 3};
  for (uint32_t j = 0; j < c.len; ++j) lane[j & 3] = (lane[j & 3] ^ scratch_[j]) * 0x100000001b3ull;
  uint64_t h = 0;
  for (uint64_t x : lane) h = (h ^ x ^ (x >> 29)) * 0xff51afd7ed558ccdull;
  const uint32_t* shared = nullptr;
  auto [first, last] = by_hash_.equal_range(h);
  for (auto it = first; it != last && !shared; ++it) {
    const auto [offsets, len] = it->second;
    if (len == c.len && std::memcmp(offsets, scratch_.data(), sizeof(uint32_t) * len) == 0) shared = offsets;
  }
  if (!shared) {
    distinct_.push_back(std::make_unique<uint32_t[]>(c.len));
    std::memcpy(distinct_.back().get(), scratch_.data(), sizeof(uint32_t) * c.len);
    shared = distinct_.back().get();
    by_hash_.emplace(h, std::make_pair(shared, c.len));
    ++usage_.distinct_chunks;
  }
  give_back(c.words);
  c.words = nullptr;
  c.offsets = shared;
  c.base = lo | kDone;
  ++usage_.frozen_chunks;
}

}  // namespace tpusim
