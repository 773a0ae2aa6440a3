// FP16 / BF16 conversions: exact round trips and round-to-nearest-even.
#include "tierscope/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace tierscope {
namespace {

TEST(DTypeTest, EveryFiniteHalfRoundTripsExactly) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const uint16_t bits = static_cast<uint16_t>(h);
    const float f = HalfToFloat(bits);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(f))));
      continue;
    }
    EXPECT_EQ(FloatToHalf(f), bits) << "half bits 0x" << std::hex << h;
  }
}

TEST(DTypeTest, HalfKnownValues) {
  EXPECT_EQ(HalfToFloat(0x3c00), 1.0f);
  EXPECT_EQ(HalfToFloat(0xc000), -2.0f);
  EXPECT_EQ(HalfToFloat(0x7bff), 65504.0f);
  EXPECT_EQ(HalfToFloat(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7c00);                // rounds to inf
  EXPECT_EQ(FloatToHalf(1e-9f), 0x0000);
}

TEST(DTypeTest, HalfRoundsToNearestEven) {
  // 1 + 2^-11 lies halfway between 1 and 1 + 2^-10: ties go to the even mantissa (1).
  EXPECT_EQ(FloatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  // 1 + 3*2^-11 is halfway between 1+2^-10 (odd) and 1+2^-9 (even).
  EXPECT_EQ(FloatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  // Just above halfway rounds up.
  EXPECT_EQ(FloatToHalf(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3c01);
  // Subnormal halfway: 1.5 * 2^-24 rounds to 2 * 2^-24.
  EXPECT_EQ(FloatToHalf(1.5f * std::ldexp(1.0f, -24)), 0x0002);
  EXPECT_EQ(FloatToHalf(0.5f * std::ldexp(1.0f, -24)), 0x0000);
}

TEST(DTypeTest, BFloat16RoundsToNearestEven) {
  EXPECT_EQ(FloatToBF16(1.0f), 0x3f80);
  EXPECT_EQ(BF16ToFloat(0x3f80), 1.0f);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: rounds to even (1).
  EXPECT_EQ(FloatToBF16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  EXPECT_EQ(FloatToBF16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_TRUE(std::isnan(BF16ToFloat(FloatToBF16(NAN))));
}

TEST(DTypeTest, ParseFloatDTypeNamesTheValidChoices) {
  EXPECT_EQ(*ParseFloatDType("bf16"), DType::kBF16);
  EXPECT_EQ(*ParseFloatDType("float16"), DType::kF16);
  auto bad = ParseFloatDType("int8");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("fp32, fp16, bf16"), std::string::npos);
}

}  // namespace
}  // namespace tierscope

namespace tierscope {
namespace {

// The array conversions run F16C over 8 lanes and the scalar code on the tail: both paths
// must give the scalar functions' answer (checked above against exact values), bit for bit.
TEST(DTypeTest, ArrayConversionsMatchTheScalarOnesInEveryLaneAndTail) {
  std::vector<uint16_t> halves(65536 + 3);  // + 3: a tail after the 8-lane loop
  for (size_t i = 0; i < halves.size(); ++i) halves[i] = static_cast<uint16_t>(i);
  std::vector<float> floats(halves.size());
  HalfToFloat(halves.data(), floats.data(), halves.size());
  for (size_t i = 0; i < halves.size(); ++i) {
    const float want = HalfToFloat(halves[i]);
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(floats[i])) << i;
    } else {
      ASSERT_EQ(floats[i], want) << "half 0x" << std::hex << halves[i];
    }
  }
  std::mt19937 rng(2026);
  std::vector<float> in(100003);
  for (float& f : in) {
    const uint32_t bits = rng();
    std::memcpy(&f, &bits, sizeof(f));
  }
  for (float f : {0.0f, -0.0f, 65504.0f, 65520.0f, 1e-9f, 1.0f + std::ldexp(1.0f, -11), INFINITY, -INFINITY}) {
    in.push_back(f);
  }
  std::vector<uint16_t> out(in.size());
  FloatToHalf(in.data(), out.data(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    const uint16_t want = FloatToHalf(in[i]);
    if (std::isnan(in[i])) {
      ASSERT_TRUE(std::isnan(HalfToFloat(out[i]))) << i;
    } else {
      ASSERT_EQ(out[i], want) << "float " << in[i];
    }
  }
}


// The BF16 array conversions run AVX2 over 8 lanes and the scalar code on the tail: bit for
// bit the scalar functions' answer, NaN payloads included (quieted the same way).
TEST(DTypeTest, BFloat16ArrayConversionsMatchTheScalarOnesBitForBit) {
  std::vector<uint16_t> bf(65536 + 5);
  for (size_t i = 0; i < bf.size(); ++i) bf[i] = static_cast<uint16_t>(i);
  std::vector<float> wide(bf.size());
  BF16ToFloat(bf.data(), wide.data(), bf.size());
  for (size_t i = 0; i < bf.size(); ++i) {
    const float want = BF16ToFloat(bf[i]);
    ASSERT_EQ(std::memcmp(&wide[i], &want, sizeof(float)), 0) << "bf16 0x" << std::hex << bf[i];
  }
  std::mt19937 rng(7);
  std::vector<float> in(100005);
  for (float& f : in) {
    const uint32_t bits = rng();
    std::memcpy(&f, &bits, sizeof(f));
  }
  for (float f : {0.0f, -0.0f, 1.0f + std::ldexp(1.0f, -8), 1.0f + 3 * std::ldexp(1.0f, -8), 3.3895314e38f,
                  INFINITY, -INFINITY, NAN, -NAN, std::ldexp(1.0f, -140)}) {
    in.push_back(f);
  }
  std::vector<uint16_t> out(in.size());
  FloatToBF16(in.data(), out.data(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    ASSERT_EQ(out[i], FloatToBF16(in[i])) << "float " << in[i] << " at " << i;
  }
}

}  // namespace
}  // namespace tierscope
