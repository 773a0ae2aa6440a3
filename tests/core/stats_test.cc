// The one definition of percentiles, medians and summaries, pinned on known data: linear
// interpolation between ranks, as numpy's default and torch.quantile compute them.
#include "core/stats.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace tierscope {
namespace {

TEST(Stats, PercentilesInterpolateLinearlyBetweenRanks) {
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  EXPECT_DOUBLE_EQ(Percentile(v, 0), 1);
  EXPECT_DOUBLE_EQ(Percentile(v, 50), 50.5);    // numpy.percentile(range(1, 101), 50)
  EXPECT_DOUBLE_EQ(Percentile(v, 95), 95.05);   // ... 95
  EXPECT_DOUBLE_EQ(Percentile(v, 99), 99.01);   // ... 99
  EXPECT_DOUBLE_EQ(Percentile(v, 100), 100);
  const std::vector<double> five = {10, 20, 30, 40, 50};
  EXPECT_DOUBLE_EQ(Percentile(five, 50), 30);
  EXPECT_DOUBLE_EQ(Percentile(five, 90), 46);
  EXPECT_DOUBLE_EQ(Percentile({7}, 99), 7);
  EXPECT_TRUE(std::isnan(Percentile({}, 50)));
  // Out-of-range ranks clamp; a NaN rank has no answer (and is never cast to an index).
  EXPECT_DOUBLE_EQ(Percentile(five, -5), 10);
  EXPECT_DOUBLE_EQ(Percentile(five, 250), 50);
  EXPECT_TRUE(std::isnan(Percentile(five, std::nan(""))));
}

TEST(Stats, MedianAndSummaryAgreeWithThePercentile) {
  EXPECT_DOUBLE_EQ(Median({4, 1, 3, 2}), 2.5);  // the even case averages the middle two
  const Summary s = Summarize({5, 1, 4, 2, 3});
  EXPECT_EQ(s.count, 5);
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.mean, 3);
  EXPECT_DOUBLE_EQ(s.total, 15);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 5);
  EXPECT_DOUBLE_EQ(s.stddev, std::sqrt(2.5));  // sample (n - 1)
  EXPECT_DOUBLE_EQ(s.cv(), std::sqrt(2.5) / 3);
  EXPECT_EQ(Summarize({}).count, 0);
}

// The median is found by selection, not by sorting: it must still be the sorted
// percentile's, for odd and even counts, ties and negative values.
TEST(Stats, MedianBySelectionIsTheSortedPercentile) {
  std::mt19937 rng(11);
  for (size_t n : {1, 2, 3, 10, 11, 1000, 1001}) {
    std::vector<double> v(n);
    for (double& x : v) x = static_cast<double>(static_cast<int>(rng() % 41) - 20);
    std::vector<double> sorted = v;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(Median(v), Percentile(sorted, 50)) << n;
    EXPECT_EQ(Summarize(v).median, Percentile(sorted, 50)) << n;
  }
  EXPECT_TRUE(std::isnan(Median({})));
}

}  // namespace
}  // namespace tierscope
