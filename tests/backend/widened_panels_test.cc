// 16-bit weight panels widened to FP32 once a launch (widened_panels.h): the first claim of
// a column block widens it and later ones read it, a claim during another's widening is
// refused (the caller widens its own tile), every block is widened once under concurrent
// claims; and a Linear whose launch widens its panels once gives, on every FP32 variant,
// each row block's own Linear (widened once a task, or in the registers) bit for bit.
#include "backend/cpu/widened_panels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/micro_kernel.h"
#include "backend/cpu/micro_kernel_bf16.h"
#include "test_util.h"

namespace tierscope {
namespace {

// A widening that counts its calls per block (blocks of kBlock elements from g_base) and,
// where g_hold is set, waits in block 0 until it is cleared.
constexpr int64_t kBlock = 8;
const uint16_t* g_base = nullptr;
std::atomic<int> g_calls[64];
std::atomic<bool> g_hold{false}, g_holding{false};

void CountingWiden(const uint16_t* src, float* dst, int64_t n) {
  const int64_t block = (src - g_base) / kBlock;
  g_calls[block].fetch_add(1);
  if (block == 0 && g_hold.load()) {
    g_holding.store(true);
    while (g_hold.load()) std::this_thread::yield();
  }
  BF16ToFloat(src, dst, static_cast<size_t>(n));
}

// Element i's value: exact in BF16 (halves up to 100).
float ValueAt(int64_t i) { return 0.5f * static_cast<float>(i % 200 + 1); }

std::vector<uint16_t> Bf16Values(int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = ValueAt(i);
  std::vector<uint16_t> bits(v.size());
  FloatToBF16(v.data(), bits.data(), v.size());
  return bits;
}

void ResetCalls() {
  for (auto& c : g_calls) c.store(0);
}

TEST(WidenedPanels, TheFirstClaimWidensAColumnBlockAndLaterClaimsReadIt) {
  const std::vector<uint16_t> src = Bf16Values(20);  // 3 blocks of 8: the last holds 4
  g_base = src.data();
  ResetCalls();
  std::vector<float> dst(24, std::nanf(""));
  WidenedPanels w(CountingWiden, src.data(), dst.data(), kBlock, 20, 3);
  ASSERT_TRUE(w.on());
  ASSERT_EQ(w.Claim(0), dst.data());
  for (int i = 0; i < 8; ++i) EXPECT_EQ(dst[i], ValueAt(i)) << i;
  dst[0] = -7.0f;  // a second claim must not widen again
  EXPECT_EQ(w.Claim(0), dst.data());
  EXPECT_EQ(dst[0], -7.0f);
  EXPECT_EQ(g_calls[0].load(), 1);
  ASSERT_EQ(w.Claim(2), dst.data() + 16);
  for (int i = 16; i < 20; ++i) EXPECT_EQ(dst[i], ValueAt(i)) << i;
  for (int i = 20; i < 24; ++i) EXPECT_TRUE(std::isnan(dst[i])) << "past the last element, at " << i;
  EXPECT_EQ(g_calls[1].load(), 0);  // never claimed, never widened
  WidenedPanels off;
  EXPECT_FALSE(off.on());
  EXPECT_EQ(off.Claim(0), nullptr);
}

TEST(WidenedPanels, AClaimWhileAnotherWidensIsNullAndConcurrentClaimsWidenEachBlockOnce) {
  const int64_t blocks = 64;
  const std::vector<uint16_t> src = Bf16Values(blocks * kBlock);
  g_base = src.data();
  ResetCalls();
  std::vector<float> dst(src.size());
  {
    WidenedPanels w(CountingWiden, src.data(), dst.data(), kBlock, blocks * kBlock, blocks);
    g_holding.store(false);
    g_hold.store(true);
    std::thread first([&] { EXPECT_EQ(w.Claim(0), dst.data()); });
    while (!g_holding.load()) std::this_thread::yield();
    EXPECT_EQ(w.Claim(0), nullptr) << "block 0 is being widened by the other thread";
    g_hold.store(false);
    first.join();
    EXPECT_EQ(w.Claim(0), dst.data());
    EXPECT_EQ(g_calls[0].load(), 1);
  }
  for (int round = 0; round < 50; ++round) {
    ResetCalls();
    std::fill(dst.begin(), dst.end(), 0.0f);
    WidenedPanels w(CountingWiden, src.data(), dst.data(), kBlock, blocks * kBlock, blocks);
    auto claim_all = [&] {
      for (int64_t b = 0; b < blocks; ++b) {
        if (const float* p = w.Claim(b); p != nullptr) {
          for (int64_t i = 0; i < kBlock; ++i) {
            ASSERT_EQ(p[i], ValueAt(b * kBlock + i)) << "block " << b << " read before ready";
          }
        }
      }
    };
    std::thread other(claim_all);
    claim_all();
    other.join();
    for (int64_t b = 0; b < blocks; ++b) ASSERT_EQ(g_calls[b].load(), 1) << "round " << round << " block " << b;
  }
}

Tensor DeviceRows(CpuBackend& be, DType t, const std::vector<float>& v, int64_t r0, int64_t rows, int64_t cols) {
  Tensor d = std::move(Tensor::Empty(be, t, {rows, cols})).value();
  FromFloat(v.data() + r0 * cols, t, d.data(), static_cast<size_t>(rows * cols));
  return d;
}

// Many rows on 2 workers (several row blocks: the panels widened once for the launch where
// the variant widens into scratch) against each 48-row block alone on 1 worker (one row
// block: widened once a task, or in the registers): F16 and BF16 panels (BF16 as [K][16],
// the "fp32" BF16 variant's), FP32 and 16-bit activations, K blocks with a remainder and a
// right-edge column block, bias and GELU.
TEST(WidenedPanels, ALinearWideningOnceALaunchGivesEachRowBlocksOwnLinearBitForBit) {
  ScopedBf16Kernels fp32_bf16(AvailableBf16Kernels().back());
  ASSERT_EQ(std::string(AvailableBf16Kernels().back().isa), "fp32");
  const int64_t m = 480, k = 300, n = 200, block = 48;
  std::mt19937 rng(13);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(m * k)), w(static_cast<size_t>(n * k)), b(static_cast<size_t>(n));
  for (float& v : x) v = d(rng);
  for (float& v : w) v = 0.1f * d(rng);
  for (float& v : b) v = d(rng);
  int widened_once = 0;
  for (const MicroKernelVariant& v : AvailableMicroKernels()) {
    ScopedMicroKernels forced(v.kernels);
    CpuBackend many(2), one(1);
    for (const DType wt : {DType::kF16, DType::kBF16}) {
      auto w_many = many.kernels().PackWeight(testing::Fp32View(w, {n, k}), wt);
      auto w_one = one.kernels().PackWeight(testing::Fp32View(w, {n, k}), wt);
      ASSERT_TRUE(w_many.ok() && w_one.ok());
      const bool once = CpuLinearWidensPanelsOnce(many, m, **w_many);
      EXPECT_EQ(once, v.kernels.bf16.widen != nullptr) << v.isa;
      EXPECT_FALSE(CpuLinearWidensPanelsOnce(one, block, **w_one)) << v.isa << ": one row block";
      widened_once += once;
      for (const DType xt : {DType::kF32, wt}) {
        const std::string at = std::string(v.isa) + " " + std::string(DTypeName(wt)) + " panels, " + std::string(DTypeName(xt)) + " rows";
        Tensor bias_many = DeviceRows(many, xt, b, 0, 1, n), bias_one = DeviceRows(one, xt, b, 0, 1, n);
        Tensor y = std::move(Tensor::Empty(many, xt, {m, n})).value();
        const Status s = many.kernels().Linear(DeviceRows(many, xt, x, 0, m, k), m, k, **w_many, &bias_many,
                                               Epilogue::kGelu, y);
        ASSERT_TRUE(s.ok()) << at << ": " << s.ToString();
        const size_t row_bytes = static_cast<size_t>(n) * DTypeSize(xt);
        for (int64_t r0 = 0; r0 < m; r0 += block) {
          Tensor yb = std::move(Tensor::Empty(one, xt, {block, n})).value();
          ASSERT_TRUE(one.kernels()
                          .Linear(DeviceRows(one, xt, x, r0, block, k), block, k, **w_one, &bias_one,
                                  Epilogue::kGelu, yb)
                          .ok());
          ASSERT_EQ(std::memcmp(static_cast<const std::byte*>(y.data()) + r0 * row_bytes, yb.data(), block * row_bytes),
                    0)
              << at << ", rows from " << r0;
        }
      }
    }
  }
  // Every host runs the scalar variant, which widens into scratch.
  EXPECT_GE(widened_once, 2);
}

// The shared scratch the panels are widened into is kept, and counted in the backend's live
// and peak bytes as one allocation, by the growth Kernels::LinearWorkspaceGrowth says, which
// is 0 from then on; none for rows too few to widen once.
TEST(WidenedPanels, TheWorkspaceIsCountedInLiveAndPeakBytesOnceAtTheSizeTheKernelsSay) {
  int checked = 0;
  for (const MicroKernelVariant& v : AvailableMicroKernels()) {
    ScopedMicroKernels forced(v.kernels);
    CpuBackend be(2);
    const int64_t m = 480, k = 64, n = 100;
    std::vector<float> w(static_cast<size_t>(n * k), 0.25f), x(static_cast<size_t>(m * k), 1.0f);
    auto packed = be.kernels().PackWeight(testing::Fp32View(w, {n, k}), DType::kF16);
    ASSERT_TRUE(packed.ok());
    const int64_t said = be.kernels().LinearWorkspaceGrowth(m, **packed);
    const bool once = CpuLinearWidensPanelsOnce(be, m, **packed);
    EXPECT_EQ(said, once ? (n + kNR - 1) / kNR * kNR * k * 4 : 0) << v.isa;
    // 12 rows on 2 workers: two blocks of 6, each kernel call widening in its registers.
    EXPECT_FALSE(CpuLinearWidensPanelsOnce(be, 12, **packed)) << v.isa;
    EXPECT_EQ(be.kernels().LinearWorkspaceGrowth(12, **packed), 0) << v.isa;
    Tensor dx = DeviceRows(be, DType::kF32, x, 0, m, k);
    Tensor y = std::move(Tensor::Empty(be, DType::kF32, {m, n})).value();
    const MemoryStats before = be.memory_stats();
    ASSERT_TRUE(be.kernels().Linear(dx, m, k, **packed, nullptr, Epilogue::kNone, y).ok());
    const MemoryStats after = be.memory_stats();
    EXPECT_EQ(after.live_bytes - before.live_bytes, said) << v.isa;
    EXPECT_GE(after.peak_bytes, before.live_bytes + said) << v.isa;
    EXPECT_EQ(after.allocations, before.allocations + (once ? 1 : 0)) << v.isa;
    EXPECT_EQ(be.kernels().LinearWorkspaceGrowth(m, **packed), 0) << v.isa << ": grown already";
    ASSERT_TRUE(be.kernels().Linear(dx, m, k, **packed, nullptr, Epilogue::kNone, y).ok());
    EXPECT_EQ(be.memory_stats().live_bytes, after.live_bytes) << v.isa << ": kept, not grown again";
    EXPECT_EQ(static_cast<const float*>(y.data())[0], 16.0f);  // 64 x 0.25
    // A larger weight grows it: the old buffer freed first, so live bytes hold the new one.
    std::vector<float> w2(static_cast<size_t>(3 * n * k), 0.5f);
    auto big = be.kernels().PackWeight(testing::Fp32View(w2, {3 * n, k}), DType::kF16);
    ASSERT_TRUE(big.ok());
    const int64_t growth = be.kernels().LinearWorkspaceGrowth(m, **big);
    Tensor y2 = std::move(Tensor::Empty(be, DType::kF32, {m, 3 * n})).value();
    const MemoryStats mid = be.memory_stats();
    ASSERT_TRUE(be.kernels().Linear(dx, m, k, **big, nullptr, Epilogue::kNone, y2).ok());
    const MemoryStats grown = be.memory_stats();
    EXPECT_EQ(grown.live_bytes - mid.live_bytes, growth) << v.isa;
    EXPECT_EQ(grown.peak_bytes, std::max(mid.peak_bytes, grown.live_bytes)) << v.isa << ": never old and new at once";
    EXPECT_EQ(grown.frees - mid.frees, once ? 1 : 0) << v.isa;
    if (once) EXPECT_EQ(growth, ((3 * n + kNR - 1) / kNR - (n + kNR - 1) / kNR) * kNR * k * 4) << v.isa;
    checked += once;
  }
  EXPECT_GE(checked, 1);  // the scalar variant widens into scratch on every host
}

// A hook that runs a launch's tasks twice (as the kernel replays do), overwriting the
// shared scratch with NaN between the runs: the second run must widen again.
class RunTwicePoisoningTheWorkspace : public LaunchHook {
 public:
  explicit RunTwicePoisoningTheWorkspace(CpuBackend& be) : be_(be) {}
  Status OnLaunch(Backend&, const LaunchDesc&, FunctionRef<StatusOr<KernelRun>()> run) override {
    TS_RETURN_IF_ERROR(run().status());
    const size_t floats = be_.shared_scratch_floats();
    TS_ASSIGN_OR_RETURN(float* ws, be_.EnsureSharedScratch(floats));
    std::fill(ws, ws + floats, std::nanf(""));
    return run().status();
  }

 private:
  CpuBackend& be_;
};

// Each run of a launch's tasks widens afresh: a replay reads no panels the run before it
// widened (it times what the workload runs), and gives the same outputs, for the Linear and
// the Linear with the residual add and LayerNorm.
TEST(WidenedPanels, EveryRunOfALaunchWidensItsPanelsAgain) {
  for (const MicroKernelVariant& v : AvailableMicroKernels()) {
    ScopedMicroKernels forced(v.kernels);
    CpuBackend be(2);
    const int64_t m = 480, k = 96, n = 112;
    std::mt19937 rng(3);
    std::normal_distribution<float> d(0.0f, 1.0f);
    std::vector<float> w(static_cast<size_t>(n * k)), x(static_cast<size_t>(m * k)), r(static_cast<size_t>(m * n));
    for (float& e : w) e = 0.1f * d(rng);
    for (float& e : x) e = d(rng);
    for (float& e : r) e = d(rng);
    const std::vector<float> ones(static_cast<size_t>(n), 1.0f), zeros(static_cast<size_t>(n), 0.0f);
    auto packed = be.kernels().PackWeight(testing::Fp32View(w, {n, k}), DType::kF16);
    ASSERT_TRUE(packed.ok());
    if (!CpuLinearWidensPanelsOnce(be, m, **packed)) continue;  // AVX-512: in the registers
    Tensor dx = DeviceRows(be, DType::kF32, x, 0, m, k), res = DeviceRows(be, DType::kF32, r, 0, m, n);
    Tensor g = DeviceRows(be, DType::kF32, ones, 0, 1, n), b = DeviceRows(be, DType::kF32, zeros, 0, 1, n);
    Tensor plain = std::move(Tensor::Empty(be, DType::kF32, {m, n})).value();
    Tensor twice = std::move(Tensor::Empty(be, DType::kF32, {m, n})).value();
    for (const bool fused : {false, true}) {
      auto op = [&](Tensor& y) {
        return fused ? be.kernels().LinearAddLayerNorm(dx, m, k, **packed, nullptr, res, g, b, 1e-12f, y)
                     : be.kernels().Linear(dx, m, k, **packed, nullptr, Epilogue::kNone, y);
      };
      ASSERT_TRUE(op(plain).ok());
      RunTwicePoisoningTheWorkspace hook(be);
      be.SetLaunchHook(&hook);
      const Status s = op(twice);
      be.SetLaunchHook(nullptr);
      ASSERT_TRUE(s.ok()) << s.ToString();
      EXPECT_EQ(std::memcmp(plain.data(), twice.data(), plain.bytes()), 0) << v.isa << (fused ? " fused" : "");
    }
  }
}

}  // namespace
}  // namespace tierscope
