// Branch-free float exp, erf, tanh and GELU that compilers vectorise (libm's calls
// block vectorisation). exp: Cephes' polynomial, max rel err ~1e-7; erf: the rational
// approximation used by Eigen and XLA, max abs err ~4e-7 (checked against std::erf in
// tests/backend/vec_math_test.cc); GELU on 16 lanes from a table of Phi's polynomials
// (Gelu16). A NaN input gives a NaN in every lane and in the scalar tail alike.
#ifndef TIERSCOPE_BACKEND_CPU_VEC_MATH_H_
#define TIERSCOPE_BACKEND_CPU_VEC_MATH_H_

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define TIERSCOPE_VEC_AVX2 1
#endif

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/cpu_info.h"

namespace tierscope {

// Clamps x to [lo, hi] and keeps a NaN a NaN (std::min/max would turn it into a bound,
// while the vector code's _mm256_min/max_ps pass it through: the lanes must agree).
inline float ClampKeepNan(float x, float lo, float hi) { return x < lo ? lo : (x > hi ? hi : x); }

inline float FastExp(float x) {
  if (x != x) return x;  // NaN in, NaN out (and no float-to-int conversion of a NaN below)
  x = ClampKeepNan(x, -88.3762626647949f, 88.3762626647949f);
  const float fx = std::floor(x * 1.44269504088896341f + 0.5f);
  const float r = x - fx * 0.693359375f - fx * -2.12194440e-4f;
  float y = 1.9875691500e-4f;
  y = y * r + 1.3981999507e-3f;
  y = y * r + 8.3334519073e-3f;
  y = y * r + 4.1665795894e-2f;
  y = y * r + 1.6666665459e-1f;
  y = y * r + 5.0000001201e-1f;
  y = y * r * r + r + 1.0f;
  const int32_t n = static_cast<int32_t>(fx) + 127;
  const uint32_t bits = static_cast<uint32_t>(std::max(n, 0)) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof(scale));
  return y * scale;
}

// erf(x) ~ x P(x^2) / Q(x^2) on [-4, 4]: the coefficients, highest power first, shared by
// the scalar, 8-lane and 16-lane versions (evaluated by Horner's rule in the same order).
inline constexpr float kErfP[] = {-2.72614225801306e-10f, 2.77068142495902e-08f, -2.10102402082508e-06f,
                                  -5.69250639462346e-05f, -7.34990630326855e-04f, -2.95459980854025e-03f,
                                  -1.60960333262415e-02f};
inline constexpr float kErfQ[] = {-1.45660718464996e-05f, -2.13374055278905e-04f, -1.68282697438203e-03f,
                                  -7.37332916720468e-03f, -1.42647390514189e-02f};

inline float FastErf(float a) {
  const float x = ClampKeepNan(a, -4.0f, 4.0f);
  const float x2 = x * x;
  float p = x2 * kErfP[0] + kErfP[1];
#pragma GCC unroll 8
  for (int i = 2; i < 7; ++i) p = x2 * p + kErfP[i];
  p = x * p;
  float q = x2 * kErfQ[0] + kErfQ[1];
#pragma GCC unroll 8
  for (int i = 2; i < 5; ++i) q = x2 * q + kErfQ[i];
  return p / q;
}

// Exact (erf) GELU, as BERT's "gelu".
inline float FastGelu(float x) { return 0.5f * x * (1.0f + FastErf(x * 0.70710678118654752f)); }

inline float FastTanh(float x) {
  // tanh(x) = sign(x) * (1 - e) / (1 + e) with e = exp(-2|x|): no cancellation for large |x|.
  const float e = FastExp(-2.0f * std::fabs(x));
  const float t = (1.0f - e) / (1.0f + e);
  return std::copysign(t, x);
}

#ifdef TIERSCOPE_VEC_AVX2
// Eight lanes of the same functions (the scalar ones do not auto-vectorise: their clamps
// are branches to GCC). Same constants, so the results match the scalar ones.
inline __m256 Exp8(__m256 x) {
  x = _mm256_min_ps(_mm256_set1_ps(88.3762626647949f), _mm256_max_ps(_mm256_set1_ps(-88.3762626647949f), x));
  const __m256 fx = _mm256_floor_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), _mm256_set1_ps(0.5f)));
  __m256 r = _mm256_fnmadd_ps(fx, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(fx, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 y = _mm256_set1_ps(1.9875691500e-4f);
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(1.3981999507e-3f));
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(8.3334519073e-3f));
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(4.1665795894e-2f));
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(1.6666665459e-1f));
  y = _mm256_fmadd_ps(y, r, _mm256_set1_ps(5.0000001201e-1f));
  y = _mm256_fmadd_ps(_mm256_mul_ps(y, r), r, _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  __m256i n = _mm256_add_epi32(_mm256_cvtps_epi32(fx), _mm256_set1_epi32(127));
  n = _mm256_max_epi32(n, _mm256_setzero_si256());
  return _mm256_mul_ps(y, _mm256_castsi256_ps(_mm256_slli_epi32(n, 23)));
}

inline __m256 Erf8(__m256 a) {
  const __m256 x = _mm256_min_ps(_mm256_set1_ps(4.0f), _mm256_max_ps(_mm256_set1_ps(-4.0f), a));
  const __m256 x2 = _mm256_mul_ps(x, x);
  __m256 p = _mm256_fmadd_ps(x2, _mm256_set1_ps(kErfP[0]), _mm256_set1_ps(kErfP[1]));
#pragma GCC unroll 8
  for (int i = 2; i < 7; ++i) p = _mm256_fmadd_ps(x2, p, _mm256_set1_ps(kErfP[i]));
  p = _mm256_mul_ps(x, p);
  __m256 q = _mm256_fmadd_ps(x2, _mm256_set1_ps(kErfQ[0]), _mm256_set1_ps(kErfQ[1]));
#pragma GCC unroll 8
  for (int i = 2; i < 5; ++i) q = _mm256_fmadd_ps(x2, q, _mm256_set1_ps(kErfQ[i]));
  return _mm256_div_ps(p, q);
}

inline __m256 Gelu8(__m256 x) {
  const __m256 e = Erf8(_mm256_mul_ps(x, _mm256_set1_ps(0.70710678118654752f)));
  return _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(0.5f), x), _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

// The mask of the first min(left, 16) lanes: the tail of a 16-lane loop.
inline __mmask16 TailMask16(int64_t left) {
  return left >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << left) - 1);
}

// Whether the 16-lane versions below run here (CpuVectorIsa's choice, made once).
inline bool RunsAvx512() {
  static const bool avx512 = CpuVectorIsa() == "avx512f";
  return avx512;
}

// Phi(|x|), the normal CDF, for Gelu16: on 16 intervals of s = |x| 2 sqrt(2) (interval k
// holds s in [k, k + 1)), a degree-5 polynomial in t = s - k, coefficient i of interval k
// at [i][k] (scripts/gelu_table.py: Chebyshev fits in double, within 3.1e-8 of Phi with
// the coefficients in float; evaluated in float, ~7.5e-8). Interval 15, |x| >= 5.30, holds
// 1 (1 - Phi < 5.7e-8 there).
alignas(64) inline constexpr float kGeluPhi[6][16] = {
    {5.000000000e-01f, 6.381632090e-01f, 7.602499127e-01f, 8.555778265e-01f, 9.213504195e-01f, 9.614500403e-01f, 9.830525517e-01f, 9.933358431e-01f, 9.976611137e-01f, 9.992686510e-01f, 9.997965097e-01f, 9.999496937e-01f, 9.999889731e-01f, 9.999978542e-01f, 9.999996424e-01f, 1.000000000e+00f},
    {1.410473138e-01f, 1.325015575e-01f, 1.098476425e-01f, 8.036633581e-02f, 5.188849941e-02f, 2.956523560e-02f, 1.486635022e-02f, 6.596894003e-03f, 2.583366353e-03f, 8.927765884e-04f, 2.722756471e-04f, 7.327954518e-05f, 1.740457446e-05f, 3.647953235e-06f, 6.747437169e-07f, 0.000000000e+00f},
    {9.835084711e-07f, -8.278908208e-03f, -1.372884214e-02f, -1.506806631e-02f, -1.297281776e-02f, -9.240214713e-03f, -5.575613584e-03f, -2.886369824e-03f, -1.291609369e-03f, -5.020390381e-04f, -1.700621069e-04f, -5.032274203e-05f, -1.303052068e-05f, -2.956456910e-06f, -5.883521226e-07f, 0.000000000e+00f},
    {-2.942431020e-03f, -2.425779123e-03f, -1.153483288e-03f, 2.064058208e-04f, 1.083922107e-03f, 1.313604647e-03f, 1.087286626e-03f, 7.054193411e-04f, 3.764349967e-04f, 1.690611098e-04f, 6.473196117e-05f, 2.130192661e-05f, 6.057538485e-06f, 1.494223170e-06f, 3.206297094e-07f, 0.000000000e+00f},
    {6.783847311e-06f, 2.677440643e-04f, 3.757628729e-04f, 3.004805185e-04f, 1.298791467e-04f, -2.115347161e-05f, -9.363619756e-05f, -9.617787146e-05f, -6.675890472e-05f, -3.599864795e-05f, -1.584901838e-05f, -5.836631772e-06f, -1.823020284e-06f, -4.872173918e-07f, -1.120916551e-07f, 0.000000000e+00f},
    {5.055077781e-05f, 2.213190965e-05f, -1.320070714e-05f, -3.257284334e-05f, -2.981503712e-05f, -1.496284949e-05f, -1.124634764e-06f, 5.531260740e-06f, 6.076275440e-06f, 4.082313808e-06f, 2.068561571e-06f, 8.436070971e-07f, 2.852842158e-07f, 8.133778806e-08f, 1.975567443e-08f, 0.000000000e+00f},
};

// Sixteen lanes, for kernels built for AVX-512 (their callers carry target("avx512f")).
// GELU(x) = x Phi(x) = min(x, 0) + |x| Phi(|x|) (Phi(-a) = 1 - Phi(a)), Phi from the table
// above: the interval's coefficients picked with vpermps (the shuffle ports), five FMAs,
// where Erf8's rational takes a dozen multiplies and a division: 1.6x the GELUs a cycle
// on Zen 4 (measured there; Intel's server cores issue vpermps on a port of an FMA unit).
// Within 1.2e-7 x max(1, |x|) of the exact GELU (tests/backend/vec_math_test.cc), where
// the 8-lane and scalar ones are within 1.9e-7; finite |x| >= 5.30 gives x or +0 exactly,
// a NaN gives a NaN (the clamp's vminps keeps the bound, the FMA the NaN), and -inf a NaN
// (-inf + inf), as the rational versions give.
__attribute__((target("avx512f"))) inline __m512 Gelu16(__m512 x) {
  const __m512 ax = _mm512_abs_ps(x);
  const __m512 s = _mm512_min_ps(_mm512_mul_ps(ax, _mm512_set1_ps(2.82842712474619010f)), _mm512_set1_ps(15.999999f));
  const __m512 k = _mm512_roundscale_ps(s, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  const __m512i idx = _mm512_cvttps_epi32(k);
  const __m512 t = _mm512_sub_ps(s, k);
  __m512 p = _mm512_permutexvar_ps(idx, _mm512_load_ps(kGeluPhi[5]));
#pragma GCC unroll 8
  for (int i = 4; i >= 0; --i) p = _mm512_fmadd_ps(p, t, _mm512_permutexvar_ps(idx, _mm512_load_ps(kGeluPhi[i])));
  return _mm512_fmadd_ps(ax, p, _mm512_min_ps(x, _mm512_setzero_ps()));
}
#endif

#ifdef TIERSCOPE_VEC_AVX2
// v[i] = GELU(v[i]) for i < n on 16 lanes, the tail masked (AVX-512 hosts).
__attribute__((target("avx512f"))) inline void GeluInPlace16(float* v, int64_t n) {
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 m = TailMask16(n - j);
    _mm512_mask_storeu_ps(v + j, m, Gelu16(_mm512_maskz_loadu_ps(m, v + j)));
  }
}
#endif

// v[i] = GELU(v[i]) for i < n: Gelu16 where the CPU runs AVX-512 (so every GELU of the
// engine, fused into a GEMM epilogue or not, is the same arithmetic), else 8 lanes.
inline void GeluInPlace(float* v, int64_t n) {
  int64_t i = 0;
#ifdef TIERSCOPE_VEC_AVX2
  if (RunsAvx512()) {
    GeluInPlace16(v, n);
    return;
  }
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(v + i, Gelu8(_mm256_loadu_ps(v + i)));
#endif
  for (; i < n; ++i) v[i] = FastGelu(v[i]);
}

// v[i] = tanh(v[i]) for i < n.
inline void TanhInPlace(float* v, int64_t n) {
  int64_t i = 0;
#ifdef TIERSCOPE_VEC_AVX2
  const __m256 one = _mm256_set1_ps(1.0f), sign = _mm256_set1_ps(-0.0f);
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_loadu_ps(v + i);
    const __m256 ax = _mm256_andnot_ps(sign, x);
    const __m256 e = Exp8(_mm256_mul_ps(_mm256_set1_ps(-2.0f), ax));
    const __m256 t = _mm256_div_ps(_mm256_sub_ps(one, e), _mm256_add_ps(one, e));
    _mm256_storeu_ps(v + i, _mm256_or_ps(t, _mm256_and_ps(sign, x)));
  }
#endif
  for (; i < n; ++i) v[i] = FastTanh(v[i]);
}

// v[i] *= f for i < n (compilers vectorise this loop as it is).
inline void ScaleInPlace(float* v, int64_t n, float f) {
  for (int64_t i = 0; i < n; ++i) v[i] *= f;
}

// The largest of s[0, n), -inf for n == 0; NaNs are passed over (as std::max's fold
// does), so the lanes and the scalar tail agree. Eight independent lanes: no chain of
// dependent compares through the row.
inline float MaxOf(const float* s, int64_t n) {
  float m = -INFINITY;
  int64_t i = 0;
#ifdef TIERSCOPE_VEC_AVX2
  __m256 vm = _mm256_set1_ps(-INFINITY);
  for (; i + 8 <= n; i += 8) vm = _mm256_max_ps(_mm256_loadu_ps(s + i), vm);  // NaN: keeps vm
  float lanes[8];
  _mm256_storeu_ps(lanes, vm);
  for (float l : lanes) m = std::max(m, l);
#endif
  for (; i < n; ++i) m = std::max(m, s[i]);
  return m;
}

#ifdef TIERSCOPE_VEC_AVX2
// Exp8 on sixteen lanes, the same results: the same operations but for y 2^fx, one
// vscalefps where Exp8 builds 2^fx's bits (3 operations fewer of 19), zero where fx is
// -127 (x below -87.68, a masked score among them) as Exp8's clamped bits give: exactly
// 0, no subnormal for the P.V FMAs to take (Intel cores take microcode assists on them).
__attribute__((target("avx512f"))) inline __m512 Exp16(__m512 x) {
  x = _mm512_min_ps(_mm512_set1_ps(88.3762626647949f), _mm512_max_ps(_mm512_set1_ps(-88.3762626647949f), x));
  const __m512 fx = _mm512_roundscale_ps(_mm512_fmadd_ps(x, _mm512_set1_ps(1.44269504088896341f), _mm512_set1_ps(0.5f)),
                                         _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(fx, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(fx, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 y = _mm512_set1_ps(1.9875691500e-4f);
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(1.3981999507e-3f));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(8.3334519073e-3f));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(4.1665795894e-2f));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(1.6666665459e-1f));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(5.0000001201e-1f));
  y = _mm512_fmadd_ps(_mm512_mul_ps(y, r), r, _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_maskz_scalef_ps(_mm512_cmp_ps_mask(fx, _mm512_set1_ps(-127.0f), _CMP_NEQ_UQ), y, fx);
}

// ExpShiftSum's body on 16 lanes, two accumulators, the tail masked (AVX-512 hosts).
__attribute__((target("avx512f"))) inline float ExpShiftSum16(float* s, int64_t n, float max) {
  const __m512 m = _mm512_set1_ps(max);
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512 e0 = Exp16(_mm512_sub_ps(_mm512_loadu_ps(s + i), m));
    const __m512 e1 = Exp16(_mm512_sub_ps(_mm512_loadu_ps(s + i + 16), m));
    _mm512_storeu_ps(s + i, e0);
    _mm512_storeu_ps(s + i + 16, e1);
    acc0 = _mm512_add_ps(acc0, e0);
    acc1 = _mm512_add_ps(acc1, e1);
  }
  for (; i < n; i += 16) {
    const __mmask16 k = TailMask16(n - i);
    const __m512 e = Exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, s + i), m));
    _mm512_mask_storeu_ps(s + i, k, e);
    acc0 = _mm512_add_ps(acc0, _mm512_maskz_mov_ps(k, e));
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
}
#endif

#ifdef TIERSCOPE_VEC_AVX2
// `n` floats of s rounded to BF16 (nearest even; a denormal becomes a signed zero, as
// vcvtneps2bf16 does) into q: attention's probabilities and FP32 rows of Q, K and V, and
// an INT8 Linear's BF16 output rows.
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) inline void RoundRowToBf16(const float* s, int64_t n,
                                                                                         uint16_t* q) {
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 m = TailMask16(n - j);
    _mm256_mask_storeu_epi16(q + j, m, (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, s + j)));
  }
}

// x_j of SoftmaxRowBf16 for the 16 keys from j (lanes outside k zero).
__attribute__((target("avx512f,avx512bw,avx512vl"))) inline __m512 ScaledMaskedScores(
    const float* s, const int32_t* mask, float scale, int64_t j, __mmask16 k) {
  __m512 x = _mm512_maskz_loadu_ps(k, s + j);
  // Rounded on its own, as ScaleInPlace's store rounds it: the explicit rounding keeps the
  // compiler from contracting it into the subtraction that follows (one rounding, not two).
  if (scale != 1.0f) x = _mm512_mul_round_ps(x, _mm512_set1_ps(scale), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  if (mask != nullptr) {
    const __mmask16 off =
        _mm512_mask_cmpeq_epi32_mask(k, _mm512_maskz_loadu_epi32(k, mask + j), _mm512_setzero_si512());
    x = _mm512_mask_add_ps(x, off, x, _mm512_set1_ps(-FLT_MAX));
  }
  return x;
}

// One row of attention's softmax for P.V on the BF16 dot kernels, in two passes, not five:
// x_j = scale * s_j (plus -FLT_MAX where mask_j is 0; mask null: none masked), e_j =
// exp(x_j - max x) rounded to BF16 into probs[0, n); returns 1 / the sum of the e_j before
// rounding. The same operations on the same values, in the same order, as ScaleInPlace,
// the mask, MaxOf, ExpShiftSum16 and vcvtneps2bf16 one after another (attention's ExpRows,
// then its RoundRowToBf16): the probabilities and the sum are theirs bit for bit (a max of
// +0 or -0 gives the same exponentials; NaNs are passed over by the max alike).
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) inline float SoftmaxRowBf16(
    const float* s, int64_t n, float scale, const int32_t* mask, uint16_t* probs) {
  __m512 vm = _mm512_set1_ps(-INFINITY);
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 k = TailMask16(n - j);
    vm = _mm512_mask_max_ps(vm, k, ScaledMaskedScores(s, mask, scale, j, k), vm);  // NaN: keeps vm, as MaxOf
  }
  const __m512 m = _mm512_set1_ps(_mm512_reduce_max_ps(vm));
  __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
  int64_t j = 0;
  for (; j + 32 <= n; j += 32) {
    const __m512 e0 = Exp16(_mm512_sub_ps(ScaledMaskedScores(s, mask, scale, j, 0xffff), m));
    const __m512 e1 = Exp16(_mm512_sub_ps(ScaledMaskedScores(s, mask, scale, j + 16, 0xffff), m));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(probs + j), (__m256i)_mm512_cvtneps_pbh(e0));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(probs + j + 16), (__m256i)_mm512_cvtneps_pbh(e1));
    acc0 = _mm512_add_ps(acc0, e0);
    acc1 = _mm512_add_ps(acc1, e1);
  }
  for (; j < n; j += 16) {
    const __mmask16 k = TailMask16(n - j);
    const __m512 e = Exp16(_mm512_sub_ps(ScaledMaskedScores(s, mask, scale, j, k), m));
    _mm256_mask_storeu_epi16(probs + j, k, (__m256i)_mm512_cvtneps_pbh(e));
    acc0 = _mm512_add_ps(acc0, _mm512_maskz_mov_ps(k, e));
  }
  return 1.0f / _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
}
#endif

// s[i] = exp(s[i] - max) for i < n; returns their sum.
inline float ExpShiftSum(float* s, int64_t n, float max) {
  int64_t i = 0;
  float sum = 0.0f;
#ifdef TIERSCOPE_VEC_AVX2
  if (RunsAvx512()) return ExpShiftSum16(s, n, max);
  const __m256 m = _mm256_set1_ps(max);
  __m256 acc = _mm256_setzero_ps();
  for (; i + 8 <= n; i += 8) {
    const __m256 e = Exp8(_mm256_sub_ps(_mm256_loadu_ps(s + i), m));
    _mm256_storeu_ps(s + i, e);
    acc = _mm256_add_ps(acc, e);
  }
  float lanes[8];
  _mm256_storeu_ps(lanes, acc);
  for (float l : lanes) sum += l;
#endif
  for (; i < n; ++i) {
    s[i] = FastExp(s[i] - max);
    sum += s[i];
  }
  return sum;
}

}  // namespace tierscope

#endif  // TIERSCOPE_BACKEND_CPU_VEC_MATH_H_
