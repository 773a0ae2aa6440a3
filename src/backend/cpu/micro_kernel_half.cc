// The FP32 micro-kernels over B panels stored as BF16 or FP16 (AVX-512, AVX2+FMA, scalar):
// each B row is widened to FP32 in registers as it is loaded (BF16: the 16 bits moved to
// the top of a 32-bit lane; FP16: F16C's vcvtph2ps), so a half-precision GEMM reads its
// weights once, at half the bytes, with no conversion pass and no buffer between.
#include <immintrin.h>

#include <string_view>

#include "backend/cpu/micro_kernel.h"
#include "tierscope/dtype.h"

namespace tierscope {
namespace {

template <bool kBf16>
__attribute__((target("avx2,fma,f16c"), always_inline)) inline __m256 Widen8(const uint16_t* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  if constexpr (kBf16) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  } else {
    return _mm256_cvtph_ps(h);
  }
}

template <bool kBf16>
__attribute__((target("avx512f"), always_inline)) inline __m512 Widen16(const uint16_t* p) {
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  if constexpr (kBf16) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  } else {
    return _mm512_cvtph_ps(h);
  }
}

template <bool kBf16, int MR, bool kAcc>
__attribute__((target("avx2,fma,f16c"))) void HalfKernelAvx2(int64_t kc, const float* a, int64_t lda,
                                                            const uint16_t* b, float* c, int64_t ldc) {
  __m256 c0[MR], c1[MR];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    c0[r] = kAcc ? _mm256_loadu_ps(c + r * ldc) : _mm256_setzero_ps();
    c1[r] = kAcc ? _mm256_loadu_ps(c + r * ldc + 8) : _mm256_setzero_ps();
  }
#pragma GCC unroll 4
  for (int64_t k = 0; k < kc; ++k) {
    const __m256 b0 = Widen8<kBf16>(b + k * kNR);
    const __m256 b1 = Widen8<kBf16>(b + k * kNR + 8);
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

template <bool kBf16, int MR, bool kAcc>
__attribute__((target("avx512f"))) void HalfKernelAvx512(int64_t kc, const float* a, int64_t lda,
                                                        const uint16_t* b, float* c, int64_t ldc) {
  __m512 acc[MR];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) acc[r] = kAcc ? _mm512_loadu_ps(c + r * ldc) : _mm512_setzero_ps();
  for (int64_t k = 0; k < kc; ++k) {
    const __m512 bv = Widen16<kBf16>(b + k * kNR);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(a[r * lda + k]), bv, acc[r]);
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) _mm512_storeu_ps(c + r * ldc, acc[r]);
}

template <bool kBf16, int MR, bool kAcc>
__attribute__((target("avx512f"))) void HalfKernelAvx512Wide(int64_t kc, const float* a, int64_t lda,
                                                            const uint16_t* b, int64_t panel_stride, float* c,
                                                            int64_t ldc) {
  __m512 acc[MR][kWidePanels];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 3
    for (int p = 0; p < kWidePanels; ++p) {
      acc[r][p] = kAcc ? _mm512_loadu_ps(c + r * ldc + p * kNR) : _mm512_setzero_ps();
    }
  }
  const uint16_t* b1 = b + panel_stride;
  const uint16_t* b2 = b1 + panel_stride;
  for (int64_t k = 0; k < kc; ++k) {
    const __m512 v0 = Widen16<kBf16>(b + k * kNR), v1 = Widen16<kBf16>(b1 + k * kNR),
                 v2 = Widen16<kBf16>(b2 + k * kNR);
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

template <bool kBf16, int MR, bool kAcc>
void HalfKernelScalar(int64_t kc, const float* a, int64_t lda, const uint16_t* b, float* c, int64_t ldc) {
  for (int r = 0; r < MR; ++r) {
    if (!kAcc) {
      for (int j = 0; j < kNR; ++j) c[r * ldc + j] = 0.0f;
    }
    for (int64_t k = 0; k < kc; ++k) {
      const float av = a[r * lda + k];
      for (int j = 0; j < kNR; ++j) {
        const uint16_t h = b[k * kNR + j];
        c[r * ldc + j] += av * (kBf16 ? BF16ToFloat(h) : HalfToFloat(h));
      }
    }
  }
}

#define TS_HALF_KERNELS(K, B, ACC) \
  {nullptr, K<B, 1, ACC>, K<B, 2, ACC>, K<B, 3, ACC>, K<B, 4, ACC>, K<B, 5, ACC>, K<B, 6, ACC>}
#define TS_HALF_WIDE_KERNELS(K, B, ACC)                                                                    \
  {nullptr, K<B, 1, ACC>, K<B, 2, ACC>, K<B, 3, ACC>, K<B, 4, ACC>, K<B, 5, ACC>, K<B, 6, ACC>, K<B, 7, ACC>, \
   K<B, 8, ACC>}

template <bool kBf16>
HalfPanelKernels Make(const char* isa) {
  const std::string_view name(isa);
  if (name == "avx512f") {
    return {TS_HALF_KERNELS(HalfKernelAvx512, kBf16, true), TS_HALF_KERNELS(HalfKernelAvx512, kBf16, false),
            TS_HALF_WIDE_KERNELS(HalfKernelAvx512Wide, kBf16, true),
            TS_HALF_WIDE_KERNELS(HalfKernelAvx512Wide, kBf16, false)};
  }
  if (name == "avx2+fma") {
    return {TS_HALF_KERNELS(HalfKernelAvx2, kBf16, true), TS_HALF_KERNELS(HalfKernelAvx2, kBf16, false)};
  }
  return {TS_HALF_KERNELS(HalfKernelScalar, kBf16, true), TS_HALF_KERNELS(HalfKernelScalar, kBf16, false)};
}

#undef TS_HALF_KERNELS
#undef TS_HALF_WIDE_KERNELS

}  // namespace

HalfPanelKernels HalfPanelKernelsFor(const char* isa, bool bf16) {
  return bf16 ? Make<true>(isa) : Make<false>(isa);
}

}  // namespace tierscope
