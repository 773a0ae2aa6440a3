// Size classes and the block cache shared by the backends (backend/memory.h).
#include "backend/memory.h"

#include <gtest/gtest.h>

#include <set>
#include <utility>

namespace tierscope {
namespace {

TEST(SizeClassTest, ClassesHoldTheBytesInWholeUnitsWithAtMostAQuarterMore) {
  for (size_t align : {size_t{64}, size_t{2} << 20}) {
    size_t previous = 0;
    for (size_t bytes = 1; bytes < (size_t{64} << 20); bytes = bytes * 9 / 8 + 1) {
      const size_t c = SizeClass(bytes, align);
      ASSERT_GE(c, bytes) << bytes;
      ASSERT_EQ(c % align, 0u) << bytes;
      ASSERT_LE(c, bytes + bytes / 4 + align) << bytes;
      ASSERT_GE(c, previous) << bytes;  // a larger request never gets a smaller class
      previous = c;
    }
  }
  EXPECT_EQ(SizeClass(0, 64), 64u);
  EXPECT_EQ(SizeClass(1000, 64), 1024u);  // below 64 KiB: whole lines only
  EXPECT_EQ(SizeClass((size_t{5} << 20) + 1, 64), size_t{6} << 20);
  EXPECT_EQ(SizeClass((size_t{6} << 20) + 1, size_t{2} << 20), size_t{8} << 20);
}

TEST(SizeClassTest, VaryingSizesShareAFewClassesWhereExactSizesWouldEachBeOne) {
  // A server's buffers for 2,048 to 4,096 tokens: of 64 FP32 values a token (512 KiB to
  // 1 MiB, whole lines) and of 4,096 (32 to 64 MiB, whole huge pages). Rounding to the
  // unit alone would leave hundreds of sizes, each needing fresh memory.
  for (const auto& [per_token, align] : {std::pair{size_t{64 * 4}, size_t{64}},
                                         std::pair{size_t{4096 * 4}, size_t{2} << 20}}) {
    std::set<size_t> units, classes;
    for (size_t tokens = 2048; tokens <= 4096; ++tokens) {
      units.insert(AlignUp(tokens * per_token, align));
      classes.insert(SizeClass(tokens * per_token, align));
    }
    EXPECT_GE(units.size(), 16u) << per_token;
    EXPECT_LE(classes.size(), 5u) << per_token;
  }
}

TEST(BlockCacheTest, HandsOutAKeptBlockOfTheSameClassAndKeepsWithinItsBound) {
  BlockCache cache(1000);
  int a = 0, b = 0;
  EXPECT_EQ(cache.Take(512), nullptr);
  EXPECT_TRUE(cache.Put(&a, 512));
  EXPECT_FALSE(cache.Put(&b, 600));  // 1,112 bytes would pass the bound
  EXPECT_EQ(cache.cached_bytes(), 512u);
  EXPECT_EQ(cache.Take(256), nullptr);
  EXPECT_EQ(cache.Take(512), &a);
  EXPECT_EQ(cache.cached_bytes(), 0u);
}

}  // namespace
}  // namespace tierscope
