// CeilDiv and RoundUp: whole blocks of any positive size, exact at the edges, 0 kept 0.
#include "core/int_math.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace tierscope {
namespace {

TEST(IntMath, CeilDivCountsTheBlocksThatHoldTheValue) {
  EXPECT_EQ(CeilDiv(0, 16), 0);
  EXPECT_EQ(CeilDiv(1, 16), 1);
  EXPECT_EQ(CeilDiv(16, 16), 1);
  EXPECT_EQ(CeilDiv(17, 16), 2);
  EXPECT_EQ(CeilDiv(100, 3), 34);
  EXPECT_EQ(CeilDiv(int64_t{1} << 40, 48), 22906492246);  // 2^40 / 48 = 22906492245.33
}

TEST(IntMath, RoundUpReachesTheNextMultipleOfAnyUnit) {
  EXPECT_EQ(RoundUp(0, 16), 0);
  EXPECT_EQ(RoundUp(1, 16), 16);
  EXPECT_EQ(RoundUp(16, 16), 16);
  EXPECT_EQ(RoundUp(17, 16), 32);
  EXPECT_EQ(RoundUp(100, 48), 144);  // not only powers of two
  EXPECT_EQ(RoundUp(7, 1), 7);
  static_assert(RoundUp(33, 32) == 64, "usable in constant expressions");
}

}  // namespace
}  // namespace tierscope
