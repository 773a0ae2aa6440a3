// Size classes and the block cache shared by the backends (backend/memory.h).
#include "backend/memory.h"

#include <gtest/gtest.h>

#include <set>

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

TEST(SizeClassTest, VaryingBatchesShareAFewClasses) {
  // A server's activations, from 2,048 to 4,096 tokens of 512 FP32 values: hundreds of
  // exact sizes, a few classes, each a cached block can serve again.
  std::set<size_t> exact, classes;
  for (size_t tokens = 2048; tokens <= 4096; ++tokens) {
    exact.insert(AlignUp(tokens * 512 * 4, 64));
    classes.insert(SizeClass(tokens * 512 * 4, size_t{2} << 20));
  }
  EXPECT_EQ(exact.size(), 2049u);
  EXPECT_LE(classes.size(), 4u);
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
