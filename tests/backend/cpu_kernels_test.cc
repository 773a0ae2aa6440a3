// CPU kernels against plain double-precision references (the llm.c convention: a
// simple reference beside every optimised kernel), for every dtype.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <random>
#include <vector>

#include "backend/cpu/cpu_backend.h"

namespace tierscope {
namespace {

struct Case {
  DType dtype;
  double tol;  // relative to the reference's scale
};

class CpuKernelsTest : public ::testing::TestWithParam<Case> {
 protected:
  CpuBackend be_{2};
  std::mt19937 rng_{7};

  std::vector<float> Random(size_t n, float scale = 1.0f) {
    std::normal_distribution<float> d(0.0f, scale);
    std::vector<float> v(n);
    for (float& x : v) x = d(rng_);
    return v;
  }
  // Rounds values through `t` so references see exactly what the kernel sees.
  static std::vector<float> Round(std::vector<float> v, DType t) {
    std::vector<uint16_t> tmp(v.size());
    if (t == DType::kF16) {
      FloatToHalf(v.data(), tmp.data(), v.size());
      HalfToFloat(tmp.data(), v.data(), v.size());
    } else if (t == DType::kBF16) {
      FloatToBF16(v.data(), tmp.data(), v.size());
      BF16ToFloat(tmp.data(), v.data(), v.size());
    }
    return v;
  }
  Tensor Device(const std::vector<float>& v, Shape shape, DType t) {
    Tensor d = std::move(Tensor::Empty(be_, t, std::move(shape))).value();
    FromFloat(v.data(), t, d.data(), v.size());
    return d;
  }
  Tensor DeviceI32(const std::vector<int32_t>& v, Shape shape) {
    Tensor d = std::move(Tensor::Empty(be_, DType::kI32, std::move(shape))).value();
    std::memcpy(d.data(), v.data(), v.size() * 4);
    return d;
  }
  static std::vector<float> Host(const Tensor& t) {
    std::vector<float> v(static_cast<size_t>(t.numel()));
    ToFloat(t.dtype(), t.data(), v.data(), v.size());
    return v;
  }
  static void ExpectClose(const std::vector<float>& got, const std::vector<double>& want,
                          double tol, const char* what) {
    ASSERT_EQ(got.size(), want.size());
    double scale = 1e-6;
    for (double w : want) scale = std::max(scale, std::fabs(w));
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_NEAR(got[i], want[i], tol * scale) << what << " at " << i;
    }
  }
};

TEST_P(CpuKernelsTest, LinearMatchesReferenceWithBiasAndEpilogues) {
  const DType t = GetParam().dtype;
  // Odd sizes: M not a multiple of the 6-row micro-kernel or 48-row tile, N not a
  // multiple of 16, K beyond one 256-deep block.
  const int64_t M = 53, N = 37, K = 300;
  auto x = Round(Random(M * K), t), w = Round(Random(N * K, 0.1f), t), b = Round(Random(N), t);
  HostTensor hw{DType::kF32, {N, K}, reinterpret_cast<const std::byte*>(w.data()), w.size() * 4};
  auto packed = std::move(CpuPackWeight(be_, hw, t)).value();
  Tensor dx = Device(x, {M, K}, t), db = Device(b, {N}, t);
  for (Epilogue e : {Epilogue::kNone, Epilogue::kGelu, Epilogue::kTanh}) {
    Tensor dy = std::move(Tensor::Empty(be_, t, {M, N})).value();
    ASSERT_TRUE(CpuLinear(be_, dx, M, K, *packed, &db, e, dy).ok());
    std::vector<double> ref(M * N);
    for (int64_t m = 0; m < M; ++m) {
      for (int64_t n = 0; n < N; ++n) {
        double acc = b[n];
        for (int64_t k = 0; k < K; ++k) acc += double{x[m * K + k]} * w[n * K + k];
        if (e == Epilogue::kGelu) acc = 0.5 * acc * (1 + std::erf(acc / std::sqrt(2.0)));
        if (e == Epilogue::kTanh) acc = std::tanh(acc);
        ref[m * N + n] = acc;
      }
    }
    ExpectClose(Host(dy), ref, GetParam().tol, "linear");
  }
}

TEST_P(CpuKernelsTest, LinearReadsRowsWithAStride) {
  const DType t = GetParam().dtype;
  const int64_t rows = 3, stride = 40, K = 16, N = 5;
  auto x = Round(Random(rows * stride), t), w = Round(Random(N * K), t);
  HostTensor hw{DType::kF32, {N, K}, reinterpret_cast<const std::byte*>(w.data()), w.size() * 4};
  auto packed = std::move(CpuPackWeight(be_, hw, t)).value();
  Tensor dx = Device(x, {rows, stride}, t);
  Tensor dy = std::move(Tensor::Empty(be_, t, {rows, N})).value();
  ASSERT_TRUE(CpuLinear(be_, dx, rows, stride, *packed, nullptr, Epilogue::kNone, dy).ok());
  std::vector<double> ref(rows * N);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < K; ++k) ref[r * N + n] += double{x[r * stride + k]} * w[n * K + k];
  ExpectClose(Host(dy), ref, GetParam().tol, "strided linear");
}

TEST_P(CpuKernelsTest, AttentionMatchesReferenceWithKeyMask) {
  // B = 2: tasks per 32-query block; B = 9: one task per (head, sample).
  for (const int64_t B : {int64_t{2}, int64_t{9}}) {
  SCOPED_TRACE("batch " + std::to_string(B));
  const DType t = GetParam().dtype;
  const int64_t S = 37, heads = 3, D = 8, H = heads * D;
  auto qkv = Round(Random(B * S * 3 * H), t);
  std::vector<int32_t> mask(B * S, 1);
  for (int64_t s = 20; s < S; ++s) mask[1 * S + s] = 0;  // sample 1 padded after 20
  mask[0 * S + 5] = 0;                                    // a masked key mid-sequence
  Tensor dq = Device(qkv, {B, S, 3 * H}, t), dm = DeviceI32(mask, {B, S});
  Tensor dout = std::move(Tensor::Empty(be_, t, {B, S, H})).value();
  ASSERT_TRUE(CpuAttention(be_, dq, dm, static_cast<int>(heads), dout).ok());
  std::vector<double> ref(B * S * H);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < S; ++i) {
        std::vector<double> p(S);
        double mx = -1e300;
        for (int64_t j = 0; j < S; ++j) {
          double s = 0;
          for (int64_t d = 0; d < D; ++d)
            s += double{qkv[(b * S + i) * 3 * H + h * D + d]} * qkv[(b * S + j) * 3 * H + H + h * D + d];
          s /= std::sqrt(double(D));
          if (!mask[b * S + j]) s = -1e30;
          p[j] = s;
          mx = std::max(mx, s);
        }
        double sum = 0;
        for (double& v : p) sum += (v = std::exp(v - mx));
        for (int64_t d = 0; d < D; ++d) {
          double o = 0;
          for (int64_t j = 0; j < S; ++j) o += p[j] / sum * qkv[(b * S + j) * 3 * H + 2 * H + h * D + d];
          ref[(b * S + i) * H + h * D + d] = o;
        }
      }
  ExpectClose(Host(dout), ref, GetParam().tol, "attention");
  }
}

TEST_P(CpuKernelsTest, AttentionWithEveryKeyMaskedAveragesAllValues) {
  // Hugging Face adds finfo.min to every score: all equal, so softmax is uniform.
  const DType t = GetParam().dtype;
  const int64_t S = 4, H = 2;
  auto qkv = Round(Random(S * 3 * H), t);
  Tensor dq = Device(qkv, {1, S, 3 * H}, t), dm = DeviceI32(std::vector<int32_t>(S, 0), {1, S});
  Tensor dout = std::move(Tensor::Empty(be_, t, {1, S, H})).value();
  ASSERT_TRUE(CpuAttention(be_, dq, dm, 1, dout).ok());
  std::vector<double> ref(S * H);
  for (int64_t i = 0; i < S; ++i)
    for (int64_t d = 0; d < H; ++d)
      for (int64_t j = 0; j < S; ++j) ref[i * H + d] += qkv[j * 3 * H + 2 * H + d] / double(S);
  ExpectClose(Host(dout), ref, GetParam().tol, "masked attention");
}

TEST_P(CpuKernelsTest, LayerNormWithResidualMatchesReference) {
  const DType t = GetParam().dtype;
  const int64_t R = 21, C = 48;
  auto x = Round(Random(R * C, 2.0f), t), r = Round(Random(R * C), t);
  auto g = Round(Random(C), t), b = Round(Random(C), t);
  Tensor dx = Device(x, {R, C}, t), dr = Device(r, {R, C}, t), dg = Device(g, {C}, t),
         db = Device(b, {C}, t);
  Tensor dy = std::move(Tensor::Empty(be_, t, {R, C})).value();
  ASSERT_TRUE(CpuLayerNorm(be_, dx, &dr, dg, db, 1e-5f, dy).ok());
  std::vector<double> ref(R * C);
  for (int64_t i = 0; i < R; ++i) {
    double mean = 0, var = 0;
    for (int64_t c = 0; c < C; ++c) mean += double{x[i * C + c]} + r[i * C + c];
    mean /= C;
    for (int64_t c = 0; c < C; ++c) var += std::pow(double{x[i * C + c]} + r[i * C + c] - mean, 2);
    var /= C;
    for (int64_t c = 0; c < C; ++c)
      ref[i * C + c] = (double{x[i * C + c]} + r[i * C + c] - mean) / std::sqrt(var + 1e-5) * g[c] + b[c];
  }
  ExpectClose(Host(dy), ref, GetParam().tol, "layer norm");
}

TEST_P(CpuKernelsTest, EmbeddingSumAddsWordPositionAndTypeRows) {
  const DType t = GetParam().dtype;
  const int64_t V = 11, P = 9, T = 2, H = 5, B = 2, S = 7;
  auto word = Round(Random(V * H), t), pos = Round(Random(P * H), t), type = Round(Random(T * H), t);
  std::vector<int32_t> ids(B * S), tt(B * S);
  for (int64_t i = 0; i < B * S; ++i) {
    ids[i] = static_cast<int32_t>((i * 5) % V);
    tt[i] = static_cast<int32_t>(i % 2);
  }
  Tensor dw = Device(word, {V, H}, t), dp = Device(pos, {P, H}, t), dt = Device(type, {T, H}, t);
  Tensor di = DeviceI32(ids, {B, S}), dti = DeviceI32(tt, {B, S});
  Tensor out = std::move(Tensor::Empty(be_, t, {B, S, H})).value();
  ASSERT_TRUE(CpuEmbeddingSum(be_, di, dti, dw, dp, dt, out).ok());
  std::vector<double> ref(B * S * H);
  for (int64_t i = 0; i < B * S; ++i)
    for (int64_t h = 0; h < H; ++h)
      ref[i * H + h] = double{word[ids[i] * H + h]} + pos[(i % S) * H + h] + type[tt[i] * H + h];
  ExpectClose(Host(out), ref, GetParam().tol, "embedding");
}

TEST_P(CpuKernelsTest, EmbeddingIdsOutsideTheTablesAreRefusedByTheKernel) {
  // The kernel checks its own indices: nothing outside a table is read, whoever called it.
  const DType t = GetParam().dtype;
  const int64_t V = 11, P = 9, T = 2, H = 5, B = 1, S = 4;
  Tensor dw = Device(Random(V * H), {V, H}, t), dp = Device(Random(P * H), {P, H}, t);
  Tensor dt = Device(Random(T * H), {T, H}, t);
  Tensor out = std::move(Tensor::Empty(be_, t, {B, S, H})).value();
  for (const auto& [ids, types, what] :
       {std::tuple{std::vector<int32_t>{1, 2, 11, 3}, std::vector<int32_t>{0, 0, 0, 0}, "input id 11 at position 2"},
        std::tuple{std::vector<int32_t>{-1, 2, 3, 4}, std::vector<int32_t>{0, 0, 0, 0}, "input id -1 at position 0"},
        std::tuple{std::vector<int32_t>{1, 2, 3, 4}, std::vector<int32_t>{0, 0, 0, 2}, "token type 2 at position 3"}}) {
    Tensor di = DeviceI32(ids, {B, S}), dti = DeviceI32(types, {B, S});
    const Status s = CpuEmbeddingSum(be_, di, dti, dw, dp, dt, out);
    EXPECT_EQ(s.code(), StatusCode::kOutOfRange) << s.ToString();
    EXPECT_NE(s.message().find(what), std::string::npos) << s.message();
  }
}

INSTANTIATE_TEST_SUITE_P(AllDTypes, CpuKernelsTest,
                         ::testing::Values(Case{DType::kF32, 1e-5}, Case{DType::kF16, 4e-3},
                                           Case{DType::kBF16, 2e-2}),
                         [](const auto& info) { return std::string(DTypeTag(info.param.dtype)); });

TEST(CpuBackendTest, CopyIntoRejectsAnOutOfRangeDestination) {
  CpuBackend be(1);
  Tensor src = std::move(Tensor::Empty(be, DType::kF32, {4})).value();
  Tensor dst = std::move(Tensor::Empty(be, DType::kF32, {6})).value();
  EXPECT_TRUE(CpuCopyInto(be, src, dst, 8).ok());
  Status s = CpuCopyInto(be, src, dst, 12);
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange);
}

TEST(CpuBackendTest, MemoryAccountingTracksLiveAndPeakBytes) {
  CpuBackend be(1);
  const int64_t base = be.memory_stats().live_bytes;
  {
    Tensor a = std::move(Tensor::Empty(be, DType::kF32, {1000})).value();
    {
      Tensor b = std::move(Tensor::Empty(be, DType::kF16, {1000})).value();
      EXPECT_EQ(be.memory_stats().live_bytes, base + 6000);
    }
    EXPECT_EQ(be.memory_stats().live_bytes, base + 4000);
    EXPECT_EQ(be.memory_stats().peak_bytes, base + 6000);
    be.ResetPeakMemory();
    EXPECT_EQ(be.memory_stats().peak_bytes, base + 4000);
  }
  EXPECT_EQ(be.memory_stats().live_bytes, base);
}

TEST(CpuBackendTest, LaunchRunsEveryTaskOfTheGrid) {
  CpuBackend be(2);
  std::vector<std::atomic<int>> hits(24);
  LaunchDesc desc;
  desc.kernel = "test_kernel";
  desc.grid = Dim3{2, 3, 4};
  ASSERT_TRUE(be.Launch(desc, [&](int64_t t, int) { hits[t].fetch_add(1); }).ok());
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);
  desc.grid = Dim3{0, 1, 1};
  EXPECT_FALSE(be.Launch(desc, [&](int64_t, int) {}).ok());
}

}  // namespace
}  // namespace tierscope
