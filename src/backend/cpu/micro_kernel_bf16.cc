// The BF16 dot micro-kernels (AVX512_BF16), chosen once at run time for the CPU at hand (or
// forced: TIERSCOPE_BF16_KERNELS, ScopedBf16Kernels); every variant the CPU runs is listed
// for the tests.
#include "backend/cpu/micro_kernel_bf16.h"

#include <immintrin.h>

#include <atomic>
#include <cstring>
#include <string>

#include "backend/cpu/vec_math.h"
#include "core/cpu_info.h"

namespace tierscope {
namespace {

// Row r's k values 2g and 2g + 1, as one 32-bit lane to broadcast.
inline int32_t Pair(const uint16_t* a, int64_t lda, int r, int64_t g) {
  int32_t v;
  std::memcpy(&v, a + r * lda + g * kBK, sizeof(v));
  return v;
}

template <int MR, int NP>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) void Bf16DotAvx512(
    int64_t kc, const uint16_t* a, int64_t lda, const uint16_t* b, int64_t panel_stride, float* c, int64_t ldc,
    bool from_c, const Bf16Epilogue* out) {
  __m512 x[MR][NP];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 3
    for (int p = 0; p < NP; ++p) x[r][p] = from_c ? _mm512_loadu_ps(c + r * ldc + p * kNR) : _mm512_setzero_ps();
  }
  const int64_t groups = kc / kBK;
  for (int64_t g = 0; g < groups; ++g) {
    __m512bh bv[NP];
#pragma GCC unroll 3
    for (int p = 0; p < NP; ++p) bv[p] = (__m512bh)_mm512_loadu_si512(b + p * panel_stride + g * kBGroupElems);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m512bh av = (__m512bh)_mm512_set1_epi32(Pair(a, lda, r, g));
#pragma GCC unroll 3
      for (int p = 0; p < NP; ++p) x[r][p] = _mm512_dpbf16_ps(x[r][p], av, bv[p]);
    }
  }
  if (kc % kBK != 0) {  // the last k alone: its pair's other half is zero (the row may end here)
    __m512bh bv[NP];
#pragma GCC unroll 3
    for (int p = 0; p < NP; ++p) bv[p] = (__m512bh)_mm512_loadu_si512(b + p * panel_stride + groups * kBGroupElems);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m512bh av = (__m512bh)_mm512_set1_epi32(static_cast<int32_t>(a[r * lda + kc - 1]));
#pragma GCC unroll 3
      for (int p = 0; p < NP; ++p) x[r][p] = _mm512_dpbf16_ps(x[r][p], av, bv[p]);
    }
  }
  if (out == nullptr) {
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 3
      for (int p = 0; p < NP; ++p) _mm512_storeu_ps(c + r * ldc + p * kNR, x[r][p]);
    }
    return;
  }
  // The epilogue: bias, GELU, rounding to BF16 (nearest even), only the columns y has.
  __m512 bias[NP];
  __mmask16 keep[NP];
#pragma GCC unroll 3
  for (int p = 0; p < NP; ++p) {
    keep[p] = out->cols > p * kNR ? TailMask16(out->cols - p * kNR) : 0;
    bias[p] = out->bias != nullptr ? _mm512_maskz_loadu_ps(keep[p], out->bias + p * kNR) : _mm512_setzero_ps();
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 3
    for (int p = 0; p < NP; ++p) {
      __m512 v = _mm512_add_ps(x[r][p], bias[p]);
      if (out->gelu) v = Gelu16(v);
      _mm256_mask_storeu_epi16(out->y + r * out->ldy + p * kNR, keep[p], (__m256i)_mm512_cvtneps_pbh(v));
    }
  }
}

#define TS_BF16_ROWS(K, NP) {nullptr, K<1, NP>, K<2, NP>, K<3, NP>, K<4, NP>, K<5, NP>, K<6, NP>, K<7, NP>, K<8, NP>}
#define TS_BF16_KERNELS(K) {{}, TS_BF16_ROWS(K, 1), TS_BF16_ROWS(K, 2), TS_BF16_ROWS(K, 3)}

}  // namespace

std::vector<Bf16Kernels> AvailableBf16Kernels() {
  std::vector<Bf16Kernels> v;
  for (const std::string& isa : CpuBf16KernelIsas()) {
    if (isa == "avx512bf16") {
      v.push_back({"avx512bf16", TS_BF16_KERNELS(Bf16DotAvx512)});
    } else {
      v.push_back({"fp32"});
    }
  }
  return v;
}

#undef TS_BF16_ROWS
#undef TS_BF16_KERNELS

namespace {
std::atomic<const Bf16Kernels*> g_forced{nullptr};

struct PickedBf16Kernels {
  Bf16Kernels kernels;
  std::string env_error;
};

// The fastest variant, unless TIERSCOPE_BF16_KERNELS names another this CPU runs.
const PickedBf16Kernels& Picked() {
  static const PickedBf16Kernels picked = [] {
    PickedBf16Kernels p;
    p.kernels = PickKernelVariant(AvailableBf16Kernels(), "", "TIERSCOPE_BF16_KERNELS", "BF16", &p.env_error);
    return p;
  }();
  return picked;
}
}  // namespace

const Bf16Kernels& GetBf16Kernels() {
  const Bf16Kernels* forced = g_forced.load(std::memory_order_acquire);
  return forced != nullptr ? *forced : Picked().kernels;
}

const std::string& Bf16KernelsEnvError() { return Picked().env_error; }

ScopedBf16Kernels::ScopedBf16Kernels(const Bf16Kernels& variant) : ScopedKernelVariant(g_forced, variant) {}

}  // namespace tierscope
