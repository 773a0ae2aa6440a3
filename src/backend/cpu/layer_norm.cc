// CPU LayerNorm over the last dimension, optionally fused with the residual add that
// precedes it in a post-LN BERT block. Statistics are computed in FP32, two-pass. FP32 and
// BF16 rows on AVX-512 hosts (with AVX512BW) are loaded, normalised and stored 16 lanes
// at a time, BF16 widened and rounded (nearest even) in registers; else 8-lane passes
// over an FP32 copy of the row. For an INT8 Linear that follows, FP32 output rows are
// also quantized (u8 codes, quantize_rows.h): on 16 lanes from the range the last pass
// folds, else as each row is finished. The row kernels (layer_norm_rows.h) also serve the
// Linears that run the residual add and LayerNorm in their epilogue.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/layer_norm_rows.h"
#include "backend/cpu/micro_kernel.h"
#include "backend/cpu/quantize_rows.h"
#include "backend/cpu/vec_math.h"
#include "core/cpu_info.h"

namespace tierscope {
namespace {

constexpr int64_t kRowsPerTask = 16;
constexpr int kLnGroup = 4;  // rows LayerNormRows16 interleaves
static_assert(kRowsPerTask % kLnGroup == 0);

// 16 values of row data `p` (FP32, or BF16 widened: its bits on top of a 32-bit lane) from
// element c, the lanes past `m` zero.
template <DType T>
__attribute__((target("avx512f,avx512bw,avx512vl"), always_inline)) inline __m512 Load16(const void* p, int64_t c,
                                                                                        __mmask16 m) {
  if constexpr (T == DType::kF32) {
    return _mm512_maskz_loadu_ps(m, static_cast<const float*>(p) + c);
  } else {
    const __m256i h = _mm256_maskz_loadu_epi16(m, static_cast<const uint16_t*>(p) + c);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
}

// Stores the lanes `m` of v at element c of `p`: FP32, or BF16 rounded as FloatToBF16 does
// (nearest even; a NaN stays a quiet NaN).
template <DType T>
__attribute__((target("avx512f,avx512bw,avx512vl"), always_inline)) inline void Store16(void* p, int64_t c,
                                                                                       __mmask16 m, __m512 v) {
  if constexpr (T == DType::kF32) {
    _mm512_mask_storeu_ps(static_cast<float*>(p) + c, m, v);
  } else {
    const __m512i u = _mm512_castps_si512(v);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb)), 16);
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    r = _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40)));
    _mm256_mask_storeu_epi16(static_cast<uint16_t*>(p) + c, m, _mm512_cvtepi32_epi16(r));
  }
}

// Rows [r, r + N) on 16 lanes, interleaved: (x + residual) kept in FP32 in v (N rows of
// C) between the passes. Each row's arithmetic is the single row's (the same two partial
// sums, the same order), so N changes no bit; N rows give the core N independent chains
// where one 128-wide row waits on its reductions (BF16 and INT8 runs' LayerNorm: 2x).
// kCodes (FP32 rows): the last pass also folds each output row's range, and the rows are
// quantized from there (QuantizeRowInRange16), read back while in L1.
template <DType T, int N, bool kCodes>
__attribute__((target("avx512f,avx512bw,avx512vl"), always_inline)) inline void LayerNormGroup16(
    const LnRows& p, int64_t r, const float* g, const float* bt, float* v) {
  static_assert(!kCodes || T == DType::kF32);
  const int64_t C = p.cols;
  const size_t es = DTypeSize(T);
  const std::byte* x[N];
  const std::byte* res[N];
  std::byte* out[N];
  __m512 s0[N], s1[N];
#pragma GCC unroll 4
  for (int i = 0; i < N; ++i) {
    x[i] = static_cast<const std::byte*>(p.x) + (r + i) * p.ldx * es;
    res[i] = p.residual != nullptr ? static_cast<const std::byte*>(p.residual) + (r + i) * p.ldr * es : nullptr;
    out[i] = static_cast<std::byte*>(p.out) + (r + i) * p.ldo * es;
    s0[i] = s1[i] = _mm512_setzero_ps();
  }
  for (int64_t c = 0; c < C; c += 16) {
    const __mmask16 m = TailMask16(C - c);
#pragma GCC unroll 4
    for (int i = 0; i < N; ++i) {
      __m512 a = Load16<T>(x[i], c, m);
      if (res[i] != nullptr) a = _mm512_add_ps(a, Load16<T>(res[i], c, m));
      _mm512_mask_storeu_ps(v + i * C + c, m, a);
      if ((c / 16) % 2 == 0) {
        s0[i] = _mm512_add_ps(s0[i], a);
      } else {
        s1[i] = _mm512_add_ps(s1[i], a);
      }
    }
  }
  __m512 vm[N], q0[N], q1[N];
#pragma GCC unroll 4
  for (int i = 0; i < N; ++i) {
    vm[i] = _mm512_set1_ps(_mm512_reduce_add_ps(_mm512_add_ps(s0[i], s1[i])) / static_cast<float>(C));
    q0[i] = q1[i] = _mm512_setzero_ps();
  }
  for (int64_t c = 0; c < C; c += 16) {
    const __mmask16 m = TailMask16(C - c);
#pragma GCC unroll 4
    for (int i = 0; i < N; ++i) {
      const __m512 d = _mm512_maskz_sub_ps(m, _mm512_maskz_loadu_ps(m, v + i * C + c), vm[i]);
      if ((c / 16) % 2 == 0) {
        q0[i] = _mm512_fmadd_ps(d, d, q0[i]);
      } else {
        q1[i] = _mm512_fmadd_ps(d, d, q1[i]);
      }
    }
  }
  __m512 rstd[N], lo[N], hi[N], poison[N];
#pragma GCC unroll 4
  for (int i = 0; i < N; ++i) {
    const float var = _mm512_reduce_add_ps(_mm512_add_ps(q0[i], q1[i])) / static_cast<float>(C);
    rstd[i] = _mm512_set1_ps(1.0f / std::sqrt(var + p.eps));
    lo[i] = hi[i] = poison[i] = _mm512_setzero_ps();
  }
  for (int64_t c = 0; c < C; c += 16) {
    const __mmask16 m = TailMask16(C - c);
    const __m512 gv = _mm512_maskz_loadu_ps(m, g + c), bv = _mm512_maskz_loadu_ps(m, bt + c);
#pragma GCC unroll 4
    for (int i = 0; i < N; ++i) {
      const __m512 n = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, v + i * C + c), vm[i]), rstd[i]);
      const __m512 y = _mm512_fmadd_ps(n, gv, bv);
      Store16<T>(out[i], c, m, y);
      if constexpr (kCodes) {  // the lanes past the row count as 0, as a masked load reads them
        const __m512 yz = _mm512_maskz_mov_ps(m, y);
        lo[i] = _mm512_min_ps(lo[i], yz);
        hi[i] = _mm512_max_ps(hi[i], yz);
        poison[i] = _mm512_add_ps(poison[i], _mm512_mul_ps(yz, _mm512_setzero_ps()));
      }
    }
  }
  if constexpr (kCodes) {
#pragma GCC unroll 4
    for (int i = 0; i < N; ++i) {
      QuantizeRowInRange16(reinterpret_cast<const float*>(out[i]), C, p.kp, lo[i], hi[i], poison[i],
                           p.codes + (r + i) * p.kp, p.code_params + 2 * (r + i));
    }
  }
}

// Rows [r0, r1) on 16 lanes, kLnGroup at a time (v: kLnGroup rows of C floats).
template <DType T, bool kCodes>
__attribute__((target("avx512f,avx512bw,avx512vl"))) void LayerNormRows16(const LnRows& p, int64_t r0, int64_t r1,
                                                                          const float* g, const float* bt, float* v) {
  int64_t r = r0;
  for (; r + kLnGroup <= r1; r += kLnGroup) LayerNormGroup16<T, kLnGroup, kCodes>(p, r, g, bt, v);
  for (; r < r1; ++r) LayerNormGroup16<T, 1, kCodes>(p, r, g, bt, v);
}

// Whether LayerNormRows16 runs: the AVX-512 FP32 micro-kernels are in force (forcing
// another variant tests the 8-lane rows), and the CPU has the 16-bit masked loads and stores.
bool RunsLayerNorm16() {
  static const bool bw = CpuHasFlag("avx512bw") && CpuHasFlag("avx512vl");
  return bw && GetMicroKernels().avx512();
}

// Rows [r0, r1) on 8 lanes over an FP32 copy of each row, quantized after (FP32 out).
void LayerNormRows8(const LnRows& p, const float* g, const float* bt, int64_t r0, int64_t r1, float* scratch) {
  const int64_t C = p.cols;
  float* v = scratch;
  float* tmp = v + C;
  const size_t es = DTypeSize(p.dtype);
  for (int64_t r = r0; r < r1; ++r) {
    const float* x = AsFloat(p.dtype, static_cast<const std::byte*>(p.x) + r * p.ldx * es, v, C);
    if (p.residual != nullptr) {
      const float* res = AsFloat(p.dtype, static_cast<const std::byte*>(p.residual) + r * p.ldr * es, tmp, C);
      for (int64_t c = 0; c < C; ++c) v[c] = x[c] + res[c];
    } else if (x != v) {
      std::memcpy(v, x, sizeof(float) * C);
    }
    float mean = 0.0f;
#pragma omp simd reduction(+ : mean)
    for (int64_t c = 0; c < C; ++c) mean += v[c];
    mean /= static_cast<float>(C);
    float var = 0.0f;
#pragma omp simd reduction(+ : var)
    for (int64_t c = 0; c < C; ++c) var += (v[c] - mean) * (v[c] - mean);
    var /= static_cast<float>(C);
    const float rstd = 1.0f / std::sqrt(var + p.eps);
    if (p.dtype == DType::kF32) {
      float* out = static_cast<float*>(p.out) + r * p.ldo;
      for (int64_t c = 0; c < C; ++c) out[c] = (v[c] - mean) * rstd * g[c] + bt[c];
      if (p.codes != nullptr) p.quantize_row(out, C, p.kp, p.codes + r * p.kp, p.code_params + 2 * r);
    } else {
      for (int64_t c = 0; c < C; ++c) v[c] = (v[c] - mean) * rstd * g[c] + bt[c];
      FromFloat(v, p.dtype, static_cast<std::byte*>(p.out) + r * p.ldo * es, C);
    }
  }
}

}  // namespace

int64_t LayerNormRowScratchFloats(int64_t cols) { return kLnGroup * cols; }

LnRows DenseLnRows(DType dtype, int64_t cols, float eps) {
  LnRows p;
  p.ldx = p.ldr = p.ldo = cols;
  p.dtype = dtype;
  p.cols = cols;
  p.eps = eps;
  return p;
}

LnAffine Fp32Affine(const Tensor& gamma, const Tensor& beta, std::vector<float>* storage) {
  const int64_t n = gamma.numel();
  if (gamma.dtype() == DType::kF32) return {gamma.data_as<float>(), beta.data_as<float>()};
  storage->resize(static_cast<size_t>(2 * n));
  ToFloat(gamma.dtype(), gamma.data(), storage->data(), n);
  ToFloat(beta.dtype(), beta.data(), storage->data() + n, n);
  return {storage->data(), storage->data() + n};
}

void LayerNormRowRange(const LnRows& p, const float* g, const float* bt, int64_t r0, int64_t r1, float* scratch) {
  if (RunsLayerNorm16() && (p.dtype == DType::kF32 || p.dtype == DType::kBF16)) {
    if (p.dtype == DType::kBF16) return LayerNormRows16<DType::kBF16, false>(p, r0, r1, g, bt, scratch);
    if (p.codes != nullptr) return LayerNormRows16<DType::kF32, true>(p, r0, r1, g, bt, scratch);
    return LayerNormRows16<DType::kF32, false>(p, r0, r1, g, bt, scratch);
  }
  LayerNormRows8(p, g, bt, r0, r1, scratch);
}

Status CpuLayerNorm(CpuBackend& be, const Tensor& x, const Tensor* residual, const Tensor& gamma,
                    const Tensor& beta, float eps, Tensor& out, QuantizedRows* codes) {
  const int64_t C = x.dim(-1);  // shapes checked by the kernel front (kernels.h)
  const DType t = x.dtype();
  LnRows p = DenseLnRows(t, C, eps);
  p.x = x.data();
  p.residual = residual ? residual->data() : nullptr;
  p.out = out.data();
  const int64_t rows = x.numel() / C;
  if (codes != nullptr) {
    TS_RETURN_IF_ERROR(CheckCodeLayout(*codes, "LayerNormQuantized"));
    p.codes = static_cast<uint8_t*>(codes->codes.data());
    p.code_params = static_cast<float*>(codes->params.data());
    p.kp = PaddedCodeBytes(C);
    p.quantize_row = PickQuantizeRow(GetInt8MicroKernels());
  }
  LaunchDesc desc;
  static const char* kNames[2][4] = {
      {"cpu_layer_norm_f32_r16", "cpu_layer_norm_f16_r16", "cpu_layer_norm_bf16_r16", "cpu_layer_norm_f32_r16_u8out"},
      {"cpu_add_layer_norm_f32_r16", "cpu_add_layer_norm_f16_r16", "cpu_add_layer_norm_bf16_r16",
       "cpu_add_layer_norm_f32_r16_u8out"}};
  desc.kernel = kNames[residual ? 1 : 0][codes != nullptr ? 3 : t == DType::kF16 ? 1 : t == DType::kBF16 ? 2 : 0];
  desc.grid = Dim3{CeilDiv(rows, kRowsPerTask), 1, 1};
  desc.block = Dim3{kRowsPerTask, C, 1};
  const OpCost cost = LayerNormCost(rows, C, residual != nullptr, t);
  (codes != nullptr ? WithQuantizedOutput(cost, rows, C, PaddedCodeBytes(C), /*keep_fp32=*/true) : cost).Into(desc);
  desc.writes[0] = {out.data(), out.bytes()};
  if (codes != nullptr) {
    desc.writes[1] = {codes->codes.data(), codes->codes.bytes()};
    desc.writes[2] = {codes->params.data(), codes->params.bytes()};
  }
  std::vector<float> affine;
  const LnAffine ab = Fp32Affine(gamma, beta, &affine);
  be.EnsureScratch(static_cast<size_t>(LayerNormRowScratchFloats(C)));
  return be.Launch(desc, [&](int64_t task, int worker) {
    LayerNormRowRange(p, ab.gamma, ab.beta, task * kRowsPerTask, std::min(rows, (task + 1) * kRowsPerTask),
                      be.scratch(worker));
  });
}

}  // namespace tierscope
