// The FP32 register-blocked micro-kernels (AVX-512, AVX2+FMA, scalar) over FP32, BF16 or
// FP16 B panels (one template each, the panel's element a parameter), chosen once at
// run time for the CPU at hand (or forced: TIERSCOPE_FP32_KERNELS, ScopedMicroKernels);
// every variant the CPU can run is listed for the tests.
#include "backend/cpu/micro_kernel.h"

#include <immintrin.h>

#include <atomic>
#include <string>
#include <type_traits>

#include "backend/cpu/kernel_variant.h"
#include "core/cpu_info.h"
#include "tierscope/dtype.h"

namespace tierscope {
namespace {

// What a B panel holds: FP32, or BF16 / FP16 widened to FP32 in registers as it is
// loaded (BF16: its 16 bits moved to the top of a 32-bit lane; FP16: F16C's vcvtph2ps), so
// a 16-bit-weight GEMM reads its weights at half the bytes. Where a variant widens a panel
// once for many rows (HalfPanelKernels::widen), the same loads fill its FP32 scratch.
struct F32Panel { using T = float; };
struct Bf16Panel { using T = uint16_t; };
struct F16Panel { using T = uint16_t; };

template <typename P>
__attribute__((target("avx2,fma,f16c"), always_inline)) inline __m256 Load8(const typename P::T* p) {
  if constexpr (std::is_same_v<P, F32Panel>) {
    return _mm256_loadu_ps(p);
  } else {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    if constexpr (std::is_same_v<P, Bf16Panel>) {
      return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    } else {
      return _mm256_cvtph_ps(h);
    }
  }
}

template <typename P>
__attribute__((target("avx512f"), always_inline)) inline __m512 Load16(const typename P::T* p) {
  if constexpr (std::is_same_v<P, F32Panel>) {
    return _mm512_loadu_ps(p);
  } else {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    if constexpr (std::is_same_v<P, Bf16Panel>) {
      return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    } else {
      return _mm512_cvtph_ps(h);
    }
  }
}

template <typename P>
inline float LoadOne(const typename P::T* p) {
  if constexpr (std::is_same_v<P, F32Panel>) {
    return *p;
  } else if constexpr (std::is_same_v<P, Bf16Panel>) {
    return BF16ToFloat(*p);
  } else {
    return HalfToFloat(*p);
  }
}

template <typename P, int MR, bool kAcc>
__attribute__((target("avx2,fma,f16c"))) void MicroKernelAvx2(int64_t kc, const float* a, int64_t lda,
                                                             const typename P::T* b, float* c, int64_t ldc) {
  __m256 c0[MR], c1[MR];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    c0[r] = kAcc ? _mm256_loadu_ps(c + r * ldc) : _mm256_setzero_ps();
    c1[r] = kAcc ? _mm256_loadu_ps(c + r * ldc + 8) : _mm256_setzero_ps();
  }
#pragma GCC unroll 4
  for (int64_t k = 0; k < kc; ++k) {
    const __m256 b0 = Load8<P>(b + k * kNR);
    const __m256 b1 = Load8<P>(b + k * kNR + 8);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m256 av = _mm256_broadcast_ss(a + r * lda + k);
      c0[r] = _mm256_fmadd_ps(av, b0, c0[r]);
      c1[r] = _mm256_fmadd_ps(av, b1, c1[r]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    _mm256_storeu_ps(c + r * ldc, c0[r]);
    _mm256_storeu_ps(c + r * ldc + 8, c1[r]);
  }
}

template <typename P, int MR, bool kAcc>
__attribute__((target("avx512f"))) void MicroKernelAvx512(int64_t kc, const float* a, int64_t lda,
                                                         const typename P::T* b, float* c, int64_t ldc) {
  __m512 acc[MR];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) acc[r] = kAcc ? _mm512_loadu_ps(c + r * ldc) : _mm512_setzero_ps();
  for (int64_t k = 0; k < kc; ++k) {
    const __m512 bv = Load16<P>(b + k * kNR);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(a[r * lda + k]), bv, acc[r]);
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) _mm512_storeu_ps(c + r * ldc, acc[r]);
}

template <typename P, int MR, bool kAcc>  // FP32 panels only
__attribute__((target("avx512f"))) void MicroKernelAvx512Pair(int64_t kc, const float* a, int64_t lda,
                                                             const float* b0, const float* b1, float* c,
                                                             int64_t ldc) {
  __m512 x[MR], y[MR];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    x[r] = kAcc ? _mm512_loadu_ps(c + r * ldc) : _mm512_setzero_ps();
    y[r] = kAcc ? _mm512_loadu_ps(c + r * ldc + kNR) : _mm512_setzero_ps();
  }
  for (int64_t k = 0; k < kc; ++k) {
    const __m512 v0 = _mm512_loadu_ps(b0 + k * kNR), v1 = _mm512_loadu_ps(b1 + k * kNR);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m512 av = _mm512_set1_ps(a[r * lda + k]);
      x[r] = _mm512_fmadd_ps(av, v0, x[r]);
      y[r] = _mm512_fmadd_ps(av, v1, y[r]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    _mm512_storeu_ps(c + r * ldc, x[r]);
    _mm512_storeu_ps(c + r * ldc + kNR, y[r]);
  }
}

template <typename P, int MR, bool kAcc>
__attribute__((target("avx512f"))) void MicroKernelAvx512Wide(int64_t kc, const float* a, int64_t lda,
                                                             const typename P::T* b, int64_t panel_stride,
                                                             float* c, int64_t ldc) {
  __m512 acc[MR][kWidePanels];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 3
    for (int p = 0; p < kWidePanels; ++p) {
      acc[r][p] = kAcc ? _mm512_loadu_ps(c + r * ldc + p * kNR) : _mm512_setzero_ps();
    }
  }
  const typename P::T* b1 = b + panel_stride;
  const typename P::T* b2 = b1 + panel_stride;
  for (int64_t k = 0; k < kc; ++k) {
    const __m512 v0 = Load16<P>(b + k * kNR), v1 = Load16<P>(b1 + k * kNR), v2 = Load16<P>(b2 + k * kNR);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m512 av = _mm512_set1_ps(a[r * lda + k]);
      acc[r][0] = _mm512_fmadd_ps(av, v0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(av, v1, acc[r][1]);
      acc[r][2] = _mm512_fmadd_ps(av, v2, acc[r][2]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 3
    for (int p = 0; p < kWidePanels; ++p) _mm512_storeu_ps(c + r * ldc + p * kNR, acc[r][p]);
  }
}

template <typename P, int MR, bool kAcc>
void MicroKernelScalar(int64_t kc, const float* a, int64_t lda, const typename P::T* b, float* c,
                       int64_t ldc) {
  for (int r = 0; r < MR; ++r) {
    if (!kAcc) {
      for (int j = 0; j < kNR; ++j) c[r * ldc + j] = 0.0f;
    }
    for (int64_t k = 0; k < kc; ++k) {
      const float av = a[r * lda + k];
      for (int j = 0; j < kNR; ++j) c[r * ldc + j] += av * LoadOne<P>(b + k * kNR + j);
    }
  }
}

#define TS_KERNELS(K, P, ACC) \
  {nullptr, K<P, 1, ACC>, K<P, 2, ACC>, K<P, 3, ACC>, K<P, 4, ACC>, K<P, 5, ACC>, K<P, 6, ACC>}
#define TS_WIDE_KERNELS(K, P, ACC)                                                                 \
  {nullptr, K<P, 1, ACC>, K<P, 2, ACC>, K<P, 3, ACC>, K<P, 4, ACC>, K<P, 5, ACC>, K<P, 6, ACC>, K<P, 7, ACC>, \
   K<P, 8, ACC>}

template <typename P>
__attribute__((target("avx2,fma,f16c"))) void WidenAvx2(const uint16_t* src, float* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, Load8<P>(src + i));
  for (; i < n; ++i) dst[i] = LoadOne<P>(src + i);
}

template <typename P>
void WidenScalar(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = LoadOne<P>(src + i);
}

// The 16-bit-panel kernels of one variant: its single-panel form, its wide one where it
// has one, else the widening of a panel for its FP32 kernels.
template <typename P>
HalfPanelKernels HalfPanels(const std::string& isa) {
  if (isa == "avx512f") {
    return {TS_KERNELS(MicroKernelAvx512, P, true), TS_KERNELS(MicroKernelAvx512, P, false),
            TS_WIDE_KERNELS(MicroKernelAvx512Wide, P, true), TS_WIDE_KERNELS(MicroKernelAvx512Wide, P, false)};
  }
  if (isa == "avx2+fma") {
    return {TS_KERNELS(MicroKernelAvx2, P, true), TS_KERNELS(MicroKernelAvx2, P, false), {}, {}, WidenAvx2<P>};
  }
  return {TS_KERNELS(MicroKernelScalar, P, true), TS_KERNELS(MicroKernelScalar, P, false), {}, {}, WidenScalar<P>};
}

}  // namespace

std::vector<MicroKernelVariant> AvailableMicroKernels() {
  std::vector<MicroKernelVariant> v;
  for (const std::string& isa : CpuFp32KernelIsas()) {  // the CPU's variants, fastest first
    if (isa == "avx512f") {
      v.push_back({"avx512f", {TS_KERNELS(MicroKernelAvx512, F32Panel, true),
                               TS_KERNELS(MicroKernelAvx512, F32Panel, false),
                               TS_KERNELS(MicroKernelAvx512Pair, F32Panel, true),
                               TS_KERNELS(MicroKernelAvx512Pair, F32Panel, false),
                               TS_WIDE_KERNELS(MicroKernelAvx512Wide, F32Panel, true),
                               TS_WIDE_KERNELS(MicroKernelAvx512Wide, F32Panel, false)}});
    } else if (isa == "avx2+fma") {
      v.push_back({"avx2+fma",
                   {TS_KERNELS(MicroKernelAvx2, F32Panel, true), TS_KERNELS(MicroKernelAvx2, F32Panel, false)}});
    } else {
      v.push_back({"scalar",
                   {TS_KERNELS(MicroKernelScalar, F32Panel, true), TS_KERNELS(MicroKernelScalar, F32Panel, false)}});
    }
    v.back().kernels.bf16 = HalfPanels<Bf16Panel>(isa);
    v.back().kernels.f16 = HalfPanels<F16Panel>(isa);
  }
  return v;
}

#undef TS_KERNELS
#undef TS_WIDE_KERNELS

namespace {
std::atomic<const MicroKernels*> g_forced{nullptr};

struct PickedMicroKernels {
  MicroKernels kernels;
  std::string env_error;
};

// The fastest variant, unless TIERSCOPE_FP32_KERNELS names another this CPU runs.
const PickedMicroKernels& Picked() {
  static const PickedMicroKernels picked = [] {
    PickedMicroKernels p;
    p.kernels = PickKernelVariant(AvailableMicroKernels(), "", "TIERSCOPE_FP32_KERNELS", "FP32", &p.env_error).kernels;
    return p;
  }();
  return picked;
}
}  // namespace

const MicroKernels& GetMicroKernels() {
  const MicroKernels* forced = g_forced.load(std::memory_order_acquire);
  return forced != nullptr ? *forced : Picked().kernels;
}

const std::string& MicroKernelsEnvError() { return Picked().env_error; }

ScopedMicroKernels::ScopedMicroKernels(const MicroKernels& variant) : ScopedKernelVariant(g_forced, variant) {}

}  // namespace tierscope
