// The INT8 GEMM: every micro-kernel variant this CPU runs (AMX, AVX512-VNNI, AVX-VNNI,
// AVX2, scalar) sums exactly, at the largest codes of its range included; Linear with INT8 weights equals a
// double-precision reference of the same quantization, stays close to FP32, keeps a
// non-finite row to itself, and refuses what it cannot do.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/micro_kernel_int8.h"
#include "backend/cpu/vec_math.h"

namespace tierscope {
namespace {

// b packed as the kernels read it: panels of [kq][16][4] int8.
std::vector<int8_t> PackB(const std::vector<int8_t>& w, int64_t n, int64_t kq) {
  const int64_t panels = (n + kNR - 1) / kNR;
  std::vector<int8_t> b(static_cast<size_t>(panels * kq * kQGroupBytes), 0);
  for (int64_t c = 0; c < n; ++c) {
    for (int64_t k = 0; k < kq * kQK; ++k) {
      const int64_t group = (c / kNR) * kq + k / kQK;
      b[group * kQGroupBytes + (c % kNR) * kQK + k % kQK] = w[c * kq * kQK + k];
    }
  }
  return b;
}

TEST(Int8MicroKernels, EveryVariantSumsExactlyAtTheLargestCodes) {
  const std::vector<Int8MicroKernels> variants = AvailableInt8MicroKernels();
  ASSERT_FALSE(variants.empty());
  EXPECT_EQ(std::string(variants.back().isa), "scalar");
  EXPECT_EQ(std::string(variants.front().isa), GetInt8MicroKernels().isa);
  std::string tested;
  for (const auto& v : variants) tested += (tested.empty() ? "" : ", ") + std::string(v.isa);
  RecordProperty("variants", tested);
  std::cout << "INT8 micro-kernel variants tested on this CPU: " << tested << "\n";
  std::mt19937 rng(2026);
  for (const Int8MicroKernels& v : variants) {
    const int wmax = v.weight_max;
    for (int fill = 0; fill < 3; ++fill) {  // random; all codes at their largest; mixed signs at the edge
      for (int64_t kq : {1, 3, 32, 129, 48}) {  // 32, 48: whole AMX tiles; the rest: its VNNI fallback
        for (int64_t rows : {1, 2, 4, 5, 6, 7, 10, 13, 17, 33, 48}) {
          for (int64_t n : {16, 32, 48}) {
            const int64_t k = kq * kQK, lda = k + 8, ldc = n + 3;
            // Whole 16-row tiles of a and c, as the AMX kernel reads and writes them.
            const int64_t padded = (rows + kAmxRows - 1) / kAmxRows * kAmxRows;
            std::vector<uint8_t> a(static_cast<size_t>(padded * lda), 0);
            std::vector<int8_t> w(static_cast<size_t>(n * k));
            for (int64_t r = 0; r < rows; ++r) {
              for (int64_t j = 0; j < k; ++j) {
                a[r * lda + j] = static_cast<uint8_t>(fill == 0 ? rng() % (kQActMax + 1) : kQActMax);
              }
            }
            for (size_t i = 0; i < w.size(); ++i) {
              w[i] = static_cast<int8_t>(fill == 0 ? static_cast<int>(rng() % (2 * wmax + 1)) - wmax
                                         : fill == 1 ? wmax
                                                     : (i % 3 == 0 ? -wmax : wmax));
            }
            const std::vector<int8_t> b = PackB(w, n, kq);
            std::vector<int32_t> c(static_cast<size_t>(padded * ldc), -7);
            v.Run(rows, kq, a.data(), lda, b.data(), n / kNR, kq * kQGroupBytes, c.data(), ldc);
            for (int64_t r = 0; r < rows; ++r) {
              for (int64_t col = 0; col < ldc; ++col) {
                int64_t want = -7;  // past the panels: untouched
                if (col < n) {
                  want = 0;
                  for (int64_t j = 0; j < k; ++j) want += int64_t{a[r * lda + j]} * w[col * k + j];
                }
                ASSERT_EQ(c[r * ldc + col], want) << v.isa << " fill " << fill << " kq " << kq << " rows "
                                                  << rows << " n " << n << " at [" << r << "][" << col << "]";
              }
            }
          }
        }
      }
    }
  }
}

// Every Linear test runs on each variant this CPU has, the kernels and the dequantization
// that go with them (AVX-512 beside AVX512-VNNI and AMX, 8 lanes beside the others, GELU
// fused where it is the host's GeluInPlace arithmetic), not only on the variant the host
// picks.
class Int8LinearTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    for (const Int8MicroKernels& v : AvailableInt8MicroKernels()) {
      if (GetParam() == v.isa) forced_.emplace(v);
    }
    ASSERT_TRUE(forced_.has_value()) << GetParam();
    ASSERT_EQ(std::string(GetInt8MicroKernels().isa), GetParam());
  }
  std::optional<ScopedInt8MicroKernels> forced_;
  CpuBackend be_{2};
  std::mt19937 rng_{11};

  std::vector<float> Random(size_t n, float scale = 1.0f) {
    std::normal_distribution<float> d(0.0f, scale);
    std::vector<float> v(n);
    for (float& x : v) x = d(rng_);
    return v;
  }
  Tensor Device(const std::vector<float>& v, Shape shape) {
    Tensor d = std::move(Tensor::Empty(be_, DType::kF32, std::move(shape))).value();
    std::copy(v.begin(), v.end(), static_cast<float*>(d.data()));
    return d;
  }
  static HostTensor Host(const std::vector<float>& w, int64_t n, int64_t k) {
    HostTensor h;
    h.dtype = DType::kF32;
    h.shape = {n, k};
    h.data = reinterpret_cast<const std::byte*>(w.data());
    h.bytes = w.size() * sizeof(float);
    return h;
  }
  // y from the quantization the kernels document, in double: weights per channel
  // symmetric (scale max|w|/weight_max of the variant in force: 127, AVX2's 63),
  // activations per row to [0, 255] with a zero point.
  static std::vector<double> Reference(const std::vector<float>& x, int64_t m, int64_t stride,
                                       const std::vector<float>& w, int64_t n, int64_t k,
                                       const std::vector<float>& bias) {
    const int act_max = kQActMax;
    const auto wmax = static_cast<float>(GetInt8MicroKernels().weight_max);
    std::vector<double> y(static_cast<size_t>(m * n));
    std::vector<float> sw(n);
    std::vector<int> wq(static_cast<size_t>(n * k));
    for (int64_t c = 0; c < n; ++c) {
      float amax = 0;
      for (int64_t j = 0; j < k; ++j) amax = std::max(amax, std::fabs(w[c * k + j]));
      sw[c] = amax > 0 ? amax / wmax : 1.0f;
      for (int64_t j = 0; j < k; ++j) {
        wq[c * k + j] = static_cast<int>(std::clamp(std::nearbyint(w[c * k + j] * (1.0f / sw[c])), -wmax, wmax));
      }
    }
    for (int64_t r = 0; r < m; ++r) {
      const float* xr = x.data() + r * stride;
      float lo = 0, hi = 0;
      for (int64_t j = 0; j < k; ++j) lo = std::min(lo, xr[j]), hi = std::max(hi, xr[j]);
      const float s = hi > lo ? static_cast<float>((double{hi} - lo) / act_max) : 1.0f;
      const float zp = std::clamp(std::nearbyint(-lo / s), 0.0f, static_cast<float>(act_max));
      std::vector<int> q(k);
      for (int64_t j = 0; j < k; ++j) {
        q[j] = static_cast<int>(std::clamp(std::nearbyint(std::fma(xr[j], 1.0f / s, zp)), 0.0f,
                                           static_cast<float>(act_max)));
      }
      for (int64_t c = 0; c < n; ++c) {
        int64_t acc = 0;
        for (int64_t j = 0; j < k; ++j) acc += int64_t{q[j] - static_cast<int>(zp)} * wq[c * k + j];
        y[r * n + c] = double{s} * sw[c] * static_cast<double>(acc) + bias[c];
      }
    }
    return y;
  }
};

TEST_P(Int8LinearTest, MatchesADoubleReferenceOfTheSameQuantizationAndStaysCloseToFp32) {
  for (const auto& [m, n, k, stride] : {std::tuple<int64_t, int64_t, int64_t, int64_t>{37, 50, 70, 70},
                                         {49, 64, 128, 131}, {1, 17, 3, 5}, {96, 384, 512, 512}}) {
    const std::vector<float> x = Random(static_cast<size_t>(m * stride), 2.0f);
    const std::vector<float> w = Random(static_cast<size_t>(n * k), 0.05f), bias = Random(n, 0.1f);
    auto packed = be_.kernels().PackWeight(Host(w, n, k), DType::kI8);
    ASSERT_TRUE(packed.ok()) << packed.status().ToString();
    EXPECT_EQ((*packed)->dtype(), DType::kI8);
    Tensor dx = Device(x, {m, stride}), db = Device(bias, {n});
    Tensor y = std::move(Tensor::Empty(be_, DType::kF32, {m, n})).value();
    ASSERT_TRUE(be_.kernels().Linear(dx, m, stride, **packed, &db, Epilogue::kNone, y).ok());
    const std::vector<double> want = Reference(x, m, stride, w, n, k, bias);
    const float* got = static_cast<const float*>(y.data());
    double scale = 0, err_fp32 = 0, ref_fp32 = 0;
    for (double v : want) scale = std::max(scale, std::fabs(v));
    for (int64_t r = 0; r < m; ++r) {
      for (int64_t c = 0; c < n; ++c) {
        ASSERT_NEAR(got[r * n + c], want[r * n + c], 2e-6 * scale) << "m " << m << " at [" << r << "][" << c << "]";
        double exact = bias[c];
        for (int64_t j = 0; j < k; ++j) exact += double{x[r * stride + j]} * w[c * k + j];
        err_fp32 = std::max(err_fp32, std::fabs(got[r * n + c] - exact));
        ref_fp32 = std::max(ref_fp32, std::fabs(exact));
      }
    }
    // Quantization error: a few code steps of a sum of k terms, far below the values; one
    // bound for every variant (each sums its codes exactly; AVX2's 7-bit weights take
    // coarser steps, within the same bound).
    EXPECT_LT(err_fp32, 0.03 * ref_fp32) << GetParam() << " m " << m << " k " << k;
  }
}

TEST_P(Int8LinearTest, GeluEpilogueIsAppliedAfterDequantization) {
  // 44 and 72 columns: 8-lane and 16-lane chunks of a row plus a scalar tail.
  for (const int64_t n : {44, 72}) {
    const int64_t m = 20, k = 64;
    const std::vector<float> x = Random(m * k), w = Random(n * k, 0.1f), bias = Random(n, 0.1f);
    auto packed = be_.kernels().PackWeight(Host(w, n, k), DType::kI8);
    ASSERT_TRUE(packed.ok());
    Tensor dx = Device(x, {m, k}), db = Device(bias, {n});
    Tensor plain = std::move(Tensor::Empty(be_, DType::kF32, {m, n})).value();
    Tensor gelu = std::move(Tensor::Empty(be_, DType::kF32, {m, n})).value();
    ASSERT_TRUE(be_.kernels().Linear(dx, m, k, **packed, &db, Epilogue::kNone, plain).ok());
    ASSERT_TRUE(be_.kernels().Linear(dx, m, k, **packed, &db, Epilogue::kGelu, gelu).ok());
    const float* p = static_cast<const float*>(plain.data());
    const float* g = static_cast<const float*>(gelu.data());
    std::vector<float> same(p, p + m * n);
    for (int64_t r = 0; r < m; ++r) GeluInPlace(same.data() + r * n, n);  // the FP32 GEMM's epilogue, a row at a time
    for (int64_t i = 0; i < m * n; ++i) {
      const double want = 0.5 * p[i] * (1.0 + std::erf(p[i] / std::sqrt(2.0)));
      ASSERT_NEAR(g[i], want, 1e-6 + 1e-6 * std::fabs(want)) << "n " << n << " at " << i;
      // The GELU fused into the dequantization (AVX-512, or 8 lanes where the host has no
      // AVX-512) is the same arithmetic, bit for bit, tail included.
      ASSERT_EQ(g[i], same[i]) << "n " << n << " at " << i;
    }
  }
}

TEST_P(Int8LinearTest, ANonFiniteInputRowGivesNanInThatRowOnly) {
  const int64_t m = 7, n = 16, k = 43;  // 43: the quantizer's vector loop and its scalar tail
  std::vector<float> x = Random(m * k);
  x[2 * k + 5] = std::numeric_limits<float>::quiet_NaN();
  x[4 * k + 42] = std::numeric_limits<float>::infinity();
  const std::vector<float> w = Random(n * k, 0.1f);
  auto packed = be_.kernels().PackWeight(Host(w, n, k), DType::kI8);
  ASSERT_TRUE(packed.ok());
  Tensor dx = Device(x, {m, k});
  Tensor y = std::move(Tensor::Empty(be_, DType::kF32, {m, n})).value();
  ASSERT_TRUE(be_.kernels().Linear(dx, m, k, **packed, nullptr, Epilogue::kNone, y).ok());
  const float* got = static_cast<const float*>(y.data());
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t c = 0; c < n; ++c) {
      EXPECT_EQ(std::isnan(got[r * n + c]), r == 2 || r == 4) << "[" << r << "][" << c << "]";
    }
  }
}

TEST_P(Int8LinearTest, RefusesWhatItCannotDo) {
  const std::vector<float> w = Random(16 * 8, 0.1f);
  auto packed = be_.kernels().PackWeight(Host(w, 16, 8), DType::kI8);
  ASSERT_TRUE(packed.ok());
  // INT8 weights take FP32 activations only.
  Tensor x16 = std::move(Tensor::Empty(be_, DType::kF16, {4, 8})).value();
  Tensor y16 = std::move(Tensor::Empty(be_, DType::kF16, {4, 16})).value();
  const Status s = be_.kernels().Linear(x16, 4, 8, **packed, nullptr, Epilogue::kNone, y16);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("INT8 weights take FP32 activations"), std::string::npos) << s.message();
  // The int32 sums would overflow past 65,536 inputs.
  const std::vector<float> wide(65537, 0.5f);
  auto too_wide = be_.kernels().PackWeight(Host(wide, 1, 65537), DType::kI8);
  EXPECT_EQ(too_wide.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(too_wide.status().message().find("in_features"), std::string::npos);
  // A weight that is not finite cannot be scaled.
  std::vector<float> bad = w;
  bad[20] = std::numeric_limits<float>::infinity();
  auto nonfinite = be_.kernels().PackWeight(Host(bad, 16, 8), DType::kI8);
  EXPECT_EQ(nonfinite.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(nonfinite.status().message().find("weight row 2"), std::string::npos);
}

TEST_P(Int8LinearTest, ARowOfTinyValuesQuantizesToZeroNotNan) {
  // A range so small that 1/scale overflows: the row's codes are its zero point, exactly.
  const int64_t m = 3, n = 16, k = 37;
  std::vector<float> x = Random(m * k);
  for (int64_t j = 0; j < k; ++j) x[k + j] = (j % 2 ? 1e-38f : -1e-38f);
  x[k + 3] = 0.0f;
  const std::vector<float> w = Random(n * k, 0.1f);
  std::vector<float> wtiny(w.size(), 1e-40f);  // a subnormal weight row: scale 1, codes 0
  auto packed = be_.kernels().PackWeight(Host(w, n, k), DType::kI8);
  auto tiny = be_.kernels().PackWeight(Host(wtiny, n, k), DType::kI8);
  ASSERT_TRUE(packed.ok() && tiny.ok());
  Tensor dx = Device(x, {m, k});
  Tensor y = std::move(Tensor::Empty(be_, DType::kF32, {m, n})).value();
  ASSERT_TRUE(be_.kernels().Linear(dx, m, k, **packed, nullptr, Epilogue::kNone, y).ok());
  const float* got = static_cast<const float*>(y.data());
  for (int64_t c = 0; c < n; ++c) {
    EXPECT_TRUE(std::isfinite(got[c]) && std::isfinite(got[2 * n + c]));
    EXPECT_EQ(got[n + c], 0.0f) << c;
  }
  ASSERT_TRUE(be_.kernels().Linear(dx, m, k, **tiny, nullptr, Epilogue::kNone, y).ok());
  for (int64_t i = 0; i < m * n; ++i) EXPECT_EQ(got[i], 0.0f) << i;
}

// Every variant sums its codes exactly, so an INT8 Linear gives the same bits on each for
// the same packed weights: packed once for the narrowest range among them (AVX2's 7 bits
// where the CPU runs it), every variant reads those. Packed for each variant in turn, the
// variants of one range agree bit for bit; weights quantized to a range wider than the
// variant in force sums exactly are refused, not summed with saturation.
TEST(Int8Linear, EveryVariantGivesTheSameOutputsBitForBit) {
  CpuBackend be(2);
  std::mt19937 rng(5);
  std::normal_distribution<float> d(0.0f, 1.0f);
  const int64_t m = 53, n = 72, k = 200;
  std::vector<float> x(static_cast<size_t>(m * k)), w(static_cast<size_t>(n * k)), bias(n);
  for (float& v : x) v = 2.0f * d(rng);
  for (float& v : w) v = 0.05f * d(rng);
  for (float& v : bias) v = 0.1f * d(rng);
  HostTensor hw;
  hw.dtype = DType::kF32;
  hw.shape = {n, k};
  hw.data = reinterpret_cast<const std::byte*>(w.data());
  hw.bytes = w.size() * sizeof(float);
  Tensor dx = std::move(Tensor::Empty(be, DType::kF32, {m, k})).value();
  Tensor db = std::move(Tensor::Empty(be, DType::kF32, {n})).value();
  std::copy(x.begin(), x.end(), static_cast<float*>(dx.data()));
  std::copy(bias.begin(), bias.end(), static_cast<float*>(db.data()));
  const std::vector<Int8MicroKernels> variants = AvailableInt8MicroKernels();
  auto run = [&](const PackedWeight& packed) {
    Tensor y = std::move(Tensor::Empty(be, DType::kF32, {m, n})).value();
    const Status s = be.kernels().Linear(dx, m, k, packed, &db, Epilogue::kNone, y);
    const float* got = static_cast<const float*>(y.data());
    return std::make_pair(s, s.ok() ? std::vector<float>(got, got + m * n) : std::vector<float>{});
  };
  const Int8MicroKernels* narrowest = &variants.front();
  for (const Int8MicroKernels& v : variants) {
    if (v.weight_max < narrowest->weight_max) narrowest = &v;
  }
  std::unique_ptr<PackedWeight> shared;
  {
    ScopedInt8MicroKernels forced(*narrowest);
    auto packed = be.kernels().PackWeight(hw, DType::kI8);
    ASSERT_TRUE(packed.ok()) << packed.status().ToString();
    shared = std::move(*packed);
  }
  std::vector<float> first;
  for (const Int8MicroKernels& v : variants) {
    ScopedInt8MicroKernels forced(v);
    auto [s, got] = run(*shared);
    ASSERT_TRUE(s.ok()) << v.isa << ": " << s.ToString();
    if (first.empty()) first = got;
    for (int64_t i = 0; i < m * n; ++i) ASSERT_EQ(got[i], first[i]) << v.isa << " vs " << narrowest->isa << " at " << i;
  }
  std::map<int, std::vector<float>> by_range;
  for (const Int8MicroKernels& v : variants) {
    ScopedInt8MicroKernels forced(v);
    auto packed = be.kernels().PackWeight(hw, DType::kI8);
    ASSERT_TRUE(packed.ok()) << v.isa << ": " << packed.status().ToString();
    auto [s, got] = run(**packed);
    ASSERT_TRUE(s.ok()) << v.isa << ": " << s.ToString();
    auto [it, fresh] = by_range.emplace(v.weight_max, got);
    if (!fresh) {
      for (int64_t i = 0; i < m * n; ++i) ASSERT_EQ(got[i], it->second[i]) << v.isa << " at " << i;
    }
    for (const Int8MicroKernels& narrower : variants) {
      if (narrower.weight_max >= v.weight_max) continue;
      ScopedInt8MicroKernels inner(narrower);
      const Status refused = run(**packed).first;
      EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition) << v.isa << " weights on " << narrower.isa;
      EXPECT_NE(refused.message().find("pack them again"), std::string::npos) << refused.message();
    }
  }
}

// The variants this CPU runs (the scalar one everywhere), so none is skipped.
std::vector<std::string> VariantNames() {
  std::vector<std::string> names;
  for (const Int8MicroKernels& v : AvailableInt8MicroKernels()) names.push_back(v.isa);
  return names;
}

INSTANTIATE_TEST_SUITE_P(Variants, Int8LinearTest, ::testing::ValuesIn(VariantNames()),
                         [](const auto& info) {
                           std::string name = info.param;  // "amx-int8": no '-' in a test name
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace tierscope
