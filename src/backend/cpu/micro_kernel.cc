// The FP32 register-blocked micro-kernels (AVX-512, AVX2+FMA, scalar), chosen once at
// run time for the CPU at hand.
#include "backend/cpu/micro_kernel.h"

#include <immintrin.h>

namespace tierscope {
namespace {

template <int MR>
__attribute__((target("avx2,fma"))) void MicroKernelAvx2(int64_t kc, const float* a,
                                                        int64_t lda, const float* b, float* c,
                                                        int64_t ldc) {
  __m256 c0[MR], c1[MR];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    c0[r] = _mm256_loadu_ps(c + r * ldc);
    c1[r] = _mm256_loadu_ps(c + r * ldc + 8);
  }
  for (int64_t k = 0; k < kc; ++k) {
    const __m256 b0 = _mm256_loadu_ps(b + k * kNR);
    const __m256 b1 = _mm256_loadu_ps(b + k * kNR + 8);
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

template <int MR>
__attribute__((target("avx512f"))) void MicroKernelAvx512(int64_t kc, const float* a,
                                                         int64_t lda, const float* b, float* c,
                                                         int64_t ldc) {
  __m512 acc[MR];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) acc[r] = _mm512_loadu_ps(c + r * ldc);
  for (int64_t k = 0; k < kc; ++k) {
    const __m512 bv = _mm512_loadu_ps(b + k * kNR);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(a[r * lda + k]), bv, acc[r]);
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) _mm512_storeu_ps(c + r * ldc, acc[r]);
}

template <int MR>
void MicroKernelScalar(int64_t kc, const float* a, int64_t lda, const float* b, float* c,
                       int64_t ldc) {
  for (int r = 0; r < MR; ++r) {
    for (int64_t k = 0; k < kc; ++k) {
      const float av = a[r * lda + k];
      for (int j = 0; j < kNR; ++j) c[r * ldc + j] += av * b[k * kNR + j];
    }
  }
}

MicroKernels SelectMicroKernels() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) {
    return {{nullptr, MicroKernelAvx512<1>, MicroKernelAvx512<2>, MicroKernelAvx512<3>,
             MicroKernelAvx512<4>, MicroKernelAvx512<5>, MicroKernelAvx512<6>}};
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    return {{nullptr, MicroKernelAvx2<1>, MicroKernelAvx2<2>, MicroKernelAvx2<3>,
             MicroKernelAvx2<4>, MicroKernelAvx2<5>, MicroKernelAvx2<6>}};
  }
  return {{nullptr, MicroKernelScalar<1>, MicroKernelScalar<2>, MicroKernelScalar<3>,
           MicroKernelScalar<4>, MicroKernelScalar<5>, MicroKernelScalar<6>}};
}

}  // namespace

const MicroKernels& GetMicroKernels() {
  static const MicroKernels k = SelectMicroKernels();
  return k;
}


}  // namespace tierscope
