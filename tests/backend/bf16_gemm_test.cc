// The BF16 GEMM: every BF16 dot micro-kernel variant this CPU runs (AVX512_BF16) against a
// double-precision reference of the same BF16 values, at odd depths whose row end must
// not be read; BF16 Linear on every BF16 variant (the dot kernels, and "fp32": widened on
// the FP32 micro-kernels) within BF16's rounding of the reference; and what cannot mix
// (weights packed for one variant, run on another) refused in one line.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/micro_kernel_bf16.h"
#include "backend/observer.h"

namespace tierscope {
namespace {

constexpr double kU = 0x1.0p-24;  // FP32's unit roundoff: the sums' error is bounded by it

std::vector<uint16_t> RandomBf16(std::mt19937& rng, size_t n) {
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<uint16_t> v(n);
  for (uint16_t& x : v) x = FloatToBF16(d(rng));
  return v;
}

// b[K][N] (column c, depth k at k * n + c) packed as the kernels read it: [panels][K/2][16][2].
std::vector<uint16_t> PackPairs(const std::vector<uint16_t>& b, int64_t k, int64_t n) {
  const int64_t panels = (n + kNR - 1) / kNR, groups = Bf16Groups(k);
  std::vector<uint16_t> out(static_cast<size_t>(panels * groups * kBGroupElems), 0);
  for (int64_t kk = 0; kk < k; ++kk) {
    for (int64_t c = 0; c < n; ++c) {
      out[(c / kNR) * groups * kBGroupElems + kk / kBK * kBGroupElems + (c % kNR) * kBK + kk % kBK] = b[kk * n + c];
    }
  }
  return out;
}

TEST(Bf16MicroKernels, EveryDotVariantMatchesADoubleReference) {
  const std::vector<Bf16Kernels> variants = AvailableBf16Kernels();
  ASSERT_FALSE(variants.empty());
  EXPECT_EQ(std::string(variants.back().isa), "fp32");  // always there: no dot kernels
  EXPECT_FALSE(variants.back().dot());
  EXPECT_EQ(std::string(variants.front().isa), GetBf16Kernels().isa);
  std::string tested;
  for (const Bf16Kernels& v : variants) tested += (tested.empty() ? "" : ", ") + std::string(v.isa);
  RecordProperty("variants", tested);
  std::cout << "BF16 kernel variants on this CPU: " << tested << "\n";
  std::mt19937 rng(2026);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const Bf16Kernels& v : variants) {
    if (!v.dot()) continue;
    for (int64_t kc : {1, 2, 7, 64, 255, 256}) {
      for (int64_t rows : {1, 3, 8, 9, 17}) {
        for (int64_t panels : {1, 2, 3, 4, 5}) {
          for (bool accumulate : {true, false}) {
            const int64_t n = panels * kNR, lda = kc + 3, ldc = n + 5;
            std::vector<uint16_t> a = RandomBf16(rng, static_cast<size_t>(rows * lda));
            // Past each row's kc values: NaN, which a kernel reading a pair past the row's
            // end would carry into every sum.
            for (int64_t r = 0; r < rows; ++r) a[r * lda + kc] = FloatToBF16(nan);
            const std::vector<uint16_t> braw = RandomBf16(rng, static_cast<size_t>(kc * n));
            const std::vector<uint16_t> b = PackPairs(braw, kc, n);
            std::vector<float> c(static_cast<size_t>(rows * ldc));
            for (float& x : c) x = static_cast<float>(rng() % 1000) / 500.0f - 1.0f;
            const std::vector<float> c0 = c;
            v.Run(rows, kc, a.data(), lda, b.data(), panels, Bf16Groups(kc) * kBGroupElems, c.data(), ldc,
                  /*from_c=*/accumulate);
            for (int64_t r = 0; r < rows; ++r) {
              for (int64_t col = 0; col < ldc; ++col) {
                if (col >= n) {  // past the panels: untouched
                  ASSERT_EQ(c[r * ldc + col], c0[r * ldc + col]) << v.isa << " kc " << kc << " at " << r << "," << col;
                  continue;
                }
                double want = accumulate ? c0[r * ldc + col] : 0.0, mag = std::fabs(want);
                for (int64_t k = 0; k < kc; ++k) {
                  const double t = double{BF16ToFloat(a[r * lda + k])} * BF16ToFloat(braw[k * n + col]);
                  want += t;
                  mag += std::fabs(t);
                }
                // Each BF16 product is exact in FP32; kc + 1 roundings of the running sum.
                const double tol = (kc + 2) * kU * mag + 1e-30;
                ASSERT_NEAR(c[r * ldc + col], want, tol)
                    << v.isa << " kc " << kc << " rows " << rows << " panels " << panels << " acc " << accumulate
                    << " at [" << r << "][" << col << "]";
              }
            }
          }
        }
      }
    }
  }
}

TEST(Bf16MicroKernels, TheFusedEpilogueStoresBiasGeluAndBf16OnlyInYsColumns) {
  std::mt19937 rng(11);
  for (const Bf16Kernels& v : AvailableBf16Kernels()) {
    if (!v.dot()) continue;
    for (int64_t kc : {int64_t{0}, int64_t{7}, int64_t{128}}) {
      for (int64_t rows : {1, 8, 11}) {
        for (int64_t panels : {1, 3, 4}) {
          for (bool from_c : {false, true}) {
            for (bool gelu : {false, true}) {
              const int64_t n = panels * kNR, cols = n - 5, lda = kc + 1, ldy = n + 2;
              const std::vector<uint16_t> a = RandomBf16(rng, static_cast<size_t>(rows * lda));
              const std::vector<uint16_t> braw = RandomBf16(rng, static_cast<size_t>(kc * n));
              const std::vector<uint16_t> b = PackPairs(braw, kc, n);
              std::vector<float> c(static_cast<size_t>(rows * n)), bias(static_cast<size_t>(n));
              for (float& x : c) x = static_cast<float>(rng() % 1000) / 250.0f - 2.0f;
              for (float& x : bias) x = static_cast<float>(rng() % 1000) / 500.0f - 1.0f;
              const std::vector<float> c0 = c;
              const uint16_t sentinel = 0x7f7f;
              std::vector<uint16_t> y(static_cast<size_t>(rows * ldy), sentinel);
              Bf16Epilogue out;
              out.y = y.data();
              out.ldy = ldy;
              out.bias = bias.data();
              out.cols = cols;
              out.gelu = gelu;
              v.Run(rows, kc, a.data(), lda, b.data(), panels, Bf16Groups(kc) * kBGroupElems, c.data(), n, from_c,
                    &out);
              ASSERT_EQ(c, c0) << "the sums went to y, not to c";
              for (int64_t r = 0; r < rows; ++r) {
                for (int64_t col = 0; col < ldy; ++col) {
                  const uint16_t got = y[r * ldy + col];
                  if (col >= cols) {
                    ASSERT_EQ(got, sentinel) << v.isa << " stored past y's columns at [" << r << "][" << col << "]";
                    continue;
                  }
                  double s = (from_c ? c0[r * n + col] : 0.0) + bias[col], mag = std::fabs(s);
                  for (int64_t k = 0; k < kc; ++k) {
                    const double t = double{BF16ToFloat(a[r * lda + k])} * BF16ToFloat(braw[k * n + col]);
                    s += t;
                    mag += std::fabs(t);
                  }
                  if (gelu) s = 0.5 * s * (1 + std::erf(s / std::sqrt(2.0)));
                  const double tol = (kc + 3) * kU * mag + 1e-6 * (1 + std::fabs(s)) + 0x1.0p-8 * std::fabs(s);
                  ASSERT_NEAR(BF16ToFloat(got), s, tol) << v.isa << " kc " << kc << " rows " << rows << " panels "
                                                        << panels << " gelu " << gelu << " at [" << r << "][" << col
                                                        << "]";
                }
              }
            }
          }
        }
      }
    }
  }
}

// The name and pipe of each launch.
class LaunchNames : public BackendObserver {
 public:
  std::vector<std::pair<std::string, std::string>> seen;  // kernel, pipe
  void OnAllocate(uintptr_t, size_t, int64_t) override {}
  void OnFree(uintptr_t, size_t, int64_t) override {}
  void OnLaunch(const LaunchDesc& d, int64_t, int64_t, int64_t, int64_t, const std::vector<WorkerSpan>&) override {
    seen.emplace_back(d.kernel, std::string(d.pipe));
  }
};

// Linear over BF16 weights on `variant`: y = x . W^T + b (GELU where asked), against a
// double reference of the BF16 values it was given; BF16 activations on the dot variant,
// FP32 ones (the model's choice there) on "fp32".
void CheckLinearOn(const Bf16Kernels& variant, std::mt19937& rng) {
  ScopedBf16Kernels scoped(variant);
  CpuBackend be(2);
  ASSERT_EQ(be.props().bf16_arithmetic, variant.dot()) << variant.isa;
  const DType xt = variant.dot() ? DType::kBF16 : DType::kF32;
  const int64_t M = 53;
  for (const int64_t K : {int64_t{300}, int64_t{301}, int64_t{768}}) {
    for (const int64_t N : {int64_t{37}, int64_t{200}}) {
      std::vector<float> x(static_cast<size_t>(M * K)), w(static_cast<size_t>(N * K)), b(static_cast<size_t>(N));
      std::normal_distribution<float> d(0.0f, 1.0f);
      for (float& v : x) v = BF16ToFloat(FloatToBF16(d(rng)));
      for (float& v : w) v = BF16ToFloat(FloatToBF16(0.05f * d(rng)));
      for (float& v : b) v = BF16ToFloat(FloatToBF16(d(rng)));
      const HostTensor hw{DType::kF32, {N, K}, reinterpret_cast<const std::byte*>(w.data()), w.size() * 4};
      auto packed = be.kernels().PackWeight(hw, DType::kBF16);
      ASSERT_TRUE(packed.ok()) << packed.status().ToString();
      Tensor dx = std::move(Tensor::Empty(be, xt, {M, K})).value();
      Tensor db = std::move(Tensor::Empty(be, xt, {N})).value();
      Tensor dy = std::move(Tensor::Empty(be, xt, {M, N})).value();
      FromFloat(x.data(), xt, dx.data(), x.size());
      FromFloat(b.data(), xt, db.data(), b.size());
      for (Epilogue e : {Epilogue::kNone, Epilogue::kGelu}) {
        LaunchNames names;
        be.SetObserver(&names);
        const Status st = be.kernels().Linear(dx, M, K, **packed, &db, e, dy);
        be.SetObserver(nullptr);
        ASSERT_TRUE(st.ok()) << variant.isa << ": " << st.ToString();
        // The profile says which arithmetic ran: the dot kernels by name and pipe.
        ASSERT_EQ(names.seen.size(), 1u);
        const auto& [kernel, pipe] = names.seen[0];
        EXPECT_EQ(kernel.rfind(variant.dot() ? "cpu_bgemm_nt_bf16dot_48x96" : "cpu_sgemm_nt_f32_wbf16_48x96", 0), 0u)
            << kernel;
        EXPECT_EQ(pipe, variant.dot() ? "bf16_dot" : "fp32_fma") << kernel;
        std::vector<float> y(static_cast<size_t>(M * N));
        ToFloat(xt, dy.data(), y.data(), y.size());
        for (int64_t m = 0; m < M; ++m) {
          for (int64_t n = 0; n < N; ++n) {
            double acc = b[n], mag = std::fabs(acc);
            for (int64_t k = 0; k < K; ++k) {
              acc += double{x[m * K + k]} * w[n * K + k];
              mag += std::fabs(double{x[m * K + k]} * w[n * K + k]);
            }
            // The GELU's own error (vec_math: a few ulp), the sum's, and y's rounding to BF16.
            if (e == Epilogue::kGelu) acc = 0.5 * acc * (1 + std::erf(acc / std::sqrt(2.0)));
            const double tol = (K + 2) * kU * mag + 1e-6 * (1 + std::fabs(acc)) +
                               (xt == DType::kBF16 ? 0x1.0p-8 * std::fabs(acc) : 0.0);
            ASSERT_NEAR(y[m * N + n], acc, tol) << variant.isa << " K " << K << " N " << N << " at [" << m << "][" << n
                                                << "]";
          }
        }
      }
    }
  }
}

TEST(Bf16Linear, EveryVariantMatchesADoubleReferenceWithinBf16Rounding) {
  std::mt19937 rng(7);
  for (const Bf16Kernels& v : AvailableBf16Kernels()) CheckLinearOn(v, rng);
}

TEST(Bf16Linear, WeightsPackedForTheDotKernelsAreRefusedElsewhereInOneLine) {
  const std::vector<Bf16Kernels> variants = AvailableBf16Kernels();
  if (!variants.front().dot()) GTEST_SKIP() << "no BF16 dot kernels on this CPU (no AVX512_BF16)";
  std::vector<float> w(16 * 8, 0.5f);
  const HostTensor hw{DType::kF32, {16, 8}, reinterpret_cast<const std::byte*>(w.data()), w.size() * 4};
  ScopedBf16Kernels dot(variants.front());
  CpuBackend be(2);
  auto packed = be.kernels().PackWeight(hw, DType::kBF16);
  ASSERT_TRUE(packed.ok()) << packed.status().ToString();
  Tensor x16 = std::move(Tensor::Empty(be, DType::kBF16, {4, 8})).value();
  Tensor y16 = std::move(Tensor::Empty(be, DType::kBF16, {4, 16})).value();
  Tensor x32 = std::move(Tensor::Empty(be, DType::kF32, {4, 8})).value();
  Tensor y32 = std::move(Tensor::Empty(be, DType::kF32, {4, 16})).value();
  FromFloat(std::vector<float>(32, 1.0f).data(), DType::kBF16, x16.data(), 32);
  FromFloat(std::vector<float>(32, 1.0f).data(), DType::kF32, x32.data(), 32);
  // FP32 activations over them: this backend computes BF16 runs in BF16.
  const Status mixed = be.kernels().Linear(x32, 4, 8, **packed, nullptr, Epilogue::kNone, y32);
  EXPECT_EQ(mixed.code(), StatusCode::kInvalidArgument) << mixed.ToString();
  ASSERT_TRUE(be.kernels().Linear(x16, 4, 8, **packed, nullptr, Epilogue::kNone, y16).ok());
  {
    ScopedBf16Kernels widen(variants.back());
    const Status st = be.kernels().Linear(x16, 4, 8, **packed, nullptr, Epilogue::kNone, y16);
    EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st.ToString();
    EXPECT_NE(st.message().find(std::string("packed for the ") + variants.front().isa), std::string::npos)
        << st.message();
    EXPECT_EQ(st.message().find('\n'), std::string::npos);
  }
}

}  // namespace
}  // namespace tierscope
