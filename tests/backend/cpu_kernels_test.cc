// What only the CPU backend does: its embedding kernel refuses ids outside the tables,
// its allocator's accounting, and a launch runs every task of its grid. The ops against
// their references, on every backend, are tests/backend/backend_ops_test.cc.
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

void PrintTo(const Case& c, std::ostream* os) { *os << DTypeName(c.dtype) << " tol " << c.tol; }

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
    const Status s = be_.kernels().EmbeddingSum(di, dti, dw, dp, dt, out);
    EXPECT_EQ(s.code(), StatusCode::kOutOfRange) << s.ToString();
    EXPECT_NE(s.message().find(what), std::string::npos) << s.message();
  }
}

INSTANTIATE_TEST_SUITE_P(AllDTypes, CpuKernelsTest,
                         ::testing::Values(Case{DType::kF32, 1e-5}, Case{DType::kF16, 4e-3},
                                           Case{DType::kBF16, 2e-2}),
                         [](const auto& info) { return std::string(DTypeTag(info.param.dtype)); });

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
