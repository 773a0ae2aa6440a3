// IntMap and IntSet against std::unordered_map on random, sequential and extreme keys
// (INT64_MIN, which the table reserves internally, is an ordinary key to the caller).
#include "core/int_map.h"

#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <map>
#include <random>
#include <unordered_map>
#include <unordered_set>

namespace tierscope {
namespace {

TEST(IntMap, AgreesWithUnorderedMapOnRandomAndExtremeKeys) {
  std::mt19937_64 rng(7);
  IntMap<int64_t> m;
  std::unordered_map<int64_t, int64_t> want;
  for (int i = 0; i < 200000; ++i) {
    int64_t k;
    switch (i % 4) {
      case 0: k = static_cast<int64_t>(rng()); break;
      case 1: k = i / 4; break;  // sequential ids, as correlations are
      case 2: k = static_cast<int64_t>(rng() % 1000) - 500; break;
      default: k = (i % 8 == 3) ? INT64_MIN : INT64_MAX - static_cast<int64_t>(rng() % 3); break;
    }
    const int64_t v = static_cast<int64_t>(rng());
    const auto [slot, inserted] = m.emplace(k, v);
    const auto [it, inserted_too] = want.emplace(k, v);
    ASSERT_EQ(inserted, inserted_too) << k;
    ASSERT_EQ(slot->first, k);
    ASSERT_EQ(slot->second, it->second) << k;
    if (i % 16 == 0) m[k] += 1, want[k] += 1;
  }
  EXPECT_EQ(m.size(), want.size());
  for (const auto& [k, v] : want) {
    ASSERT_NE(m.find(k), m.end()) << k;
    EXPECT_EQ(m.at(k), v);
  }
  for (int64_t absent : {int64_t{-501}, int64_t{1} << 40, INT64_MAX - 5}) {
    if (want.count(absent) == 0) {
      EXPECT_EQ(m.find(absent), m.end());
      EXPECT_EQ(m.count(absent), 0u);
      EXPECT_THROW(m.at(absent), std::out_of_range);
    }
  }
  std::map<int64_t, int64_t> seen;
  m.ForEach([&](int64_t k, int64_t v) { seen[k] = v; });
  EXPECT_EQ(seen, (std::map<int64_t, int64_t>(want.begin(), want.end())));
}

TEST(IntMap, EmptyMapsFindNothingAndSetsCountOnce) {
  const IntMap<int> empty;
  EXPECT_EQ(empty.find(0), empty.end());
  EXPECT_EQ(empty.find(INT64_MIN), empty.end());
  EXPECT_TRUE(empty.empty());
  IntSet s(3);
  EXPECT_TRUE(s.insert(INT64_MIN));
  EXPECT_FALSE(s.insert(INT64_MIN));
  EXPECT_TRUE(s.insert(0));
  EXPECT_TRUE(s.contains(0));
  EXPECT_FALSE(s.contains(1));
  EXPECT_EQ(s.size(), 2u);
}

TEST(IntSet, MatchesAnUnorderedSetThroughRehashes) {
  // Its 8-byte slots are keys alone: every bit of every key must survive inserts and
  // rehashes (keys with every low byte, sequential runs, negatives, the extremes).
  IntSet s;  // no reserve: it rehashes as it grows
  std::unordered_set<int64_t> want;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 50000; ++i) {
    int64_t k = static_cast<int64_t>(rng());
    if (i % 3 == 0) k = i;                      // a sequential run
    if (i % 7 == 0) k = -static_cast<int64_t>(i) * 255;
    if (i == 11) k = INT64_MIN;
    if (i == 12) k = INT64_MAX;
    EXPECT_EQ(s.insert(k), want.insert(k).second) << k;
  }
  EXPECT_EQ(s.size(), want.size());
  for (int64_t k : want) EXPECT_TRUE(s.contains(k)) << k;
  for (int i = 0; i < 20000; ++i) {
    const int64_t k = static_cast<int64_t>(rng());
    EXPECT_EQ(s.contains(k), want.count(k) != 0) << k;
    EXPECT_EQ(s.count(k), want.count(k)) << k;
  }
}

}  // namespace
}  // namespace tierscope
