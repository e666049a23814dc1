#include "compiler/compile_cache.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "base/config_error.h"

namespace tpusim::compiler {

namespace {

// Two independent 64-bit FNV-1a streams: a 128-bit structural hash (collisions would silently
// merge distinct programs, so 64 bits alone are not enough for long sweeps).
struct Hasher {
  uint64_t a = 0xcbf29ce484222325ull, b = 0x84222325cbf29ce4ull;
  void bytes(const void* p, size_t n) {
    const auto* c = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) {
      a = (a ^ c[i]) * 0x100000001b3ull;
      b = (b ^ c[i]) * 0x100000001b3ull + 0x9e37ull;
    }
  }
  template <class T>
  void pod(const T& v) {
    bytes(&v, sizeof(v));
  }
  template <class T>
  void vec(const std::vector<T>& v) {
    pod(uint64_t(v.size()));
    for (const auto& x : v) pod(x);
  }
  void str(const std::string& s) {
    pod(uint64_t(s.size()));
    bytes(s.data(), s.size());
  }
};

}  // namespace

CacheKey text_cache_key(std::initializer_list<std::string_view> parts) {
  Hasher h;
  for (std::string_view s : parts) {
    h.pod(uint64_t(s.size()));
    h.bytes(s.data(), s.size());
  }
  return {h.a, h.b};
}

std::string CacheKey::hex() const {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", (unsigned long long)hi, (unsigned long long)lo);
  return buf;
}

CacheKey graph_cache_key(const models::Graph& g, const std::vector<int>& donated) {
  Hasher h;
  // Node ids give parameter order and operand wiring; names are not part of the key (XLA keys on
  // HLO structure, not on user-facing names).
  for (const auto& n : g.nodes()) {
    h.pod(uint8_t(n.kind));
    h.vec(n.shape);
    h.pod(uint8_t(n.dtype));
    h.vec(n.inputs);
    if (n.group >= 0) h.pod(n.group);  // an already-fused graph's kernels (absent otherwise: keys unchanged)
    // Not n.sharding: the builders' annotations follow from the graph's structure (data parallel: the
    // gradients the update reads; FSDP: its units, in FsdpStep::wrap_key), so keys stay those of
    // the programs before annotations existed. A builder whose shardings are a free choice (a
    // mesh) keys them itself, as the replica count is.
    switch (n.kind) {
      case models::OpKind::kElementwise: h.pod(uint8_t(n.ew)); break;
      case models::OpKind::kReduce:
        h.pod(uint8_t(n.reduce));
        h.pod(n.reduce_dim);
        break;
      case models::OpKind::kDot:
        h.vec(n.dot.lhs_batch);
        h.vec(n.dot.rhs_batch);
        h.vec(n.dot.lhs_contract);
        h.vec(n.dot.rhs_contract);
        h.str(models::dot_precision_name(n.precision));
        break;
      case models::OpKind::kBroadcast: h.vec(n.broadcast_dims); break;
      case models::OpKind::kTranspose: h.vec(n.permutation); break;
      case models::OpKind::kSlice:
        h.pod(n.axis);
        h.pod(n.start);
        break;
      case models::OpKind::kConcatenate: h.pod(n.axis); break;
      case models::OpKind::kConstant: h.pod(n.constant); break;  // literals are part of HLO
      case models::OpKind::kAttention: {
        const models::AttentionAttrs& a = n.attention;
        h.pod(a.call);
        h.pod(uint8_t(a.part));
        h.pod(uint8_t(a.causal));
        h.pod(a.window);
        h.pod(a.block_q);
        h.pod(a.block_kv);
        h.pod(a.scale);
        h.pod(a.q_offset);
        break;
      }
      case models::OpKind::kCollective: {
        const models::CollectiveAttrs& c = n.collective;
        h.pod(uint8_t(c.op));
        h.pod(uint8_t(c.reduce));
        h.pod(c.replicas);
        h.pod(c.dim);
        h.pod(uint8_t(c.async));
        if (c.combine >= 0) h.pod(c.combine);
        if (c.flat) h.pod(uint8_t(0xF1));
        if (c.slices > 1) h.pod(c.slices);  // absent on one slice: keys unchanged
        h.pod(uint64_t(c.groups.size()));
        for (const auto& grp : c.groups) h.vec(grp);
        h.pod(uint64_t(c.pairs.size()));
        for (const auto& [s, t] : c.pairs) {
          h.pod(s);
          h.pod(t);
        }
        break;
      }
      default: break;
    }
  }
  h.vec(g.outputs());
  h.vec(donated);
  if (g.scheduled()) h.pod(uint8_t(1));  // the node order is the kernels' (absent otherwise: keys unchanged)
  return {h.a, h.b};
}

CompileCache::CompileCache(size_t capacity, std::string persistent_dir)
    : capacity_(capacity == 0 ? 1 : capacity), dir_(std::move(persistent_dir)) {
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    if (ec || !std::filesystem::is_directory(dir_))
      throw ConfigError({"", "persistent_cache_dir", 0, dir_, "cannot be created as a directory: " + ec.message(),
                         "choose a writable path"});
  }
}

bool CompileCache::on_disk(const CacheKey& key) const {
  return !dir_.empty() && std::filesystem::exists(std::filesystem::path(dir_) / (key.hex() + ".xla"));
}

void CompileCache::write_disk(const CacheKey& key) const {
  if (dir_.empty()) return;
  std::ofstream(std::filesystem::path(dir_) / (key.hex() + ".xla")) << "tpusim compiled program " << key.hex() << "\n";
}

CacheResult CompileCache::lookup_or_insert(const CacheKey& key, bool defer_write) {
  auto it = index_.find(key);
  if (it != index_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second);
    ++hits_;
    return CacheResult::kHit;
  }
  CacheResult r;
  if (on_disk(key)) {
    ++persistent_hits_;
    r = CacheResult::kPersistentHit;
  } else {
    ++misses_;
    if (!defer_write) write_disk(key);
    r = CacheResult::kMiss;
  }
  lru_.push_front(key);
  index_[key] = lru_.begin();
  if (lru_.size() > capacity_) {
    index_.erase(lru_.back());
    lru_.pop_back();
    ++evictions_;
  }
  return r;
}

}  // namespace tpusim::compiler
