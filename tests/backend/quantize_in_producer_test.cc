// INT8 activations quantized by the op that produces them (Kernels::NewQuantizedRows,
// QuantizeRows, LinearInt8, LayerNormQuantized, AttentionQuantized), on every INT8
// variant this CPU runs (forced, not only the one picked): the codes a LayerNorm, an
// attention (replayed or not) or an INT8 Linear writes are the bytes QuantizeRows writes
// from the FP32 rows they would have written; a Linear from codes gives what a Linear from
// FP32 rows gives, bit for bit, and so does one with the residual add and LayerNorm in its
// epilogue (LinearInt8AddLayerNorm) against the Linear and the LayerNorm apart; every
// variant's quantization writes the same bytes; and what does not fit the contract is
// refused in one line.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/micro_kernel_bf16.h"
#include "backend/cpu/micro_kernel.h"
#include "backend/cpu/micro_kernel_int8.h"
#include "backend/cpu/quantize_rows.h"
#include "core/int_math.h"
#include "test_util.h"

namespace tierscope {
namespace {

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();

// Bytes of the codes and parameters of q, for comparing two QuantizedRows exactly.
std::vector<uint8_t> Bytes(const QuantizedRows& q) {
  std::vector<uint8_t> b(q.codes.bytes() + q.params.bytes());
  std::memcpy(b.data(), q.codes.data(), q.codes.bytes());
  std::memcpy(b.data() + q.codes.bytes(), q.params.data(), q.params.bytes());
  return b;
}

// Whether two float buffers hold the same bits (NaNs included).
bool SameBits(const Tensor& a, const Tensor& b) {
  return a.bytes() == b.bytes() && std::memcmp(a.data(), b.data(), a.bytes()) == 0;
}

class QuantizeInProducerTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    for (const Int8MicroKernels& v : AvailableInt8MicroKernels()) {
      if (GetParam() == v.isa) forced_.emplace(v);
    }
    ASSERT_TRUE(forced_.has_value()) << GetParam();
  }
  std::optional<ScopedInt8MicroKernels> forced_;
  CpuBackend be_{2};
  Kernels& k_ = be_.kernels();
  std::mt19937 rng_{17};

  Tensor Random(Shape shape, float scale) {
    Tensor t = std::move(Tensor::Empty(be_, DType::kF32, std::move(shape))).value();
    std::normal_distribution<float> d(0.0f, scale);
    float* p = static_cast<float*>(t.data());
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = d(rng_);
    return t;
  }
  Tensor Empty(Shape shape) { return std::move(Tensor::Empty(be_, DType::kF32, std::move(shape))).value(); }
  QuantizedRows Rows(int64_t rows, int64_t k) {
    auto q = k_.NewQuantizedRows(rows, k);
    EXPECT_TRUE(q.ok()) << q.status().ToString();
    return std::move(q).value();
  }
  // The first k values of each of x's rows (stride apart) quantized, for a Linear from codes.
  QuantizedRows Quantized(const Tensor& x, int64_t stride, int64_t k) {
    QuantizedRows q = Rows(x.numel() / stride, k);
    EXPECT_TRUE(k_.QuantizeRows(x, stride, q).ok());
    return q;
  }
  std::unique_ptr<PackedWeight> Weight(int64_t n, int64_t k) {
    std::vector<float> w(static_cast<size_t>(n * k));
    std::normal_distribution<float> d(0.0f, 0.05f);
    for (float& v : w) v = d(rng_);
    auto p = k_.PackWeight(testing::Fp32View(w, {n, k}), DType::kI8);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    return std::move(p).value();
  }
};

TEST_P(QuantizeInProducerTest, LayerNormCodesAreTheBytesQuantizeRowsWritesFromItsOutput) {
  ASSERT_TRUE(k_.QuantizesInProducer());
  for (const auto& [rows, C] : {std::pair<int64_t, int64_t>{1, 5}, {17, 37}, {50, 128}, {130, 200}}) {
    Tensor x = Random({rows, C}, 2.0f), res = Random({rows, C}, 1.0f);
    Tensor g = Random({C}, 1.0f), b = Random({C}, 0.5f);
    static_cast<float*>(x.data())[(rows / 2) * C + C - 1] = kNan;  // one row poisoned
    Tensor want = Empty({rows, C}), got = Empty({rows, C});
    ASSERT_TRUE(k_.LayerNorm(x, &res, g, b, 1e-12f, want).ok());
    QuantizedRows codes = Rows(rows, C), ref = Rows(rows, C);
    const Status s = k_.LayerNormQuantized(x, &res, g, b, 1e-12f, got, codes);
    ASSERT_TRUE(s.ok()) << s.ToString();
    EXPECT_TRUE(SameBits(got, want)) << rows << "x" << C;
    ASSERT_TRUE(k_.QuantizeRows(want, C, ref).ok());
    EXPECT_EQ(Bytes(codes), Bytes(ref)) << rows << "x" << C;
    EXPECT_TRUE(std::isnan(static_cast<const float*>(codes.params.data())[2 * (rows / 2)]));
    // Without a residual too.
    ASSERT_TRUE(k_.LayerNorm(x, nullptr, g, b, 1e-12f, want).ok());
    ASSERT_TRUE(k_.LayerNormQuantized(x, nullptr, g, b, 1e-12f, got, codes).ok());
    ASSERT_TRUE(k_.QuantizeRows(want, C, ref).ok());
    EXPECT_TRUE(SameBits(got, want));
    EXPECT_EQ(Bytes(codes), Bytes(ref));
  }
}

// The rows' codes and parameters overwritten with 0xab, so that only a kernel that writes
// them all gives the reference's bytes (the rows past them, AMX's padding, are zeros the
// kernel never writes).
void Wipe(QuantizedRows& q) {
  std::memset(q.codes.data(), 0xab, static_cast<size_t>(q.rows * PaddedCodeBytes(q.k)));
  std::memset(q.params.data(), 0xab, q.params.bytes());
}

// A replay (tier 3): the kernel run twice, the codes wiped between, as a hook may; the
// launch's grid kept.
class RunTwiceWipingCodes : public LaunchHook {
 public:
  explicit RunTwiceWipingCodes(QuantizedRows* codes) : codes_(codes) {}
  Status OnLaunch(Backend&, const LaunchDesc& desc, FunctionRef<StatusOr<KernelRun>()> run) override {
    grid_ = desc.grid;
    TS_RETURN_IF_ERROR(run().status());
    Wipe(*codes_);
    return run().status();
  }
  const Dim3& grid() const { return grid_; }

 private:
  QuantizedRows* codes_;
  Dim3 grid_;
};

// On 2 workers: tasks of a (head, sample) (8 or more pairs, or an even count), and of 32
// queries (3 pairs: one sample of 3 heads, 3 samples of one head, 3 packed sequences of one
// head, the 5-token one with two blocks past its end); masked keys; packed sequences of
// their own lengths; FP32 qkv, and BF16 qkv into FP32 where an INT8 run's attention reads
// BF16 rows.
TEST_P(QuantizeInProducerTest, AttentionCodesAreTheBytesQuantizeRowsWritesFromItsOutput) {
  struct Case {
    int64_t B, S;
    int heads;
    int64_t D;
    bool packed;
    int64_t query_blocks;  // tasks a (head, sample): the launch's grid.x
  };
  for (const Case c : {Case{4, 16, 2, 8, false, 1}, Case{1, 70, 3, 16, false, 3}, Case{3, 70, 1, 16, false, 3},
                       Case{2, 45, 3, 32, false, 1}, Case{3, 0, 3, 16, true, 1}, Case{3, 0, 1, 16, true, 3}}) {
    const int64_t H = c.heads * c.D;
    const std::vector<int32_t> lens = {37, 5, 70};
    const int64_t T = c.packed ? 112 : c.B * c.S;
    Tensor qkv = Random({c.packed ? 1 : c.B, c.packed ? T : c.S, 3 * H}, 1.0f);
    Tensor mask = std::move(Tensor::Empty(be_, DType::kI32, {c.packed ? 1 : c.B, c.packed ? T : c.S})).value();
    auto* m = static_cast<int32_t*>(mask.data());
    for (int64_t i = 0; i < T; ++i) m[i] = c.packed || i % 11 != 3 ? 1 : 0;
    Tensor offsets = std::move(Tensor::Empty(be_, DType::kI32, {4})).value();
    auto* off = static_cast<int32_t*>(offsets.data());
    off[0] = 0;
    for (int i = 0; i < 3; ++i) off[i + 1] = off[i] + lens[static_cast<size_t>(i)];
    const Tensor* offs = c.packed ? &offsets : nullptr;
    const Shape out_shape = {c.packed ? 1 : c.B, c.packed ? T : c.S, H};
    Tensor q16 = std::move(Tensor::Empty(be_, DType::kBF16, qkv.shape())).value();
    FromFloat(static_cast<const float*>(qkv.data()), DType::kBF16, q16.data(), static_cast<size_t>(qkv.numel()));
    std::vector<std::pair<const Tensor*, AttentionMath>> inputs = {{&qkv, AttentionMath::kBf16WhereNative},
                                                                   {&qkv, AttentionMath::kInputDtype}};
    if (k_.Int8RunsBf16Rows()) inputs.emplace_back(&q16, AttentionMath::kBf16WhereNative);
    for (const auto& [xp, math] : inputs) {
      const Tensor& x = *xp;
      const std::string what = std::to_string(c.B) + "x" + std::to_string(c.S) + " heads " +
                               std::to_string(c.heads) + (c.packed ? " packed " : " ") +
                               std::string(DTypeName(x.dtype()));
      Tensor want = Empty(out_shape), got = Empty(out_shape);
      ASSERT_TRUE((offs ? k_.AttentionPacked(x, mask, *offs, c.heads, want, math)
                        : k_.Attention(x, mask, c.heads, want, math))
                      .ok());
      QuantizedRows codes = Rows(T, H), ref = Rows(T, H);
      Wipe(codes);
      const Status s = k_.AttentionQuantized(x, mask, offs, c.heads, got, math, codes);
      ASSERT_TRUE(s.ok()) << s.ToString();
      EXPECT_TRUE(SameBits(got, want)) << what;
      ASSERT_TRUE(k_.QuantizeRows(want, H, ref).ok());
      EXPECT_EQ(Bytes(codes), Bytes(ref)) << what;
      RunTwiceWipingCodes replay(&codes);
      be_.SetLaunchHook(&replay);
      const Status again = k_.AttentionQuantized(x, mask, offs, c.heads, got, math, codes);
      be_.SetLaunchHook(nullptr);
      ASSERT_TRUE(again.ok()) << again.ToString();
      EXPECT_EQ(Bytes(codes), Bytes(ref)) << what << ", replayed";
      EXPECT_EQ(replay.grid().x, c.query_blocks) << what;
    }
  }
}

TEST_P(QuantizeInProducerTest, ALinearFromCodesGivesWhatALinearFromFp32RowsGivesBitForBit) {
  // Rows from one to past a few 48-row tiles; columns past whole 64-column blocks; K odd,
  // short and past one AMX tile; x read at a row stride.
  // m: 1 (too few rows for whole-row tasks: tiles, then quantized), then whole-row tasks of
  // 16 (50 to 200 rows), 16 or 32 (300) and 32 or 48 (400) rows, with two workers
  // (tile_rows.h's SplitRowTasks).
  for (const auto& [m, n, k, stride] : {std::tuple<int64_t, int64_t, int64_t, int64_t>{1, 17, 3, 5},
                                         {50, 100, 130, 130}, {130, 72, 64, 70}, {200, 512, 128, 128},
                                         {300, 40, 20, 20}, {400, 33, 70, 72}}) {
    Tensor x = Random({m, stride}, 2.0f), bias = Random({n}, 0.1f);
    auto w = Weight(n, k);
    const QuantizedRows xq = Quantized(x, stride, k);
    for (Epilogue e : {Epilogue::kNone, Epilogue::kGelu, Epilogue::kTanh}) {
      for (const Tensor* bp : {static_cast<const Tensor*>(&bias), static_cast<const Tensor*>(nullptr)}) {
        Tensor want = Empty({m, n}), got = Empty({m, n});
        ASSERT_TRUE(k_.Linear(x, m, stride, *w, bp, e, want).ok());
        const Status s = k_.LinearInt8(xq, *w, bp, e, &got, nullptr);
        ASSERT_TRUE(s.ok()) << s.ToString();
        EXPECT_TRUE(SameBits(got, want)) << m << "x" << n << "x" << k << " epilogue " << static_cast<int>(e);
        // Codes out: the bytes QuantizeRows writes from the FP32 rows.
        QuantizedRows yq = Rows(m, n), ref = Rows(m, n);
        ASSERT_TRUE(k_.LinearInt8(xq, *w, bp, e, nullptr, &yq).ok());
        ASSERT_TRUE(k_.QuantizeRows(want, n, ref).ok());
        EXPECT_EQ(Bytes(yq), Bytes(ref)) << m << "x" << n << "x" << k << " epilogue " << static_cast<int>(e);
      }
    }
  }
}

// BF16 rows out (Kernels::Int8RunsBf16Rows, where the BF16 dot kernels run): each the FP32
// row's values rounded to nearest even, bit for bit, on every BF16 variant (forced);
// refused in one line where that variant has no dot kernels.
TEST_P(QuantizeInProducerTest, ALinearIntoBf16RowsWritesItsFp32RowsRoundedToNearestEven) {
  const auto round = [](float f) -> uint16_t {  // a normal, zero or NaN value (as here)
    uint32_t b;
    std::memcpy(&b, &f, 4);
    if (std::isnan(f)) return static_cast<uint16_t>((b >> 16) | 0x40);
    if ((b & 0x7f800000u) == 0) return static_cast<uint16_t>((b >> 16) & 0x8000);  // zero, denormal: signed 0
    return static_cast<uint16_t>((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
  };
  for (const Bf16Kernels& v : AvailableBf16Kernels()) {
    ScopedBf16Kernels forced(v);
    for (const auto& [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{1, 17, 3}, {50, 100, 130}, {97, 384, 128}}) {
      Tensor x = Random({m, k}, 2.0f), bias = Random({n}, 0.1f);
      auto w = Weight(n, k);
      const QuantizedRows xq = Quantized(x, k, k);
      // No epilogue: straight from the sums to BF16 (AVX-512 variants); GELU: through FP32.
      for (const auto& [e, bp] : {std::pair<Epilogue, const Tensor*>{Epilogue::kNone, &bias},
                                  {Epilogue::kNone, nullptr}, {Epilogue::kGelu, &bias}}) {
        Tensor want = Empty({m, n});
        Tensor got = std::move(Tensor::Empty(be_, DType::kBF16, {m, n})).value();
        ASSERT_TRUE(k_.LinearInt8(xq, *w, bp, e, &want, nullptr).ok());
        const Status s = k_.LinearInt8(xq, *w, bp, e, &got, nullptr);
        EXPECT_EQ(k_.Int8RunsBf16Rows(), v.dot()) << v.isa;
        if (!v.dot()) {
          EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << v.isa;
          EXPECT_NE(s.message().find("FP32"), std::string::npos) << s.ToString();
          EXPECT_EQ(s.message().find('\n'), std::string::npos);
          continue;
        }
        ASSERT_TRUE(s.ok()) << s.ToString();
        const auto* f = static_cast<const float*>(want.data());
        const auto* h = static_cast<const uint16_t*>(got.data());
        int64_t bad = 0;
        for (int64_t i = 0; i < m * n; ++i) bad += h[i] != round(f[i]);
        EXPECT_EQ(bad, 0) << v.isa << " " << m << "x" << n << "x" << k << " epilogue " << static_cast<int>(e);
      }
    }
  }
}

TEST_P(QuantizeInProducerTest, ANonFiniteRowStaysInItsRowThroughCodes) {
  const int64_t m = 40, n = 48, k = 32;
  Tensor x = Random({m, k}, 1.0f);
  static_cast<float*>(x.data())[7 * k + 3] = std::numeric_limits<float>::infinity();
  auto w = Weight(n, k);
  QuantizedRows xq = Rows(m, k), yq = Rows(m, n);
  ASSERT_TRUE(k_.QuantizeRows(x, k, xq).ok());
  ASSERT_TRUE(k_.LinearInt8(xq, *w, nullptr, Epilogue::kGelu, nullptr, &yq).ok());
  const auto* params = static_cast<const float*>(yq.params.data());
  const auto* codes = static_cast<const uint8_t*>(yq.codes.data());
  const int64_t kp = yq.codes.numel() / yq.codes.dim(0);
  for (int64_t r = 0; r < m; ++r) {
    EXPECT_EQ(std::isnan(params[2 * r]), r == 7) << "row " << r;
    if (r == 7) EXPECT_TRUE(std::all_of(codes + r * kp, codes + (r + 1) * kp, [](uint8_t c) { return c == 0; }));
  }
}

// An FP32 output too big for the cores' L2 caches together is written with non-temporal
// stores (rows aligned, the rest as usual): the same values as a small output's, whose
// rows stay in cache, bit for bit, row by row.
TEST_P(QuantizeInProducerTest, ABigOutputStreamedHoldsTheValuesOfASmallOne) {
  const double threshold = CpuInt8StreamingThresholdBytes(be_.num_workers());
  const int64_t k = 64;
  for (const int64_t n : {int64_t{1024}, int64_t{1000}}) {  // rows aligned, and mostly not
    const auto m = static_cast<int64_t>(1.25 * threshold / static_cast<double>(n * 4)) + 1;
    Tensor x = Random({m, k}, 1.0f), bias = Random({n}, 0.1f);
    auto w = Weight(n, k);
    const QuantizedRows xq = Quantized(x, k, k);
    for (Epilogue e : {Epilogue::kNone, Epilogue::kGelu}) {
      Tensor big = Empty({m, n});
      ASSERT_GT(static_cast<double>(big.bytes()), threshold);
      ASSERT_TRUE(k_.LinearInt8(xq, *w, &bias, e, &big, nullptr).ok());
      for (const int64_t r0 : {int64_t{0}, m / 2, m - 3}) {  // three rows alone: a small output
        Tensor xs = Empty({3, k}), small = Empty({3, n});
        std::memcpy(xs.data(), static_cast<const float*>(x.data()) + r0 * k, xs.bytes());
        ASSERT_TRUE(k_.Linear(xs, 3, k, *w, &bias, e, small).ok());
        EXPECT_EQ(std::memcmp(static_cast<const float*>(big.data()) + r0 * n, small.data(), small.bytes()), 0)
            << "rows from " << r0 << " of " << m << ", n " << n << ", epilogue " << static_cast<int>(e);
      }
    }
  }
}

// The residual add and LayerNorm in an INT8 Linear's epilogue give, bit for bit, the
// Linear's FP32 rows and then LayerNorm (LayerNormQuantized) over them: with and without
// a bias and codes, a row poisoned through its residual, rows off every block size. Few
// rows (under two 16-row blocks a worker) run as the Linear's launch and the LayerNorm's;
// more, as one launch of whole-row tasks.
TEST_P(QuantizeInProducerTest, ALinearWithAddLayerNormGivesTheLinearThenTheLayerNormBitForBit) {
  ASSERT_TRUE(k_.FusesAddLayerNorm());
  struct Case {
    int64_t rows, n, k;
  };
  for (const Case c : {Case{5, 40, 24}, Case{63, 128, 200}, Case{64, 200, 96}, Case{301, 64, 512}}) {
    Tensor x = Random({c.rows, c.k}, 1.0f);
    QuantizedRows q = Quantized(x, c.k, c.k);
    auto w = Weight(c.n, c.k);
    Tensor bias = Random({c.n}, 0.1f), res = Random({c.rows, c.n}, 1.0f);
    Tensor g = Random({c.n}, 1.0f), b = Random({c.n}, 0.5f);
    static_cast<float*>(res.data())[(c.rows / 2) * c.n] = kNan;  // one row poisoned
    static_cast<float*>(res.data())[(c.rows - 1) * c.n + c.n / 2] = std::numeric_limits<float>::infinity();
    // The LayerNorm's 16-lane rows and its 8-lane ones (forced FP32 micro-kernels), each.
    for (const MicroKernelVariant& fp32 : AvailableMicroKernels()) {
      ScopedMicroKernels lanes(fp32.kernels);
      for (const bool with_bias : {true, false}) {
        for (const bool with_codes : {true, false}) {
          const std::string what = std::string(fp32.isa) + " " + std::to_string(c.rows) + "x" +
                                   std::to_string(c.n) + "x" + std::to_string(c.k) + (with_bias ? " bias" : "") +
                                   (with_codes ? " codes" : "");
          const Tensor* bp = with_bias ? &bias : nullptr;
          Tensor y = Empty({c.rows, c.n}), want = Empty({c.rows, c.n}), got = Empty({c.rows, c.n});
          ASSERT_TRUE(k_.LinearInt8(q, *w, bp, Epilogue::kNone, &y, nullptr).ok());
          QuantizedRows want_codes = Rows(c.rows, c.n), codes = Rows(c.rows, c.n);
          ASSERT_TRUE((with_codes ? k_.LayerNormQuantized(y, &res, g, b, 1e-12f, want, want_codes)
                                  : k_.LayerNorm(y, &res, g, b, 1e-12f, want))
                          .ok());
          Wipe(codes);
          testing::LaunchNames launches;
          be_.SetLaunchHook(&launches);
          const Status s =
              k_.LinearInt8AddLayerNorm(q, *w, bp, res, g, b, 1e-12f, got, with_codes ? &codes : nullptr);
          be_.SetLaunchHook(nullptr);
          ASSERT_TRUE(s.ok()) << what << ": " << s.ToString();
          EXPECT_TRUE(SameBits(got, want)) << what;
          if (with_codes) EXPECT_EQ(Bytes(codes), Bytes(want_codes)) << what;
          EXPECT_TRUE(std::isnan(static_cast<const float*>(got.data())[(c.rows / 2) * c.n + 1])) << what;
          const bool one = CeilDiv(c.rows, int64_t{16}) >= 4;  // two blocks a worker, on 2 workers
          ASSERT_EQ(launches.names.size(), one ? 1u : 2u) << what;
          EXPECT_NE(launches.names.back().find("add_layer_norm"), std::string::npos) << launches.names.back();
          EXPECT_TRUE(std::isnan(static_cast<const float*>(got.data())[(c.rows - 1) * c.n])) << what << ": inf row";
        }
      }
    }
  }
}

TEST_P(QuantizeInProducerTest, ALinearWithAddLayerNormRefusesWhatDoesNotFitInOneLine) {
  auto expect_invalid = [](const Status& s, const std::string& needle) {
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
    EXPECT_EQ(s.message().find('\n'), std::string::npos) << s.message();
  };
  QuantizedRows q = Quantized(Random({64, 24}, 1.0f), 24, 24);
  auto w = Weight(40, 24);
  Tensor res = Random({64, 40}, 1.0f), g = Random({40}, 1.0f), out = Empty({64, 40});
  expect_invalid(k_.LinearInt8AddLayerNorm(q, *Weight(40, 32), nullptr, res, g, g, 1e-12f, out, nullptr),
                 "takes an INT8 weight of as many inputs");
  Tensor narrow = Empty({64, 39});
  expect_invalid(k_.LinearInt8AddLayerNorm(q, *w, nullptr, res, g, g, 1e-12f, narrow, nullptr),
                 "is not FP32 rows [64, 40]");
  Tensor short_res = Random({63, 40}, 1.0f);
  expect_invalid(k_.LinearInt8AddLayerNorm(q, *w, nullptr, short_res, g, g, 1e-12f, out, nullptr),
                 "inconsistent shapes");
  Tensor g39 = Random({39}, 1.0f);
  expect_invalid(k_.LinearInt8AddLayerNorm(q, *w, nullptr, res, g39, g, 1e-12f, out, nullptr), "inconsistent shapes");
  expect_invalid(k_.LinearInt8AddLayerNorm(q, *w, nullptr, res, g, g, 0.0f, out, nullptr), "eps must be > 0");
  Tensor bias = Random({39}, 1.0f);
  expect_invalid(k_.LinearInt8AddLayerNorm(q, *w, &bias, res, g, g, 1e-12f, out, nullptr), "bias");
  QuantizedRows wrong = Rows(64, 39);
  expect_invalid(k_.LinearInt8AddLayerNorm(q, *w, nullptr, res, g, g, 1e-12f, out, &wrong), "for 64 x 40 outputs");
  // A residual of as many values in rows of another width, with gamma to match it; the
  // output over the residual (the few-rows path writes it before reading the residual).
  Tensor folded = Random({128, 20}, 1.0f), g20 = Random({20}, 1.0f);
  expect_invalid(k_.LinearInt8AddLayerNorm(q, *w, nullptr, folded, g20, g20, 1e-12f, out, nullptr),
                 "is not rows of 40");
  expect_invalid(k_.LinearInt8AddLayerNorm(q, *w, nullptr, res, g, g, 1e-12f, res, nullptr), "overlaps the residual");
}

// The variants this CPU runs (the scalar one everywhere), so none is skipped.
std::vector<std::string> VariantNames() {
  std::vector<std::string> names;
  for (const Int8MicroKernels& v : AvailableInt8MicroKernels()) names.push_back(v.isa);
  return names;
}

INSTANTIATE_TEST_SUITE_P(Variants, QuantizeInProducerTest, ::testing::ValuesIn(VariantNames()),
                         [](const auto& info) {
                           std::string name = info.param;  // "amx-int8": no '-' in a test name
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

// The documented quantization of a row, one value at a time: the range's fold from 0 (a
// NaN or an infinity gives zero codes and scale NaN), scale = range / 255 (1 for an empty
// range or one whose reciprocal overflows), zero point round(-lo / scale) in [0, 255]
// (+0, never -0), codes round(fma(x, 1/scale, zp)) clamped to [0, 255], zeros past the row.
struct Quantized {
  std::vector<uint8_t> codes;
  float params[2];
};
Quantized QuantizeScalar(const float* x, int64_t k, int64_t kp) {
  Quantized q{std::vector<uint8_t>(static_cast<size_t>(kp), 0), {kNan, 0.0f}};
  float lo = 0, hi = 0;
  for (int64_t j = 0; j < k; ++j) {
    if (!std::isfinite(x[j])) return q;
    lo = std::min(lo, x[j]);
    hi = std::max(hi, x[j]);
  }
  const double range = static_cast<double>(hi) - lo;
  float scale = range > 0 ? static_cast<float>(range / 255) : 1.0f;
  float inv = 1.0f / scale;
  if (!std::isfinite(inv)) scale = inv = 1.0f;
  const float zp = std::clamp(std::nearbyint(-lo / scale), 0.0f, 255.0f) + 0.0f;
  for (int64_t j = 0; j < k; ++j) {
    q.codes[j] = static_cast<uint8_t>(std::clamp(std::nearbyint(std::fma(x[j], inv, zp)), 0.0f, 255.0f));
  }
  q.params[0] = scale;
  q.params[1] = zp;
  return q;
}

// 16 lanes beside the AVX-512 variants, 8 beside the others: the documented bytes from rows
// that test the edges — all zero, all negative, -0, a range below FLT_MIN, values near
// FLT_MAX, lengths off every vector width, a NaN and an infinity.
TEST(QuantizeRows, EveryVariantWritesTheDocumentedBytes) {
  CpuBackend be(2);
  const int64_t k = 77;
  const int64_t rows = 9;
  Tensor x = std::move(Tensor::Empty(be, DType::kF32, {rows, k})).value();
  float* p = static_cast<float*>(x.data());
  std::mt19937 rng(3);
  std::normal_distribution<float> d(0.0f, 1.0f);
  for (int64_t i = 0; i < rows * k; ++i) p[i] = d(rng);
  std::fill(p, p + k, 0.0f);                                       // all zero
  for (int64_t j = 0; j < k; ++j) p[k + j] = -std::fabs(p[k + j]) - 0.5f;  // all negative
  for (int64_t j = 0; j < k; ++j) p[2 * k + j] = std::fabs(p[2 * k + j]);
  for (int64_t j = 0; j < k; j += 2) p[2 * k + j] = -0.0f;         // -0 among positives
  for (int64_t j = 0; j < k; ++j) p[3 * k + j] *= 1e-39f;          // below FLT_MIN
  for (int64_t j = 0; j < k; ++j) p[4 * k + j] *= 1e38f;           // near FLT_MAX
  p[5 * k + 76] = kNan;
  p[6 * k + 33] = -std::numeric_limits<float>::infinity();
  for (const Int8MicroKernels& v : AvailableInt8MicroKernels()) {
    ScopedInt8MicroKernels forced(v);
    for (int64_t len : {k, int64_t{1}, int64_t{16}, int64_t{33}}) {  // whole vectors, masked tails, both
      auto q = be.kernels().NewQuantizedRows(rows, len);
      ASSERT_TRUE(q.ok()) << q.status().ToString();
      ASSERT_TRUE(be.kernels().QuantizeRows(x, k, *q).ok());
      const auto* codes = static_cast<const uint8_t*>(q->codes.data());
      const auto* params = static_cast<const float*>(q->params.data());
      const int64_t kp = q->codes.numel() / q->codes.dim(0);
      for (int64_t r = 0; r < rows; ++r) {
        const Quantized want = QuantizeScalar(p + r * k, len, kp);
        EXPECT_EQ(std::memcmp(codes + r * kp, want.codes.data(), static_cast<size_t>(kp)), 0)
            << v.isa << " row " << r << " of " << len;
        EXPECT_EQ(std::memcmp(params + 2 * r, want.params, sizeof(want.params)), 0)
            << v.isa << " row " << r << " of " << len << ": " << params[2 * r] << ", " << params[2 * r + 1];
      }
    }
  }
}

TEST(QuantizeRows, WhatDoesNotFitIsRefusedInOneLine) {
  CpuBackend be(2);
  Kernels& k = be.kernels();
  auto expect_invalid = [](const Status& s, const std::string& needle) {
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
    EXPECT_EQ(s.message().find('\n'), std::string::npos) << s.message();
  };
  expect_invalid(k.NewQuantizedRows(0, 5).status(), "0 rows of 5");
  expect_invalid(k.NewQuantizedRows(2, 70000).status(), "at most 65536");
  Tensor x = std::move(Tensor::Empty(be, DType::kF32, {4, 8})).value();
  std::fill(static_cast<float*>(x.data()), static_cast<float*>(x.data()) + 32, 1.0f);
  auto q = k.NewQuantizedRows(4, 8);
  ASSERT_TRUE(q.ok());
  expect_invalid(k.QuantizeRows(x, 7, *q), "at stride 7");
  QuantizedRows five = std::move(k.NewQuantizedRows(5, 8)).value();
  expect_invalid(k.QuantizeRows(x, 8, five), "is not 5 FP32 rows of 8");
  // Hand-made codes in another layout: refused, not read past.
  QuantizedRows made;
  made.rows = 4;
  made.k = 8;
  made.codes = std::move(Tensor::Empty(be, DType::kU8, {4, 8})).value();
  made.params = std::move(Tensor::Empty(be, DType::kF32, {4, 2})).value();
  expect_invalid(k.QuantizeRows(x, 8, made), "make them with NewQuantizedRows");

  std::vector<float> wv(16 * 8, 0.1f);
  const HostTensor h = testing::Fp32View(wv, {16, 8});
  auto w8 = k.PackWeight(h, DType::kI8);
  auto w32 = k.PackWeight(h, DType::kF32);
  ASSERT_TRUE(w8.ok() && w32.ok());
  Tensor y = std::move(Tensor::Empty(be, DType::kF32, {4, 16})).value();
  QuantizedRows yq = std::move(k.NewQuantizedRows(4, 16)).value();
  ASSERT_TRUE(k.QuantizeRows(x, 8, *q).ok());
  expect_invalid(k.LinearInt8(*q, **w32, nullptr, Epilogue::kNone, &y, nullptr), "takes an INT8 weight");
  expect_invalid(k.LinearInt8(*q, **w8, nullptr, Epilogue::kNone, &y, &yq), "give one output");
  expect_invalid(k.LinearInt8(*q, **w8, nullptr, Epilogue::kNone, nullptr, nullptr), "give one output");
  Tensor small = std::move(Tensor::Empty(be, DType::kF32, {4, 15})).value();
  expect_invalid(k.LinearInt8(*q, **w8, nullptr, Epilogue::kNone, &small, nullptr), "is not [4, 16] FP32");
  QuantizedRows narrow = std::move(k.NewQuantizedRows(4, 15)).value();
  expect_invalid(k.LinearInt8(*q, **w8, nullptr, Epilogue::kNone, nullptr, &narrow), "for 4 x 16 outputs");
  expect_invalid(k.LinearInt8(five, **w8, nullptr, Epilogue::kNone, &y, nullptr), "is not [5, 16] FP32");
  QuantizedRows short_params;
  short_params.rows = 4;
  short_params.k = 8;
  short_params.codes = std::move(Tensor::Empty(be, DType::kU8, {16, 64})).value();
  short_params.params = std::move(Tensor::Empty(be, DType::kF32, {3, 2})).value();
  expect_invalid(k.LinearInt8(short_params, **w8, nullptr, Epilogue::kNone, &y, nullptr),
                 "the input is not 4 quantized rows of 8");
  std::vector<float> sq(8 * 8, 0.1f);
  auto square = k.PackWeight(testing::Fp32View(sq, {8, 8}), DType::kI8);
  ASSERT_TRUE(square.ok());
  expect_invalid(k.LinearInt8(*q, **square, nullptr, Epilogue::kNone, nullptr, &*q), "rows of its own");
  Tensor bias = std::move(Tensor::Empty(be, DType::kF32, {15})).value();
  expect_invalid(k.LinearInt8(*q, **w8, &bias, Epilogue::kNone, &y, nullptr), "bias");

  Tensor g = std::move(Tensor::Empty(be, DType::kF32, {8})).value();
  Tensor out = std::move(Tensor::Empty(be, DType::kF32, {4, 8})).value();
  expect_invalid(k.LayerNormQuantized(x, nullptr, g, g, 1e-12f, out, five), "into 5 quantized rows of 8");
  Tensor xb = std::move(Tensor::Empty(be, DType::kBF16, {4, 8})).value();
  Tensor gb = std::move(Tensor::Empty(be, DType::kBF16, {8})).value();
  Tensor ob = std::move(Tensor::Empty(be, DType::kBF16, {4, 8})).value();
  expect_invalid(k.LayerNormQuantized(xb, nullptr, gb, gb, 1e-12f, ob, *q), "FP32 rows");

  Tensor qkv = std::move(Tensor::Empty(be, DType::kF32, {1, 4, 24})).value();
  Tensor mask = std::move(Tensor::Empty(be, DType::kI32, {1, 4})).value();
  Tensor ctx = std::move(Tensor::Empty(be, DType::kF32, {1, 4, 8})).value();
  expect_invalid(k.AttentionQuantized(qkv, mask, nullptr, 2, ctx, AttentionMath::kInputDtype, five),
                 "into 5 quantized rows of 8");
  Tensor wide = std::move(Tensor::Empty(be, DType::kF32, {1, 4, 9})).value();
  expect_invalid(k.AttentionQuantized(qkv, mask, nullptr, 2, wide, AttentionMath::kInputDtype, *q),
                 "AttentionQuantized: inconsistent shapes");
}

}  // namespace
}  // namespace tierscope
