// What only the CPU backend does: its embedding kernel refuses ids outside the tables,
// 16-bit weights under FP32 activations, packed sequences, its allocator's accounting,
// its row blocks' size, and a launch runs every task of its grid. The ops against
// their references, on every backend, are tests/backend/backend_ops_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cstdint>
#include <cmath>
#include <cstring>
#include <random>
#include <tuple>
#include <utility>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/micro_kernel_bf16.h"
#include "core/allocator.h"
#include "test_util.h"

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
  // EmbeddingSum on `k` over random tables in `tables` into `out` rows of 37 (whole vectors
  // and a tail): each token's sum is (word + position) + type in FP32, in that order, rounded
  // once into out's dtype, bit for bit.
  void ExpectEmbeddingSumsInOrder(Kernels& k, DType tables, DType out) {
    const int64_t V = 13, P = 6, T = 2, H = 37, B = 2, S = 6;
    const std::vector<float> word = Round(Random(V * H), tables), pos = Round(Random(P * H), tables);
    const std::vector<float> type = Round(Random(T * H), tables);
    std::vector<int32_t> ids(B * S), tt(B * S);
    for (int64_t i = 0; i < B * S; ++i) {
      ids[i] = static_cast<int32_t>((i * 7) % V);
      tt[i] = static_cast<int32_t>(i % 2);
    }
    Tensor dw = Device(word, {V, H}, tables), dp = Device(pos, {P, H}, tables), dt = Device(type, {T, H}, tables);
    Tensor y = std::move(Tensor::Empty(be_, out, {B, S, H})).value();
    ASSERT_TRUE(k.EmbeddingSum(DeviceI32(ids, {B, S}), DeviceI32(tt, {B, S}), dw, dp, dt, y).ok());
    std::vector<float> sums(static_cast<size_t>(B * S * H));
    for (int64_t i = 0; i < B * S; ++i) {
      for (int64_t h = 0; h < H; ++h) {
        sums[i * H + h] = (word[ids[i] * H + h] + pos[(i % S) * H + h]) + type[tt[i] * H + h];
      }
    }
    const std::vector<float> want = Round(sums, out), got = Host(y);
    ASSERT_EQ(got.size(), want.size());
    EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0)
        << DTypeName(tables) << " tables, " << DTypeName(out) << " out";
  }
};

TEST_P(CpuKernelsTest, EmbeddingSumIsTheRowsSummedInOrderBitForBit) {
  ExpectEmbeddingSumsInOrder(be_.kernels(), GetParam().dtype, GetParam().dtype);
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
    const Status s = be_.kernels().EmbeddingSum(di, dti, dw, dp, dt, out);
    EXPECT_EQ(s.code(), StatusCode::kOutOfRange) << s.ToString();
    EXPECT_NE(s.message().find(what), std::string::npos) << s.message();
  }
}

// The LayerNorm interleaves rows (4 at a time on 16 lanes) with each row's own arithmetic:
// many rows give each row's output alone bit for bit, with and without the residual, on
// 128-wide rows (the tiny model's) and 37-wide ones (16-lane tails), in tasks whose rows
// leave a remainder of groups (21 rows: tasks of 16 and 5).
TEST_P(CpuKernelsTest, LayerNormOfManyRowsIsEachRowAloneBitForBit) {
  const DType t = GetParam().dtype;
  const int64_t R = 21;
  for (const int64_t C : {128, 37}) {
    const std::vector<float> x = Random(R * C, 3.0f), r = Random(R * C), g = Random(C), b = Random(C);
    Tensor dx = Device(x, {R, C}, t), dr = Device(r, {R, C}, t), dg = Device(g, {C}, t), db = Device(b, {C}, t);
    for (const bool residual : {true, false}) {
      Tensor all = std::move(Tensor::Empty(be_, t, {R, C})).value();
      ASSERT_TRUE(be_.kernels().LayerNorm(dx, residual ? &dr : nullptr, dg, db, 1e-5f, all).ok());
      const size_t row_bytes = static_cast<size_t>(C) * DTypeSize(t);
      for (int64_t i = 0; i < R; ++i) {
        Tensor xi = std::move(Tensor::Empty(be_, t, {1, C})).value(), ri = std::move(Tensor::Empty(be_, t, {1, C})).value();
        std::memcpy(xi.data(), static_cast<const std::byte*>(dx.data()) + i * row_bytes, row_bytes);
        std::memcpy(ri.data(), static_cast<const std::byte*>(dr.data()) + i * row_bytes, row_bytes);
        Tensor yi = std::move(Tensor::Empty(be_, t, {1, C})).value();
        ASSERT_TRUE(be_.kernels().LayerNorm(xi, residual ? &ri : nullptr, dg, db, 1e-5f, yi).ok());
        EXPECT_EQ(std::memcmp(yi.data(), static_cast<const std::byte*>(all.data()) + i * row_bytes, row_bytes), 0)
            << "row " << i << " of " << C << (residual ? ", with the residual" : "");
      }
    }
  }
}

// Where the CPU has no FP16/BF16 arithmetic kernels (FP16 on every CPU; BF16 without
// AVX512_BF16, or under the "fp32" BF16 variant), a 16-bit run keeps its weights (the
// Linear panels, the embedding tables) in 16 bits and its activations in FP32. Linear and
// EmbeddingSum take that mix, and give FP32-accurate sums of the 16-bit weights' values
// (the activations are never rounded; the embedding's sums are FP32's, bit for bit), in
// every epilogue, across whole and partial tiles.
class CpuHalfWeightsTest : public CpuKernelsTest {};  // F16 and BF16 only

TEST_P(CpuHalfWeightsTest, SixteenBitWeightsUnderFp32ActivationsGiveFp32AccurateSums) {
  const DType t = GetParam().dtype;
  ScopedBf16Kernels widen(AvailableBf16Kernels().back());  // "fp32": BF16 weights widened too
  CpuBackend be(2);  // made under it: BF16 runs keep FP32 activations
  ASSERT_EQ(std::string(AvailableBf16Kernels().back().isa), "fp32");
  EXPECT_FALSE(be.props().HalfArithmetic(t));
  const int64_t M = 53, K = 300;
  for (const int64_t N : {int64_t{37}, int64_t{200}}) {
    const std::vector<float> x = Random(M * K), w = Random(N * K, 0.1f), b = Random(N);
    const std::vector<float> wr = Round(w, t);  // what the packed panels hold
    auto packed = be.kernels().PackWeight(testing::Fp32View(w, {N, K}), t);
    ASSERT_TRUE(packed.ok()) << packed.status().ToString();
    ASSERT_EQ((*packed)->dtype(), t);
    Tensor dx = Device(x, {M, K}, DType::kF32), db = Device(b, {N}, DType::kF32);
    for (Epilogue e : {Epilogue::kNone, Epilogue::kGelu, Epilogue::kTanh}) {
      Tensor dy = std::move(Tensor::Empty(be_, DType::kF32, {M, N})).value();
      const Status st = be.kernels().Linear(dx, M, K, **packed, &db, e, dy);
      ASSERT_TRUE(st.ok()) << st.ToString();
      std::vector<double> ref(static_cast<size_t>(M * N));
      for (int64_t m = 0; m < M; ++m) {
        for (int64_t n = 0; n < N; ++n) {
          double acc = b[n];
          for (int64_t kk = 0; kk < K; ++kk) acc += double{x[m * K + kk]} * wr[n * K + kk];
          if (e == Epilogue::kGelu) acc = 0.5 * acc * (1 + std::erf(acc / std::sqrt(2.0)));
          if (e == Epilogue::kTanh) acc = std::tanh(acc);
          ref[m * N + n] = acc;
        }
      }
      ExpectClose(Host(dy), ref, 1e-5, "linear, 16-bit weights, FP32 activations");
    }
    // Only the weight may differ: 16-bit x with an FP32 y is refused.
    Tensor dx16 = Device(x, {M, K}, t);
    Tensor dy32 = std::move(Tensor::Empty(be_, DType::kF32, {M, N})).value();
    EXPECT_EQ(be.kernels().Linear(dx16, M, K, **packed, &db, Epilogue::kNone, dy32).code(),
              StatusCode::kInvalidArgument);
  }
  ExpectEmbeddingSumsInOrder(be.kernels(), t, DType::kF32);  // 16-bit tables, FP32 out
}

INSTANTIATE_TEST_SUITE_P(AllDTypes, CpuKernelsTest,
                         ::testing::Values(Case{DType::kF32, 1e-5}, Case{DType::kF16, 4e-3},
                                           Case{DType::kBF16, 2e-2}),
                         [](const auto& info) { return std::string(DTypeTag(info.param.dtype)); });

INSTANTIATE_TEST_SUITE_P(HalfDTypes, CpuHalfWeightsTest,
                         ::testing::Values(Case{DType::kF16, 0}, Case{DType::kBF16, 0}),
                         [](const auto& info) { return std::string(DTypeTag(info.param.dtype)); });

// Packed sequences: attention within each sequence equals Attention on that sequence
// alone, through the 32-query-block tasks too (few sequences and heads for 2 workers, one
// sequence longer than 32); the kernels refuse offsets and positions they cannot use.
TEST_P(CpuKernelsTest, PackedAttentionEqualsEachSequenceAloneAndRefusesBadOffsets) {
  const DType t = GetParam().dtype;
  const int heads = 1;
  const int64_t H = 16;
  const std::vector<int64_t> lens = {45, 7};
  const int64_t T = 52;
  const std::vector<float> qkv = Random(T * 3 * H);
  std::vector<int32_t> mask(T, 1);
  mask[3] = 0;  // an inner masked key of the first sequence
  Tensor dq = Device(qkv, {1, T, 3 * H}, t), dm = DeviceI32(mask, {1, T});
  Tensor off = DeviceI32({0, 45, 52}, {3});
  Tensor out = std::move(Tensor::Empty(be_, t, {1, T, H})).value();
  ASSERT_TRUE(be_.kernels().AttentionPacked(dq, dm, off, heads, out).ok());
  const std::vector<float> packed = Host(out);
  for (int64_t b = 0, at = 0; b < 2; at += lens[b], ++b) {
    const int64_t L = lens[b];
    Tensor one = Device(std::vector<float>(qkv.begin() + at * 3 * H, qkv.begin() + (at + L) * 3 * H), {1, L, 3 * H}, t);
    Tensor m1 = DeviceI32(std::vector<int32_t>(mask.begin() + at, mask.begin() + at + L), {1, L});
    Tensor o1 = std::move(Tensor::Empty(be_, t, {1, L, H})).value();
    ASSERT_TRUE(be_.kernels().Attention(one, m1, heads, o1).ok());
    const std::vector<float> alone = Host(o1);
    for (int64_t i = 0; i < L * H; ++i) ASSERT_EQ(packed[at * H + i], alone[i]) << "sequence " << b << " at " << i;
  }
  for (const auto& [bad, what] : {std::pair{std::vector<int32_t>{0, 45, 51}, "not over the 52 tokens"},
                                  std::pair{std::vector<int32_t>{1, 45, 52}, "run from 1 to 52"},
                                  std::pair{std::vector<int32_t>{0, 0, 52}, "sequence 0 is empty"},
                                  std::pair{std::vector<int32_t>{0, 53, 52}, "sequence 1 is empty or the offsets decrease"}}) {
    Tensor o = DeviceI32(bad, {3});
    const Status st = be_.kernels().AttentionPacked(dq, dm, o, heads, out);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.ToString();
    EXPECT_NE(st.message().find(what), std::string::npos) << st.message();
  }
  // A position past the position table is refused by the embedding kernel itself.
  const int64_t V = 11, P = 9;
  Tensor dw = Device(Random(V * H), {V, H}, t), dp = Device(Random(P * H), {P, H}, t);
  Tensor dt = Device(Random(2 * H), {2, H}, t);
  Tensor ids = DeviceI32({1, 2, 3}, {1, 3}), types = DeviceI32({0, 0, 0}, {1, 3}), pos = DeviceI32({0, 1, 9}, {1, 3});
  Tensor emb = std::move(Tensor::Empty(be_, t, {1, 3, H})).value();
  const Status st = be_.kernels().EmbeddingSumAt(ids, types, pos, dw, dp, dt, emb);
  EXPECT_EQ(st.code(), StatusCode::kOutOfRange) << st.ToString();
  EXPECT_NE(st.message().find("position 9 of token 2"), std::string::npos) << st.message();
}

// FP32 rows asked for BF16 arithmetic (an INT8 run's attention): on every BF16 variant this
// CPU runs, forced. With the dot kernels, the very computation BF16 rows run (the output,
// rounded to BF16, is the BF16 path's bit for bit: the inputs are normal numbers, which
// both roundings to BF16 agree on) and close to FP32's; without them, FP32
// attention bit for bit. Padded and packed batches, an odd head dim, masked keys.
TEST(CpuAttentionTest, Fp32RowsInBf16ArithmeticRunTheBf16PathOrFp32Where) {
  CpuBackend be(2);
  std::mt19937 rng(13);
  std::normal_distribution<float> d(0.0f, 1.0f);
  for (const auto& [B, S, heads, H] : {std::tuple<int64_t, int64_t, int, int64_t>{3, 37, 2, 64},
                                        {2, 20, 3, 39}, {1, 130, 1, 32}}) {
    std::vector<float> qkv(static_cast<size_t>(B * S * 3 * H));
    for (float& v : qkv) v = d(rng);
    std::vector<uint16_t> bits(qkv.size());
    FloatToBF16(qkv.data(), bits.data(), qkv.size());  // the BF16 rows the dot path sees
    std::vector<int32_t> mask(static_cast<size_t>(B * S), 1);
    mask[S - 1] = 0;          // sample 0 padded by one
    if (B > 1) mask[S + 2] = 0;  // an inner masked key of sample 1
    auto dev = [&](DType t, const void* src, Shape shape) {
      Tensor x = std::move(Tensor::Empty(be, t, std::move(shape))).value();
      std::memcpy(x.data(), src, x.bytes());
      return x;
    };
    Tensor q32 = dev(DType::kF32, qkv.data(), {B, S, 3 * H}), q16 = dev(DType::kBF16, bits.data(), {B, S, 3 * H});
    Tensor dm = dev(DType::kI32, mask.data(), {B, S});
    for (const Bf16Kernels& v : AvailableBf16Kernels()) {
      ScopedBf16Kernels forced(v);
      Tensor got = std::move(Tensor::Empty(be, DType::kF32, {B, S, H})).value();
      Tensor want32 = std::move(Tensor::Empty(be, DType::kF32, {B, S, H})).value();
      ASSERT_TRUE(be.kernels().Attention(q32, dm, heads, got, AttentionMath::kBf16WhereNative).ok());
      ASSERT_TRUE(be.kernels().Attention(q32, dm, heads, want32).ok());
      const auto* g = static_cast<const float*>(got.data());
      // BF16 rows into FP32 out (an INT8 run's Q, K and V written in BF16): where the dot
      // kernels run, the FP32 rows' output bit for bit; else refused in one line.
      Tensor from16 = std::move(Tensor::Empty(be, DType::kF32, {B, S, H})).value();
      const Status s16 = be.kernels().Attention(q16, dm, heads, from16, AttentionMath::kBf16WhereNative);
      EXPECT_EQ(be.kernels().Int8RunsBf16Rows(), v.dot()) << v.isa;
      if (!v.dot()) {
        EXPECT_EQ(std::memcmp(got.data(), want32.data(), got.bytes()), 0) << v.isa << " H " << H;
        EXPECT_EQ(s16.code(), StatusCode::kInvalidArgument) << v.isa;
        EXPECT_EQ(s16.message().find('\n'), std::string::npos);
        continue;
      }
      ASSERT_TRUE(s16.ok()) << s16.ToString();
      EXPECT_EQ(std::memcmp(from16.data(), got.data(), got.bytes()), 0) << v.isa << " H " << H;
      EXPECT_FALSE(be.kernels().Attention(q16, dm, heads, from16).ok()) << "BF16 into FP32 needs the BF16 math";
      Tensor want16 = std::move(Tensor::Empty(be, DType::kBF16, {B, S, H})).value();
      ASSERT_TRUE(be.kernels().Attention(q16, dm, heads, want16).ok());
      std::vector<uint16_t> rounded(static_cast<size_t>(got.numel()));
      FloatToBF16(g, rounded.data(), rounded.size());
      EXPECT_EQ(std::memcmp(rounded.data(), want16.data(), want16.bytes()), 0) << v.isa << " H " << H;
      double worst = 0, scale = 0;  // and near FP32 attention, as BF16 rounding allows
      for (int64_t i = 0; i < got.numel(); ++i) {
        const float w = static_cast<const float*>(want32.data())[i];
        worst = std::max(worst, std::fabs(double{g[i]} - w));
        scale = std::max(scale, std::fabs(double{w}));
      }
      EXPECT_LT(worst, 0.03 * scale) << v.isa << " H " << H;
      // Packed: each sequence at its own length, the same arithmetic.
      std::vector<int32_t> offsets(static_cast<size_t>(B + 1));
      for (int64_t b = 0; b <= B; ++b) offsets[b] = static_cast<int32_t>(b * S);
      Tensor off = dev(DType::kI32, offsets.data(), {B + 1});
      Tensor p32 = dev(DType::kF32, qkv.data(), {1, B * S, 3 * H}), pm = dev(DType::kI32, mask.data(), {1, B * S});
      Tensor packed = std::move(Tensor::Empty(be, DType::kF32, {1, B * S, H})).value();
      ASSERT_TRUE(be.kernels().AttentionPacked(p32, pm, off, heads, packed, AttentionMath::kBf16WhereNative).ok());
      EXPECT_EQ(std::memcmp(packed.data(), got.data(), got.bytes()), 0) << v.isa << " H " << H;
      Tensor p16 = dev(DType::kBF16, bits.data(), {1, B * S, 3 * H});
      ASSERT_TRUE(be.kernels().AttentionPacked(p16, pm, off, heads, packed, AttentionMath::kBf16WhereNative).ok());
      EXPECT_EQ(std::memcmp(packed.data(), got.data(), got.bytes()), 0) << v.isa << " H " << H << " BF16 rows";
    }
  }
}

// Freed blocks are handed out again by size class: a slightly different size reuses the
// block (a server's batches of varying tokens), and a class of 2 MiB and more is whole huge
// pages on a 2 MiB boundary, whichever request made it (a 1.9 MiB one's class is 2 MiB).
// Under a sanitizer nothing is cached and no huge page is used.
TEST(CpuBackendTest, BlocksAreReusedBySizeClassAndLargeClassesSitOnHugePageBoundaries) {
  CpuBackend be(1);
  const size_t mib = size_t{1} << 20;
  auto take = [&](size_t bytes) {
    auto p = be.Allocate(bytes);
    EXPECT_TRUE(p.ok());
    return p.ok() ? *p : nullptr;
  };
  void* a = take(mib * 19 / 10);
  be.Deallocate(a, mib * 19 / 10);
  void* b = take(2 * mib);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % 64, 0u);
  if (!kSanitizedAllocator) {
    EXPECT_EQ(b, a);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % (2 * mib), 0u);
  }
  be.Deallocate(b, 2 * mib);
  using Sizes = std::pair<size_t, size_t>;
  for (const auto& [first, second] : {Sizes{100 * 1024 + 8, 110 * 1024}, Sizes{5 * mib + 1, 6 * mib - 64}}) {
    void* c = take(first);
    be.Deallocate(c, first);
    void* d = take(second);
    if (!kSanitizedAllocator) EXPECT_EQ(d, c) << first << " then " << second;
    be.Deallocate(d, second);
  }
  EXPECT_EQ(be.Allocate(SIZE_MAX / 2).status().code(), StatusCode::kResourceExhausted);
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

// A few rows (fewer row blocks than 4 a worker) over weights larger than a core's L2 run
// column block by column block; each row's outputs are those of the same rows in a big
// batch (row block by row block), bit for bit.
TEST(CpuBackendTest, AFewRowsOverWeightsBeyondL2GiveTheBigBatchsRowsBitForBit) {
  CpuBackend be(2);
  const int64_t k = 512, n = CpuL2BytesPerCore() / (k * 4) + 300, few = 40, many = 480;
  std::mt19937 rng(5);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> w(static_cast<size_t>(n * k)), b(static_cast<size_t>(n));
  for (float& v : w) v = d(rng);
  for (float& v : b) v = d(rng);
  auto packed = be.kernels().PackWeight(testing::Fp32View(w, {n, k}), DType::kF32);
  ASSERT_TRUE(packed.ok());
  ASSERT_GT((*packed)->bytes(), CpuL2BytesPerCore());
  Tensor x = std::move(Tensor::Empty(be, DType::kF32, {many, k})).value();
  for (int64_t i = 0; i < many * k; ++i) static_cast<float*>(x.data())[i] = d(rng);
  Tensor bias = std::move(Tensor::Empty(be, DType::kF32, {n})).value();
  std::memcpy(bias.data(), b.data(), b.size() * sizeof(float));
  Tensor y_few = std::move(Tensor::Empty(be, DType::kF32, {few, n})).value();
  Tensor y_many = std::move(Tensor::Empty(be, DType::kF32, {many, n})).value();
  for (const Epilogue e : {Epilogue::kNone, Epilogue::kGelu}) {
    ASSERT_TRUE(be.kernels().Linear(x, few, k, **packed, &bias, e, y_few).ok());
    ASSERT_TRUE(be.kernels().Linear(x, many, k, **packed, &bias, e, y_many).ok());
    EXPECT_EQ(std::memcmp(y_few.data(), y_many.data(), static_cast<size_t>(few * n) * sizeof(float)), 0);
  }
}

// Row blocks: 512 rows a worker at least, as many as fill 3/4 of the L2 caches with the
// widest activation, and as many as make the weights (read again by every block) no more
// bytes a row than that activation; weights below that change nothing.
TEST(CpuBackendTest, RowBlocksGrowWithTheWeightsEveryBlockReadsAgain) {
  const int64_t l2 = CpuL2BytesPerCore();
  for (const int workers : {1, 2, 8}) {
    for (const int64_t row : {int64_t{512}, int64_t{2048}, int64_t{6144}}) {
      const int64_t plain = std::max<int64_t>(512 * workers, l2 * workers * 3 / 4 / row);
      EXPECT_EQ(CpuRowBlockRows(workers, row), plain) << workers << " workers, " << row << " bytes a row";
      EXPECT_EQ(CpuRowBlockRows(workers, row, plain * row), plain);
      EXPECT_EQ(CpuRowBlockRows(workers, row, 3 * plain * row), 3 * plain);
      EXPECT_EQ(CpuRowBlockRows(workers, row, 3 * plain * row + 1), 3 * plain + 1);  // rounded up
    }
  }
  // all-MiniLM-L6-v2's FP32 weights (42.6 MB) over its 1,536-float intermediate rows.
  EXPECT_EQ(CpuRowBlockRows(2, 6144, 42'577'920), 6930);
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
