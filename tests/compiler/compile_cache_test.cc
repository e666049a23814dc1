// The compile cache keys like XLA: structure, attributes, shapes, dtypes, parameter order and
// donation change the key; names and repeated builds do not.
#include <gtest/gtest.h>

#include <filesystem>

#include "base/config_error.h"
#include "compiler/compile_cache.h"
#include "models/kernels.h"

namespace tpusim::compiler {
namespace {

models::Graph mm(uint64_t m, models::DType t = models::DType::kF32, const std::string& prec = "default") {
  return models::build_kernel({"matmul", {{"m", m}, {"k", 64}, {"n", 32}}, t, models::parse_dot_precision(prec).value()});
}

TEST(CompileCacheKey, SameGraphSameKey) { EXPECT_EQ(graph_cache_key(mm(128)), graph_cache_key(mm(128))); }

TEST(CompileCacheKey, ShapeDtypeAttributeAndDonationChangeTheKey) {
  const auto k = graph_cache_key(mm(128));
  EXPECT_FALSE(k == graph_cache_key(mm(256)));                            // new batch size / padded length
  EXPECT_FALSE(k == graph_cache_key(mm(128, models::DType::kBF16)));     // dtype (XLA_USE_BF16)
  EXPECT_FALSE(k == graph_cache_key(mm(128, models::DType::kF32, "high")));  // op attribute
  EXPECT_FALSE(k == graph_cache_key(mm(128), {0}));                       // donated buffers
}

TEST(CompileCacheKey, NamesAreNotPartOfTheKey) {
  models::Graph a, b;
  int x = a.parameter("x", {8, 8}, models::DType::kF32);
  a.mark_output(a.ew(models::EwOp::kRelu, x, -1, "relu"));
  int y = b.parameter("input_ids_renamed", {8, 8}, models::DType::kF32);
  b.mark_output(b.ew(models::EwOp::kRelu, y, -1, "activation"));
  EXPECT_EQ(graph_cache_key(a), graph_cache_key(b));
}

TEST(CompileCache, LruHitsMissesAndEviction) {
  CompileCache c(2);
  auto k1 = graph_cache_key(mm(8)), k2 = graph_cache_key(mm(16)), k3 = graph_cache_key(mm(24));
  EXPECT_EQ(c.lookup_or_insert(k1), CacheResult::kMiss);
  EXPECT_EQ(c.lookup_or_insert(k2), CacheResult::kMiss);
  EXPECT_EQ(c.lookup_or_insert(k1), CacheResult::kHit);   // k1 now most recent
  EXPECT_EQ(c.lookup_or_insert(k3), CacheResult::kMiss);  // evicts k2
  EXPECT_EQ(c.evictions(), 1u);
  EXPECT_EQ(c.lookup_or_insert(k1), CacheResult::kHit);
  EXPECT_EQ(c.lookup_or_insert(k2), CacheResult::kMiss);  // recompiled after eviction
  EXPECT_EQ(c.hits(), 2u);
  EXPECT_EQ(c.misses(), 4u);
}

TEST(CompileCache, PersistentDirectorySurvivesRuns) {
  auto dir = std::filesystem::temp_directory_path() / ("tpusim_cache_test_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  auto k = graph_cache_key(mm(128));
  {
    CompileCache first(16, dir.string());
    EXPECT_EQ(first.lookup_or_insert(k), CacheResult::kMiss);
  }
  CompileCache second(16, dir.string());  // a new process
  EXPECT_EQ(second.lookup_or_insert(k), CacheResult::kPersistentHit);
  EXPECT_EQ(second.lookup_or_insert(k), CacheResult::kHit);
  EXPECT_EQ(second.misses(), 0u);
  std::filesystem::remove_all(dir);
}

TEST(CompileCache, UnwritableDirectoryIsAConfigError) {
  EXPECT_THROW(CompileCache(4, "/proc/definitely/not/writable"), ConfigError);
}

}  // namespace
}  // namespace tpusim::compiler
