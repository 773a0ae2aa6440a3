// Per-row u8 quantization of FP32 activations for the INT8 GEMM (quantize_rows.h): the
// row's range in one pass, its scale and zero point from that (one scalar definition), the
// codes in a second pass, on 8 lanes or 16. Codes are round(fma(x, 1/scale, zp)) clamped
// to [0, 255] in every lane and in the scalar tail alike (vcvtps2dq rounds to nearest
// even, as nearbyint does), so both widths give the same bytes.
#include "backend/cpu/quantize_rows.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "backend/cpu/vec_math.h"

namespace tierscope {
namespace {

struct RowQuant {
  float scale, inv, zp;
};

// The scale and zero point of a row whose range is [lo, hi] (lo <= 0 <= hi); false, with
// the row's codes zero and its scale NaN, where `poison` (the sum of x * 0 over the row)
// says it holds a NaN or an infinity.
bool RowParams(float lo, float hi, float poison, int64_t k, uint8_t* q, float* params, RowQuant* out) {
  if (poison != 0.0f || std::isnan(poison)) {
    std::memset(q, 0, static_cast<size_t>(k));
    params[0] = std::numeric_limits<float>::quiet_NaN();
    params[1] = 0;
    return false;
  }
  const double range = static_cast<double>(hi) - static_cast<double>(lo);
  float scale = range > 0 ? static_cast<float>(range / kQActMax) : 1.0f;
  float inv = 1.0f / scale;
  if (!std::isfinite(inv)) scale = inv = 1.0f;  // a range below ~1e-36: every code rounds to 0
  // + 0: a -0 (lo = -0, which the lanes' min may give where the scalar fold keeps +0) is +0.
  const float zp = std::clamp(std::nearbyint(-lo / scale), 0.0f, static_cast<float>(kQActMax)) + 0.0f;
  params[0] = scale;
  params[1] = zp;
  *out = {scale, inv, zp};
  return true;
}

void QuantizeRow8(const float* x, int64_t k, int64_t kp, uint8_t* q, float* params) {
  __m256 vlo = _mm256_setzero_ps(), vhi = _mm256_setzero_ps(), vpoison = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j + 8 <= k; j += 8) {
    const __m256 v = _mm256_loadu_ps(x + j);
    vlo = _mm256_min_ps(vlo, v);
    vhi = _mm256_max_ps(vhi, v);
    vpoison = _mm256_add_ps(vpoison, _mm256_mul_ps(v, _mm256_setzero_ps()));  // NaN unless finite
  }
  float lane_lo[8], lane_hi[8], lane_poison[8];
  _mm256_storeu_ps(lane_lo, vlo);
  _mm256_storeu_ps(lane_hi, vhi);
  _mm256_storeu_ps(lane_poison, vpoison);
  float lo = 0, hi = 0, poison = 0;
  for (int l = 0; l < 8; ++l) {
    lo = std::min(lo, lane_lo[l]);
    hi = std::max(hi, lane_hi[l]);
    poison += lane_poison[l];
  }
  for (; j < k; ++j) {
    lo = std::min(lo, x[j]);
    hi = std::max(hi, x[j]);
    poison += x[j] * 0.0f;
  }
  std::memset(q + k, 0, static_cast<size_t>(kp - k));
  RowQuant rq;
  if (!RowParams(lo, hi, poison, k, q, params, &rq)) return;
  const float top = static_cast<float>(kQActMax);
  const __m256 vinv = _mm256_set1_ps(rq.inv), vzp = _mm256_set1_ps(rq.zp), vtop = _mm256_set1_ps(top);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  j = 0;
  for (; j + 32 <= k; j += 32) {
    __m256i c[4];
    for (int g = 0; g < 4; ++g) {
      const __m256 v = _mm256_fmadd_ps(_mm256_loadu_ps(x + j + 8 * g), vinv, vzp);
      c[g] = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(v, _mm256_setzero_ps()), vtop));
    }
    // Pack 4 x 8 int32 into 32 bytes; the packs work per 128-bit lane, so reorder.
    const __m256i w = _mm256_packus_epi16(_mm256_packs_epi32(c[0], c[1]), _mm256_packs_epi32(c[2], c[3]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + j), _mm256_permutevar8x32_epi32(w, order));
  }
  for (; j < k; ++j) q[j] = static_cast<uint8_t>(std::clamp(std::nearbyint(std::fma(x[j], rq.inv, rq.zp)), 0.0f, top));
}

// QuantizeRow8's operations on 16 lanes, the tail masked (its lanes read as 0, which
// moves neither the range, which holds 0, nor the poison sum); two accumulators of each.
__attribute__((target("avx512f"))) void QuantizeRow16(const float* x, int64_t k, int64_t kp, uint8_t* q,
                                                       float* params) {
  const __m512 zero = _mm512_setzero_ps();
  __m512 lo0 = zero, lo1 = zero, hi0 = zero, hi1 = zero, p0 = zero, p1 = zero;
  int64_t j = 0;
  for (; j + 32 <= k; j += 32) {
    const __m512 a = _mm512_loadu_ps(x + j), b = _mm512_loadu_ps(x + j + 16);
    lo0 = _mm512_min_ps(lo0, a);
    hi0 = _mm512_max_ps(hi0, a);
    p0 = _mm512_add_ps(p0, _mm512_mul_ps(a, zero));  // NaN unless finite
    lo1 = _mm512_min_ps(lo1, b);
    hi1 = _mm512_max_ps(hi1, b);
    p1 = _mm512_add_ps(p1, _mm512_mul_ps(b, zero));
  }
  for (; j < k; j += 16) {
    const __m512 a = _mm512_maskz_loadu_ps(TailMask16(k - j), x + j);
    lo0 = _mm512_min_ps(lo0, a);
    hi0 = _mm512_max_ps(hi0, a);
    p0 = _mm512_add_ps(p0, _mm512_mul_ps(a, zero));
  }
  QuantizeRowInRange16(x, k, kp, _mm512_min_ps(lo0, lo1), _mm512_max_ps(hi0, hi1), _mm512_add_ps(p0, p1), q, params);
}

}  // namespace

__attribute__((target("avx512f"))) void QuantizeRowInRange16(const float* x, int64_t k, int64_t kp, __m512 lo16,
                                                              __m512 hi16, __m512 poison16, uint8_t* q,
                                                              float* params) {
  const __m512 zero = _mm512_setzero_ps();
  const float lo = _mm512_reduce_min_ps(lo16);
  const float hi = _mm512_reduce_max_ps(hi16);
  const float poison = _mm512_reduce_add_ps(poison16);
  std::memset(q + k, 0, static_cast<size_t>(kp - k));
  RowQuant rq;
  if (!RowParams(lo, hi, poison, k, q, params, &rq)) return;
  const __m512 vinv = _mm512_set1_ps(rq.inv), vzp = _mm512_set1_ps(rq.zp);
  const __m512 vtop = _mm512_set1_ps(static_cast<float>(kQActMax));
  // Whole 16-lane chunks narrow in a register and store 16 bytes (the narrowing store,
  // vpmovusdb to memory, is several times slower on Zen 4); the tail stores masked.
  int64_t j = 0;
  for (; j + 16 <= k; j += 16) {
    const __m512 v = _mm512_fmadd_ps(_mm512_loadu_ps(x + j), vinv, vzp);
    const __m512i c = _mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(v, zero), vtop));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + j), _mm512_cvtusepi32_epi8(c));
  }
  if (j < k) {
    const __mmask16 m = TailMask16(k - j);
    const __m512 v = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, x + j), vinv, vzp);
    const __m512i c = _mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(v, zero), vtop));
    _mm512_mask_cvtusepi32_storeu_epi8(q + j, m, c);
  }
}

Status CheckCodeLayout(const QuantizedRows& q, const char* op) {
  if (q.codes.numel() != PaddedRows(q.rows) * PaddedCodeBytes(q.k)) {
    return InvalidArgument(std::string(op) + ": " + std::to_string(q.codes.numel()) + " code bytes for " +
                           std::to_string(q.rows) + " rows of " + std::to_string(q.k) + " (the CPU holds " +
                           std::to_string(PaddedRows(q.rows) * PaddedCodeBytes(q.k)) +
                           "; make them with NewQuantizedRows)");
  }
  return OkStatus();
}

QuantizeRowFn PickQuantizeRow(const Int8MicroKernels& mk) { return mk.avx512() ? QuantizeRow16 : QuantizeRow8; }

}  // namespace tierscope
