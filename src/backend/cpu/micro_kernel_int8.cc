// The INT8 micro-kernels (AVX512-VNNI, AVX-VNNI, AVX2, scalar), chosen once at run time
// for the CPU at hand; every variant the CPU can run is listed for the tests.
#include "backend/cpu/micro_kernel_int8.h"

#include <immintrin.h>

#include <atomic>
#include <cstring>

#include "core/cpu_info.h"

namespace tierscope {
namespace {

// Four activation codes of row r at group k, as one 32-bit lane to broadcast.
inline int32_t Quad(const uint8_t* a, int64_t lda, int r, int64_t k) {
  int32_t v;
  std::memcpy(&v, a + r * lda + k * kQK, sizeof(v));
  return v;
}

template <int MR>
__attribute__((target("avx512f,avx512bw,avx512vnni"))) void Int8PairAvx512Vnni(
    int64_t kq, const uint8_t* a, int64_t lda, const int8_t* b0, const int8_t* b1, int32_t* c,
    int64_t ldc) {
  __m512i x[MR], y[MR];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) x[r] = y[r] = _mm512_setzero_si512();
  for (int64_t k = 0; k < kq; ++k) {
    const __m512i v0 = _mm512_loadu_si512(b0 + k * kQGroupBytes);
    const __m512i v1 = _mm512_loadu_si512(b1 + k * kQGroupBytes);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m512i av = _mm512_set1_epi32(Quad(a, lda, r, k));
      x[r] = _mm512_dpbusd_epi32(x[r], av, v0);
      y[r] = _mm512_dpbusd_epi32(y[r], av, v1);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    _mm512_storeu_si512(c + r * ldc, x[r]);
    _mm512_storeu_si512(c + r * ldc + kNR, y[r]);
  }
}

template <int MR>
__attribute__((target("avx512f,avx512bw,avx512vnni"))) void Int8Avx512Vnni(
    int64_t kq, const uint8_t* a, int64_t lda, const int8_t* b, int32_t* c, int64_t ldc) {
  __m512i x[MR];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) x[r] = _mm512_setzero_si512();
  for (int64_t k = 0; k < kq; ++k) {
    const __m512i v = _mm512_loadu_si512(b + k * kQGroupBytes);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) x[r] = _mm512_dpbusd_epi32(x[r], _mm512_set1_epi32(Quad(a, lda, r, k)), v);
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) _mm512_storeu_si512(c + r * ldc, x[r]);
}

template <int MR>
__attribute__((target("avx2,avxvnni"))) void Int8AvxVnni(int64_t kq, const uint8_t* a, int64_t lda,
                                                         const int8_t* b, int32_t* c, int64_t ldc) {
  __m256i x[MR], y[MR];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) x[r] = y[r] = _mm256_setzero_si256();
  for (int64_t k = 0; k < kq; ++k) {
    const __m256i v0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + k * kQGroupBytes));
    const __m256i v1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + k * kQGroupBytes + 32));
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m256i av = _mm256_set1_epi32(Quad(a, lda, r, k));
      x[r] = _mm256_dpbusd_avx_epi32(x[r], av, v0);
      y[r] = _mm256_dpbusd_avx_epi32(y[r], av, v1);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + r * ldc), x[r]);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + r * ldc + 8), y[r]);
  }
}

// vpmaddubsw: u8 x s8 pairs into int16 (exact for codes <= 127); vpmaddwd by ones: the
// two int16 pairs of each group into int32.
template <int MR>
__attribute__((target("avx2"))) void Int8Avx2(int64_t kq, const uint8_t* a, int64_t lda, const int8_t* b,
                                              int32_t* c, int64_t ldc) {
  __m256i x[MR], y[MR];
  const __m256i ones = _mm256_set1_epi16(1);
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) x[r] = y[r] = _mm256_setzero_si256();
  for (int64_t k = 0; k < kq; ++k) {
    const __m256i v0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + k * kQGroupBytes));
    const __m256i v1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + k * kQGroupBytes + 32));
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m256i av = _mm256_set1_epi32(Quad(a, lda, r, k));
      x[r] = _mm256_add_epi32(x[r], _mm256_madd_epi16(_mm256_maddubs_epi16(av, v0), ones));
      y[r] = _mm256_add_epi32(y[r], _mm256_madd_epi16(_mm256_maddubs_epi16(av, v1), ones));
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + r * ldc), x[r]);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + r * ldc + 8), y[r]);
  }
}

template <int MR>
void Int8Scalar(int64_t kq, const uint8_t* a, int64_t lda, const int8_t* b, int32_t* c, int64_t ldc) {
  for (int r = 0; r < MR; ++r) {
    for (int j = 0; j < kNR; ++j) {
      int32_t s = 0;
      for (int64_t k = 0; k < kq; ++k) {
        for (int q = 0; q < kQK; ++q) {
          s += static_cast<int32_t>(a[r * lda + k * kQK + q]) *
               static_cast<int32_t>(b[k * kQGroupBytes + j * kQK + q]);
        }
      }
      c[r * ldc + j] = s;
    }
  }
}

#define TS_INT8_KERNELS(K) {nullptr, K<1>, K<2>, K<3>, K<4>, K<5>, K<6>}

}  // namespace

std::vector<Int8MicroKernels> AvailableInt8MicroKernels() {
  std::vector<Int8MicroKernels> v;
  if (CpuRunsIsa("avx512vnni")) {
    v.push_back({"avx512vnni", 255, TS_INT8_KERNELS(Int8Avx512Vnni), TS_INT8_KERNELS(Int8PairAvx512Vnni)});
  }
  if (CpuRunsIsa("avxvnni")) v.push_back({"avxvnni", 255, TS_INT8_KERNELS(Int8AvxVnni), {}});
  if (CpuRunsIsa("avx2+fma")) v.push_back({"avx2", 127, TS_INT8_KERNELS(Int8Avx2), {}});
  v.push_back({"scalar", 255, TS_INT8_KERNELS(Int8Scalar), {}});
  return v;
}

#undef TS_INT8_KERNELS

namespace {
std::atomic<const Int8MicroKernels*> g_forced{nullptr};
}  // namespace

const Int8MicroKernels& GetInt8MicroKernels() {
  static const Int8MicroKernels k = AvailableInt8MicroKernels().front();
  const Int8MicroKernels* forced = g_forced.load(std::memory_order_acquire);
  return forced != nullptr ? *forced : k;
}

ScopedInt8MicroKernels::ScopedInt8MicroKernels(const Int8MicroKernels& variant)
    : variant_(variant), previous_(g_forced.exchange(&variant_, std::memory_order_acq_rel)) {}

ScopedInt8MicroKernels::~ScopedInt8MicroKernels() { g_forced.store(previous_, std::memory_order_release); }

}  // namespace tierscope
