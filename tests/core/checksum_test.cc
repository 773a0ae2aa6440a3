// The output checksum: order-sensitive (two samples swapped change it, unlike a mean),
// equal for equal outputs, NaN when an output is NaN.
#include "core/checksum.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace tierscope {
namespace {

TEST(Checksum, ReorderedSamplesChangeItAndAMeanWouldNot) {
  // 4 samples of 6 values, each sample different.
  std::vector<float> out(24);
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(i % 6) * 0.5f + static_cast<float>(i / 6);
  std::vector<float> swapped = out;
  std::swap_ranges(swapped.begin(), swapped.begin() + 6, swapped.begin() + 18);  // samples 0 and 3
  double mean_a = 0, mean_b = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    mean_a += out[i];
    mean_b += swapped[i];
  }
  EXPECT_DOUBLE_EQ(mean_a, mean_b);  // what the old checksum could not see
  EXPECT_NE(OrderSensitiveChecksum(out.data(), out.size()),
            OrderSensitiveChecksum(swapped.data(), swapped.size()));
  EXPECT_EQ(OrderSensitiveChecksum(out.data(), out.size()),
            OrderSensitiveChecksum(std::vector<float>(out).data(), out.size()));
}

TEST(Checksum, AConstantOutputChecksumsToItsValueAndANanShows) {
  std::vector<float> v(1000, 0.75f);
  EXPECT_NEAR(OrderSensitiveChecksum(v.data(), v.size()), 0.75, 1e-12);
  for (size_t i = 0; i < v.size(); ++i) EXPECT_GE(ChecksumWeight(i), 0.5);
  v[517] = std::nanf("");
  EXPECT_TRUE(std::isnan(OrderSensitiveChecksum(v.data(), v.size())));
}

}  // namespace
}  // namespace tierscope
