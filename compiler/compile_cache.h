// The compilation cache, keyed like XLA's / PyTorch/XLA's: graph structure, op attributes, every
// input's shape, dtype and layout, parameter order and donated buffers — never tensor values.
// Bounded (LRU, like torch_xla's XLA_COMPILATION_CACHE_SIZE) with an optional persistent
// directory (like XLA_PERSISTENT_CACHE_PATH) that survives runs.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string_view>
#include <list>
#include <string>
#include <unordered_map>
#include <vector>

#include "models/graph.h"

namespace tpusim::compiler {

struct CacheKey {
  uint64_t hi = 0, lo = 0;
  bool operator==(const CacheKey& o) const { return hi == o.hi && lo == o.lo; }
  std::string hex() const;
};

struct CacheKeyHash {
  size_t operator()(const CacheKey& k) const { return size_t(k.hi ^ (k.lo * 0x9e3779b97f4a7c15ull)); }
};

// The same 128-bit hash of a sequence of texts (each length-prefixed, so that the split counts).
CacheKey text_cache_key(std::initializer_list<std::string_view> parts);

// `donated`: parameter node ids whose buffers the program may overwrite (in-place updates).
CacheKey graph_cache_key(const models::Graph& g, const std::vector<int>& donated = {});

enum class CacheResult {
  kHit,             // found in this process's cache: no compilation (torch_xla CachedCompile)
  kPersistentHit,   // found on disk from an earlier run: loaded, not compiled
  kMiss,            // compiled now (torch_xla UncachedCompile)
};

class CompileCache {
 public:
  // capacity: entries kept in memory (LRU); persistent_dir: "" for none. Throws ConfigError if
  // the directory cannot be created.
  explicit CompileCache(size_t capacity, std::string persistent_dir = "");

  // Looks the key up; on a miss or a persistent hit the entry is inserted (and, for a miss,
  // written to the persistent directory unless `defer_write`: then the caller calls store() when
  // the compilation is over, so that processes compiling the same graph at the same time all
  // miss, as they do). Updates the LRU order and the counters.
  CacheResult lookup_or_insert(const CacheKey& key, bool defer_write = false);
  // Writes a compiled key to the persistent directory (no-op without one).
  void store(const CacheKey& key) const { write_disk(key); }

  uint64_t hits() const { return hits_; }
  uint64_t persistent_hits() const { return persistent_hits_; }
  uint64_t misses() const { return misses_; }
  uint64_t evictions() const { return evictions_; }
  size_t size() const { return lru_.size(); }
  size_t capacity() const { return capacity_; }

 private:
  bool on_disk(const CacheKey& key) const;
  void write_disk(const CacheKey& key) const;

  size_t capacity_;
  std::string dir_;
  std::list<CacheKey> lru_;  // front = most recent
  std::unordered_map<CacheKey, std::list<CacheKey>::iterator, CacheKeyHash> index_;
  uint64_t hits_ = 0, persistent_hits_ = 0, misses_ = 0, evictions_ = 0;
};

}  // namespace tpusim::compiler
