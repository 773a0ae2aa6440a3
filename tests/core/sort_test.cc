// SortUnlessSorted against std::stable_sort: sorted input, a few ascending runs (merged),
// many runs (std::sort), ties kept in order when runs are merged, custom orders, empty.
#include "core/sort.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

namespace tierscope {
namespace {

// `runs` ascending runs of random keys in [0, keys), each element tagged by its position.
std::vector<std::pair<int, int>> Runs(size_t n, size_t runs, int keys, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::pair<int, int>> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = {static_cast<int>(rng() % static_cast<uint32_t>(keys)), static_cast<int>(i)};
  const size_t per = (n + runs - 1) / runs;
  for (size_t b = 0; b < n; b += per) {
    std::stable_sort(v.begin() + static_cast<std::ptrdiff_t>(b), v.begin() + static_cast<std::ptrdiff_t>(std::min(n, b + per)),
                     [](const auto& a, const auto& c) { return a.first < c.first; });
  }
  return v;
}

TEST(SortUnlessSorted, FewRunsAreMergedStablyAsStableSortWould) {
  const auto by_key = [](const std::pair<int, int>& a, const std::pair<int, int>& b) { return a.first < b.first; };
  for (size_t runs : {1, 2, 3, 7, 8, 33, 64}) {
    for (uint32_t seed : {1u, 2u, 3u}) {
      std::vector<std::pair<int, int>> v = Runs(5000, runs, 50, seed), want = v;
      std::stable_sort(want.begin(), want.end(), by_key);
      SortUnlessSorted(v.begin(), v.end(), by_key);
      EXPECT_EQ(v, want) << runs << " runs, seed " << seed;
    }
  }
}

TEST(SortUnlessSorted, ManyRunsAreSortedByKey) {
  const auto by_key = [](const std::pair<int, int>& a, const std::pair<int, int>& b) { return a.first < b.first; };
  for (size_t runs : {65, 500, 5000}) {
    std::vector<std::pair<int, int>> v = Runs(5000, runs, 1000, 9), want = v;
    SortUnlessSorted(v.begin(), v.end(), by_key);
    EXPECT_TRUE(std::is_sorted(v.begin(), v.end(), by_key));
    std::sort(v.begin(), v.end());
    std::sort(want.begin(), want.end());
    EXPECT_EQ(v, want) << "the same elements, " << runs << " runs";
  }
}

TEST(SortUnlessSorted, EmptyOneAndSortedInputsAndOtherOrders) {
  std::vector<int> none, one{4}, sorted{1, 2, 2, 3};
  SortUnlessSorted(none.begin(), none.end());
  SortUnlessSorted(one.begin(), one.end());
  SortUnlessSorted(sorted.begin(), sorted.end());
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(one, std::vector<int>{4});
  EXPECT_EQ(sorted, (std::vector<int>{1, 2, 2, 3}));
  std::vector<int> down{1, 5, 4, 9, 0, 3};
  SortUnlessSorted(down.begin(), down.end(), std::greater<>());
  EXPECT_EQ(down, (std::vector<int>{9, 5, 4, 3, 1, 0}));
}

}  // namespace
}  // namespace tierscope
