// The vectorisable exp / erf / tanh / GELU against libm.
#include "backend/cpu/vec_math.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <vector>

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

namespace tierscope {
namespace {

TEST(VecMathTest, VectorPathsMatchTheScalarFunctions) {
  // Lengths that leave a scalar tail after the 8-lane loop; inputs across the clamps.
  std::vector<float> x(1003);
  for (size_t i = 0; i < x.size(); ++i) x[i] = -12.0f + 24.0f * static_cast<float>(i) / x.size();
  std::vector<float> g = x, t = x, e = x;
  GeluInPlace(g.data(), static_cast<int64_t>(g.size()));
  TanhInPlace(t.data(), static_cast<int64_t>(t.size()));
  const float sum = ExpShiftSum(e.data(), static_cast<int64_t>(e.size()), 3.0f);
  double want_sum = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_NEAR(g[i], FastGelu(x[i]), 1e-6f * std::max(1.0f, std::fabs(x[i]))) << x[i];
    EXPECT_NEAR(t[i], FastTanh(x[i]), 1e-6f) << x[i];
    EXPECT_NEAR(e[i], FastExp(x[i] - 3.0f), 1e-6f * FastExp(x[i] - 3.0f)) << x[i];
    want_sum += FastExp(x[i] - 3.0f);
  }
  EXPECT_NEAR(sum, want_sum, 1e-5 * want_sum);
}

}  // namespace
}  // namespace tierscope

namespace tierscope {
namespace {

// A NaN anywhere gives a NaN at that index whichever path handles it — the 8-lane body
// or the scalar tail — and leaves the other elements as they were.
TEST(VecMathTest, NanPropagatesTheSameInEveryLaneAndTail) {
  for (int64_t n : {1, 5, 8, 9, 15, 16, 17, 23}) {
    for (int64_t at = 0; at < n; ++at) {
      std::vector<float> x(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) x[i] = 0.25f * static_cast<float>(i) - 1.0f;
      x[at] = std::nanf("");
      std::vector<float> g = x, t = x, e = x;
      GeluInPlace(g.data(), n);
      TanhInPlace(t.data(), n);
      const float sum = ExpShiftSum(e.data(), n, 1.0f);
      EXPECT_TRUE(std::isnan(g[at])) << "GELU, n " << n << ", NaN at " << at;
      EXPECT_TRUE(std::isnan(t[at])) << "tanh, n " << n << ", NaN at " << at;
      EXPECT_TRUE(std::isnan(e[at])) << "exp, n " << n << ", NaN at " << at;
      EXPECT_TRUE(std::isnan(sum)) << "the softmax sum, n " << n << ", NaN at " << at;
      for (int64_t i = 0; i < n; ++i) {
        if (i == at) continue;
        EXPECT_FALSE(std::isnan(g[i]) || std::isnan(t[i]) || std::isnan(e[i])) << n << " " << i;
      }
    }
  }
  EXPECT_TRUE(std::isnan(FastExp(std::nanf(""))));
  EXPECT_TRUE(std::isnan(FastErf(std::nanf(""))));
  EXPECT_TRUE(std::isnan(FastTanh(std::nanf(""))));
  EXPECT_TRUE(std::isnan(FastGelu(std::nanf(""))));
  EXPECT_EQ(FastExp(-INFINITY), 0.0f);  // masked scores stay zeros
}

}  // namespace
}  // namespace tierscope

#ifdef TIERSCOPE_VEC_AVX2
namespace tierscope {
namespace {

// The 8-lane kernels against libm in double, not only against the scalar functions.
TEST(VecMathTest, EightLaneExpAndErfMatchADoubleReference) {
  for (float x0 = -87.0f; x0 <= 88.0f; x0 += 0.37f) {
    alignas(32) float x[8], e[8];
    for (int l = 0; l < 8; ++l) x[l] = x0 + 0.01f * static_cast<float>(l);
    _mm256_store_ps(e, Exp8(_mm256_load_ps(x)));
    for (int l = 0; l < 8; ++l) ASSERT_NEAR(e[l] / std::exp(static_cast<double>(x[l])), 1.0, 3e-7) << x[l];
  }
  for (float x0 = -6.0f; x0 <= 6.0f; x0 += 0.013f) {
    alignas(32) float x[8], r[8];
    for (int l = 0; l < 8; ++l) x[l] = x0 + 0.001f * static_cast<float>(l);
    _mm256_store_ps(r, Erf8(_mm256_load_ps(x)));
    for (int l = 0; l < 8; ++l) ASSERT_NEAR(r[l], std::erf(static_cast<double>(x[l])), 1e-6) << x[l];
  }
}

// The 16-lane kernels (AVX-512 hosts) against libm in double, and the two GELU paths
// (16 lanes, from the table of Phi's polynomials, and 8 lanes, Erf8's rational) against
// each other: the 8-lane one is no longer what GeluInPlace runs on such a host.
__attribute__((target("avx512f"))) void CheckSixteenLanes() {
  for (float x0 = -87.0f; x0 <= 88.0f; x0 += 0.37f) {
    alignas(64) float x[16], e[16];
    for (int l = 0; l < 16; ++l) x[l] = x0 + 0.01f * static_cast<float>(l);
    _mm512_store_ps(e, Exp16(_mm512_load_ps(x)));
    alignas(32) float e8[8];
    _mm256_store_ps(e8, Exp8(_mm256_load_ps(x)));
    for (int l = 0; l < 16; ++l) ASSERT_NEAR(e[l] / std::exp(static_cast<double>(x[l])), 1.0, 3e-7) << x[l];
    for (int l = 0; l < 8; ++l) ASSERT_EQ(e[l], e8[l]) << "Exp16 and Exp8 give the same results, at " << x[l];
  }
  // Down to the clamp (fx = -127 below -87.68): Exp16 is Exp8 there too, exactly 0.
  for (float x0 = -88.5f; x0 <= -86.9f; x0 += 0.0237f) {
    alignas(64) float x[16], e[16];
    alignas(32) float e8[8];
    for (int l = 0; l < 16; ++l) x[l] = x0 + 0.0011f * static_cast<float>(l);
    _mm512_store_ps(e, Exp16(_mm512_load_ps(x)));
    _mm256_store_ps(e8, Exp8(_mm256_load_ps(x)));
    for (int l = 0; l < 8; ++l) ASSERT_EQ(e[l], e8[l]) << x[l];
    for (int l = 0; l < 16; ++l) {
      if (x[l] < -87.7f) ASSERT_EQ(e[l], 0.0f) << x[l];
    }
  }
  alignas(64) float lows[16] = {-INFINITY, -FLT_MAX, -1000.0f, -88.0f};
  alignas(64) float low_e[16];
  _mm512_store_ps(low_e, Exp16(_mm512_load_ps(lows)));
  for (int l = 0; l < 4; ++l) EXPECT_EQ(low_e[l], 0.0f) << lows[l];  // masked scores add exactly 0
  // Gelu16's table against the exact GELU on a fine grid across every interval and past
  // the last (|x| >= 5.30: x or 0 exactly), and its edge cases.
  for (float x0 = -12.0f; x0 <= 12.0f; x0 += 16 * 0.0007f) {
    alignas(64) float x[16], g[16];
    for (int l = 0; l < 16; ++l) x[l] = x0 + 0.0007f * static_cast<float>(l);
    _mm512_store_ps(g, Gelu16(_mm512_load_ps(x)));
    for (int l = 0; l < 16; ++l) {
      const double want = 0.5 * x[l] * (1.0 + std::erf(x[l] / std::sqrt(2.0)));
      ASSERT_NEAR(g[l], want, 1.2e-7 * std::max(1.0f, std::fabs(x[l]))) << x[l];
      if (std::fabs(x[l]) >= 5.31f) ASSERT_EQ(g[l], x[l] > 0 ? x[l] : 0.0f) << x[l];
    }
  }
  alignas(64) float edge[16] = {0.0f, -0.0f, 1e-40f, -1e-40f, NAN, INFINITY, 3e38f, -3e38f,
                                -INFINITY, -5.3033f, 1.0f, -1.0f, 0.35355f, -0.35355f, 2.0f, -2.0f};
  alignas(64) float ge[16];
  _mm512_store_ps(ge, Gelu16(_mm512_load_ps(edge)));
  EXPECT_EQ(ge[0], 0.0f);
  EXPECT_EQ(ge[1], 0.0f);
  EXPECT_EQ(ge[2], 0.5f * 1e-40f);  // subnormal: Phi(0) = 0.5 exactly in the table
  EXPECT_EQ(ge[3], -0.5f * 1e-40f);
  EXPECT_TRUE(std::isnan(ge[4]));
  EXPECT_EQ(ge[5], INFINITY);
  EXPECT_EQ(ge[6], 3e38f);
  EXPECT_EQ(ge[7], 0.0f);
  EXPECT_TRUE(std::isnan(ge[8])) << "-inf: -inf + inf, as the rational versions give";
  for (int l = 9; l < 16; ++l) {
    EXPECT_NEAR(ge[l], 0.5 * edge[l] * (1.0 + std::erf(edge[l] / std::sqrt(2.0))),
                1.2e-7 * std::max(1.0f, std::fabs(edge[l])))
        << edge[l];
  }
  std::vector<float> x(1003);
  for (size_t i = 0; i < x.size(); ++i) x[i] = -12.0f + 24.0f * static_cast<float>(i) / x.size();
  std::vector<float> g16 = x;
  GeluInPlace16(g16.data(), static_cast<int64_t>(g16.size()));
  for (size_t i = 0; i + 8 <= x.size(); i += 8) {
    alignas(32) float g8[8];
    const __m256 v = _mm256_loadu_ps(x.data() + i);
    const __m256 e = Erf8(_mm256_mul_ps(v, _mm256_set1_ps(0.70710678118654752f)));
    _mm256_store_ps(g8, _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), v), _mm256_add_ps(_mm256_set1_ps(1.0f), e)));
    for (int l = 0; l < 8; ++l) {
      const double want = 0.5 * x[i + l] * (1.0 + std::erf(x[i + l] / std::sqrt(2.0)));
      ASSERT_NEAR(g16[i + l], want, 2e-6 * std::max(1.0, std::fabs(want))) << x[i + l];
      ASSERT_NEAR(g16[i + l], g8[l], 1e-6f * std::max(1.0f, std::fabs(g8[l]))) << x[i + l];
    }
  }
}

TEST(VecMathTest, SixteenLaneExpAndGeluMatchADoubleReferenceAndTheEightLaneOnes) {
  if (!RunsAvx512()) GTEST_SKIP() << "no AVX-512 here: GeluInPlace and ExpShiftSum run the 8-lane code tested above";
  CheckSixteenLanes();
}

// Attention's fused softmax row for the BF16 dot kernels against the five passes it
// replaces (scale, mask, MaxOf, ExpShiftSum16, vcvtneps2bf16), bit for bit: lengths
// across the 32- and 16-key steps and tails, scale 1 or not, masks (none, some, all),
// and rows with ±0, a NaN, huge and tiny scores.
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) void CheckSoftmaxRowBf16() {
  uint64_t seed = 7;
  auto next = [&] {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<float>(static_cast<int64_t>(seed >> 33) % 20000 - 10000) / 1000.0f;
  };
  int checked = 0;
  for (int64_t n : {1, 5, 15, 16, 17, 31, 32, 33, 47, 64, 77, 128, 130}) {
    for (int kind = 0; kind < 6; ++kind) {
      // Powers of two scale exactly; 1/sqrt(32) and 1/sqrt(13) (head dims 32 and 13) round.
      for (float scale : {1.0f, 0.125f, 1.0f / std::sqrt(32.0f), 1.0f / std::sqrt(13.0f)}) {
        std::vector<float> s(static_cast<size_t>(n));
        std::vector<int32_t> mask(static_cast<size_t>(n), 1);
        for (float& v : s) v = next();
        if (kind == 1) s[0] = 0.0f, s[static_cast<size_t>(n - 1)] = -0.0f;
        if (kind == 2) s[static_cast<size_t>(n / 2)] = NAN;
        if (kind == 3) s[0] = 3e38f, s[static_cast<size_t>(n - 1)] = -3e38f;
        if (kind == 4) {
          for (int64_t j = 0; j < n; j += 3) mask[static_cast<size_t>(j)] = 0;
        }
        if (kind == 5) std::fill(mask.begin(), mask.end(), 0);
        const bool masked = kind >= 4;
        std::vector<float> ref = s;
        if (scale != 1.0f) ScaleInPlace(ref.data(), n, scale);
        for (int64_t j = 0; masked && j < n; ++j) {
          if (mask[static_cast<size_t>(j)] == 0) ref[static_cast<size_t>(j)] += -FLT_MAX;
        }
        const float inv_ref = 1.0f / ExpShiftSum16(ref.data(), n, MaxOf(ref.data(), n));
        std::vector<uint16_t> want(static_cast<size_t>(n) + 16, 0xabcd), got = want;
        for (int64_t j = 0; j < n; j += 16) {
          const __mmask16 k = TailMask16(n - j);
          _mm256_mask_storeu_epi16(want.data() + j, k, (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(k, ref.data() + j)));
        }
        const float inv = SoftmaxRowBf16(s.data(), n, scale, masked ? mask.data() : nullptr, got.data());
        ASSERT_EQ(std::memcmp(&inv, &inv_ref, sizeof(float)), 0) << n << " kind " << kind << ": " << inv << " vs " << inv_ref;
        ASSERT_EQ(got, want) << n << " kind " << kind << " scale " << scale;  // nothing past n either
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 13 * 6 * 4);
}

TEST(VecMathTest, FusedBf16SoftmaxRowIsTheFivePassesBitForBit) {
  if (!RunsAvx512() || !CpuHasFlag("avx512_bf16")) {
    GTEST_SKIP() << "no AVX512_BF16 here: attention's BF16 dot path (and this row) does not run";
  }
  CheckSoftmaxRowBf16();
}

}  // namespace
}  // namespace tierscope
#endif
