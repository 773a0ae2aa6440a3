// The backend-ops harness, in the spirit of ggml's test-backend-ops: every op of the
// kernel front (kernels.h), every dtype, every backend this build has, against plain
// double-precision references (the llm.c convention), judged by the normalised mean
// squared error per dtype. The CUDA rows skip where there is no GPU and run on the
// device check (bench/gpu/check.sh). Also: the front's contracts refuse bad shapes on
// every backend alike.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/micro_kernel.h"
#include "backend/kernels.h"
#include "backend/observer.h"
#include "backend/op_cost.h"

namespace tierscope {
namespace {

struct OpCase {
  std::string backend;  // "cpu", or the build's GPU kind ("cuda", "musa")
  DType dtype;
};

// Readable parameters in ctest's listing instead of gtest's byte dump.
void PrintTo(const OpCase& c, std::ostream* os) { *os << c.backend << "/" << DTypeName(c.dtype); }

std::string CaseName(const ::testing::TestParamInfo<OpCase>& info) {
  return info.param.backend + "_" + std::string(DTypeName(info.param.dtype));
}

// The largest normalised mean squared error Σ(got - ref)² / Σ ref² an op may show: FP32
// sums differ only in order; FP16 and BF16 round every stored value (11 and 8 bits).
double MaxNmse(DType t) { return t == DType::kF32 ? 1e-10 : t == DType::kF16 ? 2e-5 : 5e-4; }

class BackendOps : public ::testing::TestWithParam<OpCase> {
 protected:
  void SetUp() override {
    auto be = CreateBackend(GetParam().backend, 2);
    if (!be.ok()) {
      // Only a GPU may be missing (the CPU backend always exists), and only the device
      // itself: a build with the plugin whose plugin cannot be used fails here.
      ASSERT_NE(GetParam().backend, "cpu") << be.status().ToString();
      const bool device_missing =
          !HaveGpuBackend() || be.status().message().find("no " + GetParam().backend + " device") == 0;
      ASSERT_TRUE(device_missing) << "the " << GetParam().backend
                                  << " plugin could not be used: " << be.status().ToString();
      GTEST_SKIP() << GetParam().backend << ": " << be.status().message();
    }
    be_ = std::move(be).value();
  }
  DType t() const { return GetParam().dtype; }
  Kernels& k() { return be_->kernels(); }

  // Random values, rounded through the dtype so the reference sees what the kernel sees.
  std::vector<float> Random(size_t n, float scale = 1.0f) {
    std::normal_distribution<float> d(0.0f, scale);
    std::vector<float> v(n);
    for (float& x : v) x = d(rng_);
    std::vector<std::byte> tmp(n * DTypeSize(t()));
    FromFloat(v.data(), t(), tmp.data(), n);
    ToFloat(t(), tmp.data(), v.data(), n);
    return v;
  }
  Tensor Upload(const std::vector<float>& v, Shape shape) {
    Tensor d = std::move(Tensor::Empty(*be_, t(), std::move(shape))).value();
    std::vector<std::byte> raw(d.bytes());
    FromFloat(v.data(), t(), raw.data(), v.size());
    EXPECT_TRUE(be_->CopyHostToDevice(d.data(), raw.data(), raw.size()).ok());
    return d;
  }
  Tensor UploadI32(const std::vector<int32_t>& v, Shape shape) {
    Tensor d = std::move(Tensor::Empty(*be_, DType::kI32, std::move(shape))).value();
    EXPECT_TRUE(be_->CopyHostToDevice(d.data(), v.data(), v.size() * 4).ok());
    return d;
  }
  Tensor Empty(Shape shape) { return std::move(Tensor::Empty(*be_, t(), std::move(shape))).value(); }
  std::vector<float> Download(const Tensor& d) {
    EXPECT_TRUE(be_->Synchronize().ok());
    std::vector<std::byte> raw(d.bytes());
    EXPECT_TRUE(be_->CopyDeviceToHost(raw.data(), d.data(), raw.size()).ok());
    std::vector<float> v(static_cast<size_t>(d.numel()));
    ToFloat(d.dtype(), raw.data(), v.data(), v.size());
    return v;
  }
  // LayerNorm of rows of width C, with and without the residual, against a double reference.
  void CheckLayerNorm(int64_t C);
  void ExpectNear(const Tensor& got_t, const std::vector<double>& want, const std::string& what) {
    const std::vector<float> got = Download(got_t);
    ASSERT_EQ(got.size(), want.size()) << what;
    double err = 0, norm = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_TRUE(std::isfinite(got[i])) << what << ": non-finite at " << i;
      err += (got[i] - want[i]) * (got[i] - want[i]);
      norm += want[i] * want[i];
    }
    const double nmse = norm > 0 ? err / norm : err;
    EXPECT_LE(nmse, MaxNmse(t())) << what << " on " << GetParam().backend << " " << DTypeName(t());
  }

  std::unique_ptr<Backend> be_;
  std::mt19937 rng_{7};
};

TEST_P(BackendOps, LinearWithBiasAndEveryEpilogue) {
  // Odd sizes: rows not a multiple of any tile, K over two 128-deep blocks and a partial
  // one; N = 37 (no whole panel past 32), 72 (one wide call of 3 panels, then a partial
  // panel), 80 (whole panels only) and 200 (two whole 96-column tiles of two wide calls
  // each, then a partial panel in a third): the CPU GEMM writes whole panels straight into
  // y, the rest through its scratch tile.
  const int64_t M = 53, K = 300;
  for (const int64_t N : {int64_t{37}, int64_t{72}, int64_t{80}, int64_t{200}}) {
    auto x = Random(M * K), w = Random(N * K, 0.1f), b = Random(N);
    const HostTensor hw{DType::kF32, {N, K}, reinterpret_cast<const std::byte*>(w.data()), w.size() * 4};
    auto packed = k().PackWeight(hw, t());
    ASSERT_TRUE(packed.ok()) << packed.status().ToString();
    Tensor dx = Upload(x, {M, K}), db = Upload(b, {N});
    for (Epilogue e : {Epilogue::kNone, Epilogue::kGelu, Epilogue::kTanh}) {
      Tensor dy = Empty({M, N});
      ASSERT_TRUE(k().Linear(dx, M, K, **packed, &db, e, dy).ok());
      std::vector<double> ref(M * N);
      for (int64_t m = 0; m < M; ++m) {
        for (int64_t n = 0; n < N; ++n) {
          double acc = b[n];
          for (int64_t kk = 0; kk < K; ++kk) acc += double{x[m * K + kk]} * w[n * K + kk];
          if (e == Epilogue::kGelu) acc = 0.5 * acc * (1 + std::erf(acc / std::sqrt(2.0)));
          if (e == Epilogue::kTanh) acc = std::tanh(acc);
          ref[m * N + n] = acc;
        }
      }
      ExpectNear(dy, ref, "linear, N " + std::to_string(N) + ", epilogue " + std::to_string(static_cast<int>(e)));
    }
  }
}

TEST_P(BackendOps, LinearOverManyTilesInEveryDType) {
  // 480 x 500: ten 48-row blocks and six 96-column blocks; the CPU's 16-bit GEMM then
  // takes four column blocks a task (and two in the last), converting A's rows once.
  const int64_t M = 480, N = 500, K = 160;
  auto x = Random(M * K), w = Random(N * K, 0.1f), b = Random(N);
  const HostTensor hw{DType::kF32, {N, K}, reinterpret_cast<const std::byte*>(w.data()), w.size() * 4};
  auto packed = k().PackWeight(hw, t());
  ASSERT_TRUE(packed.ok()) << packed.status().ToString();
  Tensor dx = Upload(x, {M, K}), db = Upload(b, {N}), dy = Empty({M, N});
  ASSERT_TRUE(k().Linear(dx, M, K, **packed, &db, Epilogue::kGelu, dy).ok());
  std::vector<double> ref(M * N);
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = 0; n < N; ++n) {
      double acc = b[n];
      for (int64_t kk = 0; kk < K; ++kk) acc += double{x[m * K + kk]} * w[n * K + kk];  // Random rounds through the dtype
      ref[m * N + n] = 0.5 * acc * (1 + std::erf(acc / std::sqrt(2.0)));
    }
  }
  ExpectNear(dy, ref, "linear 480 x 500 x 160, GELU");
}

TEST_P(BackendOps, LinearReadsRowsWithAStrideWithoutBias) {
  const int64_t rows = 3, stride = 40, K = 16, N = 5;  // BERT's pooler reads token 0 this way
  auto x = Random(rows * stride), w = Random(N * K);
  const HostTensor hw{DType::kF32, {N, K}, reinterpret_cast<const std::byte*>(w.data()), w.size() * 4};
  auto packed = std::move(k().PackWeight(hw, t())).value();
  Tensor dx = Upload(x, {rows, stride}), dy = Empty({rows, N});
  ASSERT_TRUE(k().Linear(dx, rows, stride, *packed, nullptr, Epilogue::kNone, dy).ok());
  std::vector<double> ref(rows * N);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t n = 0; n < N; ++n)
      for (int64_t kk = 0; kk < K; ++kk) ref[r * N + n] += double{x[r * stride + kk]} * w[n * K + kk];
  ExpectNear(dy, ref, "strided linear");
}

std::vector<double> AttentionReference(const std::vector<float>& qkv, const std::vector<int32_t>& mask,
                                       int64_t B, int64_t S, int64_t heads, int64_t D) {
  const int64_t H = heads * D;
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
          if (!mask[b * S + j]) s = -3.4e38;  // Hugging Face's additive mask: finfo.min
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
  return ref;
}

TEST_P(BackendOps, AttentionWithKeyMasksPaddingAndEveryKeyMasked) {
  // B = 2 and 9: both task layouts of the CPU kernel; sample 1 right-padded, a key masked
  // mid-sequence, and (B = 9) a sample with every key masked (uniform average of V). Head
  // dims 8 and 16: the CPU kernel writes whole 16-wide panels straight into the output;
  // on the CPU also 7 and 40: an odd dim (BF16's dot kernels read it alone) and V over
  // three panels, the last partial.
  std::vector<std::pair<int64_t, int64_t>> shapes = {{2, 8}, {9, 8}, {2, 16}, {9, 16}};
  if (GetParam().backend == "cpu") shapes.insert(shapes.end(), {{2, 7}, {9, 40}});
  for (const auto& [B, D] : shapes) {
    const int64_t S = 37, heads = 3, H = heads * D;
    auto qkv = Random(B * S * 3 * H);
    std::vector<int32_t> mask(B * S, 1);
    for (int64_t s = 20; s < S; ++s) mask[1 * S + s] = 0;
    mask[0 * S + 5] = 0;
    if (B > 2) for (int64_t s = 0; s < S; ++s) mask[8 * S + s] = 0;
    Tensor dq = Upload(qkv, {B, S, 3 * H}), dm = UploadI32(mask, {B, S}), dout = Empty({B, S, H});
    ASSERT_TRUE(k().Attention(dq, dm, static_cast<int>(heads), dout).ok());
    ExpectNear(dout, AttentionReference(qkv, mask, B, S, heads, D),
               "attention, batch " + std::to_string(B) + ", head dim " + std::to_string(D));
  }
}

TEST_P(BackendOps, LayerNormWithAndWithoutResidual) {
  // On the CPU also rows of 5 and 37 (16-lane tails) and every FP32 micro-kernel variant
  // forced: the LayerNorm rows run 16 lanes beside the AVX-512 one, 8 beside the others.
  std::vector<int64_t> widths = {48};
  std::vector<const MicroKernels*> variants = {nullptr};
  std::vector<MicroKernelVariant> all;
  if (GetParam().backend == "cpu") {
    widths.insert(widths.end(), {5, 37});
    all = AvailableMicroKernels();
    for (const MicroKernelVariant& v : all) variants.push_back(&v.kernels);
  }
  for (const MicroKernels* variant : variants) {
    std::optional<ScopedMicroKernels> forced;
    if (variant != nullptr) forced.emplace(*variant);
    for (const int64_t C : widths) CheckLayerNorm(C);
  }
}

void BackendOps::CheckLayerNorm(int64_t C) {
  const int64_t R = 21;
  auto x = Random(R * C, 2.0f), r = Random(R * C), g = Random(C), b = Random(C);
  Tensor dx = Upload(x, {R, C}), dr = Upload(r, {R, C}), dg = Upload(g, {C}), db = Upload(b, {C});
  for (const bool residual : {true, false}) {
    Tensor dy = Empty({R, C});
    ASSERT_TRUE(k().LayerNorm(dx, residual ? &dr : nullptr, dg, db, 1e-5f, dy).ok());
    std::vector<double> ref(R * C);
    for (int64_t i = 0; i < R; ++i) {
      double mean = 0, var = 0;
      auto in = [&](int64_t c) { return double{x[i * C + c]} + (residual ? r[i * C + c] : 0.0f); };
      for (int64_t c = 0; c < C; ++c) mean += in(c);
      mean /= C;
      for (int64_t c = 0; c < C; ++c) var += (in(c) - mean) * (in(c) - mean);
      var /= C;
      for (int64_t c = 0; c < C; ++c) ref[i * C + c] = (in(c) - mean) / std::sqrt(var + 1e-5) * g[c] + b[c];
    }
    ExpectNear(dy, ref, (residual ? "add + layer norm, width " : "layer norm, width ") + std::to_string(C));
  }
}

// Widths of a tail alone and of whole vectors and a tail (8 and 16 lanes).
TEST_P(BackendOps, EmbeddingSumAddsWordPositionAndTypeRows) {
  for (const int64_t H : {int64_t{5}, int64_t{37}}) {
    const int64_t V = 11, P = 9, T = 2, B = 2, S = 7;
    auto word = Random(V * H), pos = Random(P * H), type = Random(T * H);
    std::vector<int32_t> ids(B * S), tt(B * S);
    for (int64_t i = 0; i < B * S; ++i) {
      ids[i] = static_cast<int32_t>((i * 5) % V);
      tt[i] = static_cast<int32_t>(i % 2);
    }
    Tensor dw = Upload(word, {V, H}), dp = Upload(pos, {P, H}), dt = Upload(type, {T, H});
    Tensor di = UploadI32(ids, {B, S}), dti = UploadI32(tt, {B, S}), out = Empty({B, S, H});
    ASSERT_TRUE(k().EmbeddingSum(di, dti, dw, dp, dt, out).ok());
    std::vector<double> ref(B * S * H);
    for (int64_t i = 0; i < B * S; ++i)
      for (int64_t h = 0; h < H; ++h)
        ref[i * H + h] = double{word[ids[i] * H + h]} + pos[(i % S) * H + h] + type[tt[i] * H + h];
    ExpectNear(out, ref, "embedding, width " + std::to_string(H));
  }
}

TEST_P(BackendOps, CopyIntoASliceLeavesTheRest) {
  auto a = Random(8), dst = Random(24);
  Tensor da = Upload(a, {8}), dd = Upload(dst, {24});
  ASSERT_TRUE(k().CopyInto(da, dd, 8 * DTypeSize(t())).ok());
  std::vector<double> ref(dst.begin(), dst.end());
  for (int i = 0; i < 8; ++i) ref[8 + i] = a[i];
  ExpectNear(dd, ref, "copy into a slice");
}

// Copies big enough to split among the workers (and past one 64 KiB chunk), of sizes that
// are no multiple of a cache line, at an offset that is none either: every byte lands once.
TEST_P(BackendOps, SplitCopiesLandEveryElementOnce) {
  for (int64_t n : {2049, 4099, 33333, 70001}) {
    auto a = Random(n), dst = Random(n + 37);
    Tensor da = Upload(a, {n}), dd = Upload(dst, {n + 37});
    const std::vector<float> before = Download(dd), from = Download(da);
    ASSERT_TRUE(k().CopyInto(da, dd, 5 * DTypeSize(t())).ok());
    std::vector<float> want = before;
    std::copy(from.begin(), from.end(), want.begin() + 5);
    EXPECT_EQ(Download(dd), want) << "split copy of " << n;
  }
}

// Sums the FLOPs of every launch an op makes, synchronous (CPU) or enqueued (CUDA).
class FlopCounter : public BackendObserver {
 public:
  double flops = 0;
  int launches = 0;
  void OnAllocate(uintptr_t, size_t, int64_t) override {}
  void OnFree(uintptr_t, size_t, int64_t) override {}
  void OnLaunch(const LaunchDesc& d, int64_t, int64_t, int64_t, int64_t,
                const std::vector<WorkerSpan>&) override {
    Count(d);
  }
  int64_t OnLaunchAsync(const LaunchDesc& d, int64_t, int64_t) override {
    Count(d);
    return -1;
  }

 private:
  void Count(const LaunchDesc& d) {
    flops += d.flops;
    ++launches;
  }
};

// Attaches an observer for a scope, and detaches it however the scope ends.
class ObserverScope {
 public:
  ObserverScope(Backend& be, BackendObserver* o) : be_(be) { be_.SetObserver(o); }
  ~ObserverScope() { be_.SetObserver(nullptr); }
  ObserverScope(const ObserverScope&) = delete;
  ObserverScope& operator=(const ObserverScope&) = delete;

 private:
  Backend& be_;
};

// One cost model on every backend (op_cost.h), pinned here by its formulas written out:
// whatever launches a backend splits an op into (a GEMM and its activation on CUDA, one
// fused launch on the CPU), their FLOPs add up to the op's. A GEMM is 2 FLOPs per
// multiply-add plus one per bias add; exact-erf GELU 8 per value, tanh 4; attention 4 per
// (query, key) pair and hidden value over the padded batch, masked keys included;
// LayerNorm 8 per value; the embedding sum 2 per value.
TEST_P(BackendOps, EveryOpCountsTheFlopsOfTheOneCostModel) {
  FlopCounter counter;
  ObserverScope attached(*be_, &counter);
  const auto measure = [&](auto&& op) {
    EXPECT_TRUE(be_->Synchronize().ok());
    counter.flops = 0;
    counter.launches = 0;
    EXPECT_TRUE(op().ok());
    EXPECT_TRUE(be_->Synchronize().ok());
    EXPECT_GE(counter.launches, 1);
    return counter.flops;
  };
  const int64_t M = 12, N = 20, K = 32;
  auto w = Random(N * K);
  const HostTensor hw{DType::kF32, {N, K}, reinterpret_cast<const std::byte*>(w.data()), w.size() * 4};
  auto packed = k().PackWeight(hw, t());
  ASSERT_TRUE(packed.ok()) << packed.status().ToString();
  Tensor dx = Upload(Random(M * K), {M, K}), db = Upload(Random(N), {N}), dy = Empty({M, N});
  for (const auto& [epilogue, per_value] :
       {std::pair{Epilogue::kNone, 0.0}, {Epilogue::kGelu, 8.0}, {Epilogue::kTanh, 4.0}}) {
    const Epilogue e = epilogue;  // a lambda may not capture a structured binding (clang 14)
    for (const bool bias : {true, false}) {
      const double want = 2.0 * M * N * K + (bias ? 1.0 * M * N : 0.0) + per_value * M * N;
      EXPECT_DOUBLE_EQ(measure([&] { return k().Linear(dx, M, K, **packed, bias ? &db : nullptr, e, dy); }), want)
          << "linear, epilogue " << static_cast<int>(e) << (bias ? " with bias" : "");
    }
  }
  const int64_t B = 3, S = 10, heads = 2, D = 8, H = heads * D;
  std::vector<int32_t> mask(B * S, 1);
  for (int64_t s = 6; s < S; ++s) mask[S + s] = 0;  // padded keys are counted all the same
  Tensor dq = Upload(Random(B * S * 3 * H), {B, S, 3 * H}), dm = UploadI32(mask, {B, S});
  Tensor dout = Empty({B, S, H});
  EXPECT_DOUBLE_EQ(measure([&] { return k().Attention(dq, dm, static_cast<int>(heads), dout); }),
                   4.0 * B * S * S * H);
  Tensor ln = Upload(Random(M * N), {M, N}), g = Upload(Random(N), {N}), lb = Upload(Random(N), {N});
  Tensor lo = Empty({M, N});
  for (const bool residual : {true, false}) {
    EXPECT_DOUBLE_EQ(measure([&] { return k().LayerNorm(ln, residual ? &ln : nullptr, g, lb, 1e-5f, lo); }),
                     8.0 * M * N);
  }
  Tensor word = Upload(Random(7 * H), {7, H}), pos = Upload(Random(S * H), {S, H});
  Tensor type = Upload(Random(2 * H), {2, H}), emb = Empty({B, S, H});
  Tensor ids = UploadI32(std::vector<int32_t>(B * S, 3), {B, S});
  Tensor tt = UploadI32(std::vector<int32_t>(B * S, 1), {B, S});
  EXPECT_DOUBLE_EQ(measure([&] { return k().EmbeddingSum(ids, tt, word, pos, type, emb); }), 2.0 * B * S * H);
}

TEST_P(BackendOps, TheFrontRefusesBrokenContractsOnEveryBackend) {
  const int64_t N = 4, K = 8;
  auto w = Random(N * K);
  const HostTensor hw{DType::kF32, {N, K}, reinterpret_cast<const std::byte*>(w.data()), w.size() * 4};
  auto packed = std::move(k().PackWeight(hw, t())).value();
  Tensor x = Upload(Random(3 * K), {3, K});
  Tensor wrong_y = Empty({3, N + 1});
  EXPECT_EQ(k().Linear(x, 3, K, *packed, nullptr, Epilogue::kNone, wrong_y).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(k().Linear(x, 4, K, *packed, nullptr, Epilogue::kNone, wrong_y).code(), StatusCode::kInvalidArgument);
  const HostTensor three_d{DType::kF32, {1, N, K}, hw.data, hw.bytes};
  EXPECT_EQ(k().PackWeight(three_d, t()).status().code(), StatusCode::kInvalidArgument);
  Tensor qkv = Upload(Random(2 * 5 * 3 * 6), {2, 5, 18}), out = Empty({2, 5, 6});
  Tensor mask = UploadI32(std::vector<int32_t>(10, 1), {2, 5});
  EXPECT_EQ(k().Attention(qkv, mask, 4, out).code(), StatusCode::kInvalidArgument);  // 6 % 4 != 0
  Tensor g = Upload(Random(7), {7}), ln_out = Empty({3, K});
  EXPECT_EQ(k().LayerNorm(x, nullptr, g, g, 1e-5f, ln_out).code(), StatusCode::kInvalidArgument);
  Tensor small = Empty({4}), big = Empty({6});
  EXPECT_EQ(k().CopyInto(big, small, 0).code(), StatusCode::kOutOfRange);
}

std::vector<OpCase> Cases() {
  std::vector<OpCase> v;
  for (const char* backend : {"cpu", GpuKind()}) {
    if (std::string(backend) != "cpu" && !HaveGpuBackend()) continue;
    for (DType t : {DType::kF32, DType::kF16, DType::kBF16}) v.push_back({backend, t});
  }
  return v;
}

INSTANTIATE_TEST_SUITE_P(EveryBackendAndDType, BackendOps, ::testing::ValuesIn(Cases()), CaseName);

}  // namespace
}  // namespace tierscope
