// A Linear with the residual add and LayerNorm in its epilogue (Kernels::LinearAddLayerNorm)
// on every FP32 micro-kernel and BF16 kernel variant this CPU runs (forced, not only the one
// picked), in FP32, FP16 and BF16: bit for bit the Linear into rows of the output's shape,
// then LayerNorm over them, with and without a bias; one launch of whole-row tasks, or, for
// weights past a core's L2 over few rows, the Linear's launch and the LayerNorm's in place;
// within a tolerance of a double-precision Linear and LayerNorm (so the pair is not checked
// only against itself); and what does not fit the contract is refused in one line.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/micro_kernel.h"
#include "backend/cpu/micro_kernel_bf16.h"
#include "backend/observer.h"
#include "test_util.h"

namespace tierscope {
namespace {

struct Case {
  int64_t rows, n, k, stride = 0;  // stride: x's row stride (0: k)
};

// One dtype on one backend (the variants in force when it was made).
class FusedLinear {
 public:
  FusedLinear(CpuBackend& be, DType t, uint32_t seed) : be_(be), t_(t), rng_(seed) {}

  Tensor Random(Shape shape, float scale, std::vector<float>* values = nullptr) {
    Tensor d = std::move(Tensor::Empty(be_, t_, std::move(shape))).value();
    std::vector<float> v(static_cast<size_t>(d.numel()));
    std::normal_distribution<float> dist(0.0f, scale);
    for (float& x : v) x = dist(rng_);
    FromFloat(v.data(), t_, d.data(), v.size());
    ToFloat(t_, d.data(), v.data(), v.size());  // the values the kernels see
    if (values != nullptr) *values = std::move(v);
    return d;
  }
  Tensor Empty(Shape shape) { return std::move(Tensor::Empty(be_, t_, std::move(shape))).value(); }
  std::unique_ptr<PackedWeight> Weight(int64_t n, int64_t k, std::vector<float>* values) {
    std::vector<float> w(static_cast<size_t>(n * k));
    std::normal_distribution<float> d(0.0f, 0.05f);
    for (float& v : w) v = d(rng_);
    std::vector<std::byte> raw(w.size() * DTypeSize(t_));
    FromFloat(w.data(), t_, raw.data(), w.size());
    ToFloat(t_, raw.data(), w.data(), w.size());
    *values = w;
    auto p = be_.kernels().PackWeight(HostTensor{t_, {n, k}, raw.data(), raw.size()}, t_);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    return std::move(p).value();
  }

  // Checks Case c with and without a bias; `what` names the variant in failures.
  void Check(const Case& c, const std::string& what) {
    std::vector<float> xv, wv, bv, rv, gv, betav;
    const int64_t ld = c.stride > 0 ? c.stride : c.k;
    Tensor x = Random({c.rows, ld}, 1.0f, &xv);
    auto w = Weight(c.n, c.k, &wv);
    Tensor bias = Random({c.n}, 0.1f, &bv), res = Random({c.rows, c.n}, 1.0f, &rv);
    Tensor g = Random({c.n}, 1.0f, &gv), b = Random({c.n}, 0.5f, &betav);
    Kernels& k = be_.kernels();
    for (const bool with_bias : {true, false}) {
      const std::string at = what + " " + std::string(DTypeName(t_)) + " " + std::to_string(c.rows) + "x" +
                             std::to_string(c.n) + "x" + std::to_string(c.k) + (with_bias ? " bias" : "");
      const Tensor* bp = with_bias ? &bias : nullptr;
      Tensor y = Empty({c.rows, c.n}), want = Empty({c.rows, c.n}), got = Empty({c.rows, c.n});
      ASSERT_TRUE(k.Linear(x, c.rows, ld, *w, bp, Epilogue::kNone, y).ok()) << at;
      ASSERT_TRUE(k.LayerNorm(y, &res, g, b, 1e-12f, want).ok()) << at;
      std::memset(got.data(), 0xab, got.bytes());
      testing::LaunchNames launches;
      be_.SetLaunchHook(&launches);
      const Status s = k.LinearAddLayerNorm(x, c.rows, ld, *w, bp, res, g, b, 1e-12f, got);
      be_.SetLaunchHook(nullptr);
      ASSERT_TRUE(s.ok()) << at << ": " << s.ToString();
      EXPECT_EQ(std::memcmp(got.data(), want.data(), got.bytes()), 0) << at;
      // Two launches only where the Linear alone would share out its columns.
      const bool two = CpuLinearByColumns(be_, c.rows, *w);
      ASSERT_EQ(launches.names.size(), two ? 2u : 1u) << at;
      if (!two) {
        EXPECT_NE(launches.names[0].find("_rows"), std::string::npos) << launches.names[0];
        EXPECT_NE(launches.names[0].find("_add_layer_norm"), std::string::npos) << launches.names[0];
      } else {
        EXPECT_EQ(launches.names[1].rfind("cpu_add_layer_norm_", 0), 0u) << launches.names[1];
      }
      // Against double precision, the first rows: the Linear's sum, then LayerNorm.
      std::vector<float> out(static_cast<size_t>(got.numel()));
      ToFloat(t_, got.data(), out.data(), out.size());
      const double tol = t_ == DType::kF32 ? 2e-4 : t_ == DType::kF16 ? 1e-2 : 6e-2;
      for (int64_t r = 0; r < std::min<int64_t>(c.rows, 4); ++r) {
        std::vector<double> v(static_cast<size_t>(c.n));
        double mean = 0, var = 0;
        for (int64_t j = 0; j < c.n; ++j) {
          double acc = with_bias ? bv[j] : 0.0;
          for (int64_t q = 0; q < c.k; ++q) acc += double{xv[r * ld + q]} * wv[j * c.k + q];
          v[j] = acc + rv[r * c.n + j];
          mean += v[j];
        }
        mean /= static_cast<double>(c.n);
        for (double e : v) var += (e - mean) * (e - mean);
        const double rstd = 1 / std::sqrt(var / static_cast<double>(c.n) + 1e-12);
        for (int64_t j = 0; j < c.n; ++j) {
          const double ref = (v[j] - mean) * rstd * gv[j] + betav[j];
          ASSERT_NEAR(out[r * c.n + j], ref, tol * (1 + std::fabs(ref))) << at << " at [" << r << "][" << j << "]";
        }
      }
    }
  }

 private:
  CpuBackend& be_;
  DType t_;
  std::mt19937 rng_;
};

// Few rows (one task); whole-row tasks over a right-edge panel, with x's rows strided;
// whole-row tasks of several K blocks and six column blocks (F16's groups of four and
// two); and weights past any core's L2 (6 MB in FP32, 3 MB in 16 bits) over few rows.
const std::vector<Case> kCases = {{5, 40, 24}, {130, 200, 96, 104}, {400, 520, 300}, {64, 384, 4096}};

TEST(LinearAddLayerNorm, EveryFp32VariantGivesTheLinearThenTheLayerNormBitForBit) {
  for (const MicroKernelVariant& v : AvailableMicroKernels()) {
    ScopedMicroKernels forced(v.kernels);
    CpuBackend be(2);
    ASSERT_TRUE(be.kernels().FusesAddLayerNorm());
    for (const DType t : {DType::kF32, DType::kF16}) {
      FusedLinear f(be, t, 7);
      for (const Case& c : kCases) f.Check(c, v.isa);
    }
  }
}

TEST(LinearAddLayerNorm, EveryBf16VariantGivesTheLinearThenTheLayerNormBitForBit) {
  for (const Bf16Kernels& v : AvailableBf16Kernels()) {
    ScopedBf16Kernels forced(v);
    CpuBackend be(2);
    FusedLinear f(be, DType::kBF16, 11);
    for (const Case& c : kCases) f.Check(c, v.isa);
  }
}

TEST(LinearAddLayerNorm, WhatDoesNotFitIsRefusedInOneLine) {
  CpuBackend be(2);
  Kernels& k = be.kernels();
  FusedLinear f(be, DType::kF32, 3);
  std::vector<float> wv;
  auto w = f.Weight(40, 24, &wv);
  Tensor x = f.Random({8, 24}, 1.0f), res = f.Random({8, 40}, 1.0f), g = f.Random({40}, 1.0f);
  Tensor out = f.Empty({8, 40});
  auto expect_invalid = [](const Status& s, const std::string& needle) {
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
    EXPECT_EQ(s.message().find('\n'), std::string::npos) << s.message();
  };
  expect_invalid(k.LinearAddLayerNorm(x, 9, 24, *w, nullptr, res, g, g, 1e-12f, out), "too small for 9 rows");
  Tensor wide = f.Empty({4, 80});
  expect_invalid(k.LinearAddLayerNorm(x, 8, 24, *w, nullptr, res, g, g, 1e-12f, wide), "is not rows of 40");
  Tensor short_res = f.Random({7, 40}, 1.0f);
  expect_invalid(k.LinearAddLayerNorm(x, 8, 24, *w, nullptr, short_res, g, g, 1e-12f, out), "inconsistent shapes");
  expect_invalid(k.LinearAddLayerNorm(x, 8, 24, *w, nullptr, res, g, g, -1.0f, out), "eps must be > 0");
  Tensor half = std::move(Tensor::Empty(be, DType::kBF16, {8, 40})).value();
  expect_invalid(k.LinearAddLayerNorm(x, 8, 24, *w, nullptr, res, g, g, 1e-12f, half), "one float dtype");
  // A residual of as many values in rows of another width, with gamma to match it.
  Tensor folded = f.Random({16, 20}, 1.0f), g20 = f.Random({20}, 1.0f);
  expect_invalid(k.LinearAddLayerNorm(x, 8, 24, *w, nullptr, folded, g20, g20, 1e-12f, out), "is not rows of 40");
  // The output written over the residual (or the input) before they are read.
  expect_invalid(k.LinearAddLayerNorm(x, 8, 24, *w, nullptr, res, g, g, 1e-12f, res), "overlaps the residual");
  Tensor wide_x = f.Random({8, 40}, 1.0f);
  expect_invalid(k.LinearAddLayerNorm(wide_x, 8, 40, *w, nullptr, res, g, g, 1e-12f, wide_x), "overlaps the input");
}

}  // namespace
}  // namespace tierscope
