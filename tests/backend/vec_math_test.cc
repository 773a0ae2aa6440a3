// The vectorisable exp / erf / tanh / GELU against libm.
#include "backend/cpu/vec_math.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>

namespace tierscope {
namespace {

TEST(VecMathTest, ExpHasSmallRelativeError) {
  for (float x = -87.0f; x <= 88.0f; x += 0.01f) {
    const double want = std::exp(static_cast<double>(x));
    ASSERT_NEAR(FastExp(x) / want, 1.0, 3e-7) << x;
  }
}

TEST(VecMathTest, ExpOfHugeNegativeIsZeroAndOfZeroIsOne) {
  EXPECT_EQ(FastExp(-FLT_MAX), 0.0f);
  EXPECT_EQ(FastExp(-1000.0f), 0.0f);
  EXPECT_EQ(FastExp(0.0f), 1.0f);
}

TEST(VecMathTest, ErfHasSmallAbsoluteError) {
  for (float x = -8.0f; x <= 8.0f; x += 0.001f) {
    ASSERT_NEAR(FastErf(x), std::erf(static_cast<double>(x)), 1e-6) << x;
  }
}

TEST(VecMathTest, GeluAndTanhMatchLibm) {
  for (float x = -12.0f; x <= 12.0f; x += 0.003f) {
    const double gelu = 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    ASSERT_NEAR(FastGelu(x), gelu, 2e-6 * std::max(1.0f, std::fabs(x))) << x;
    ASSERT_NEAR(FastTanh(x), std::tanh(static_cast<double>(x)), 1e-6) << x;
  }
}

}  // namespace
}  // namespace tierscope
