// CPU LayerNorm over the last dimension, optionally fused with the residual add that
// precedes it in a post-LN BERT block. Statistics are computed in FP32, two-pass. FP32 and
// BF16 rows on AVX-512 hosts (with AVX512BW) are loaded, normalised and stored 16 lanes
// at a time, BF16 widened and rounded (nearest even) in registers; else 8-lane passes
// over an FP32 copy of the row. For an INT8 Linear that follows, FP32 output rows are
// also quantized (u8 codes, quantize_rows.h) as each task finishes them.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/micro_kernel.h"
#include "backend/cpu/quantize_rows.h"
#include "backend/cpu/vec_math.h"
#include "core/cpu_info.h"

namespace tierscope {
namespace {

constexpr int64_t kRowsPerTask = 16;
constexpr int kLnGroup = 4;  // rows LayerNormRows16 interleaves
static_assert(kRowsPerTask % kLnGroup == 0);

struct LnParams {
  const void* x;
  const void* residual;
  const void* gamma;
  const void* beta;
  void* out;
  DType dtype;
  int64_t rows, cols;
  float eps;
  QuantizedRows* codes = nullptr;  // FP32 rows also quantized into these, or null
  QuantizeRowFn quantize_row = nullptr;  // with codes: the INT8 variant's
};

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
template <DType T, int N>
__attribute__((target("avx512f,avx512bw,avx512vl"), always_inline)) inline void LayerNormGroup16(
    const LnParams& p, int64_t r, const float* g, const float* bt, float* v) {
  const int64_t C = p.cols;
  const size_t es = DTypeSize(T);
  const std::byte* x[N];
  const std::byte* res[N];
  __m512 s0[N], s1[N];
#pragma GCC unroll 4
  for (int i = 0; i < N; ++i) {
    x[i] = static_cast<const std::byte*>(p.x) + (r + i) * C * es;
    res[i] = p.residual != nullptr ? static_cast<const std::byte*>(p.residual) + (r + i) * C * es : nullptr;
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
  __m512 rstd[N];
#pragma GCC unroll 4
  for (int i = 0; i < N; ++i) {
    const float var = _mm512_reduce_add_ps(_mm512_add_ps(q0[i], q1[i])) / static_cast<float>(C);
    rstd[i] = _mm512_set1_ps(1.0f / std::sqrt(var + p.eps));
  }
  for (int64_t c = 0; c < C; c += 16) {
    const __mmask16 m = TailMask16(C - c);
    const __m512 gv = _mm512_maskz_loadu_ps(m, g + c), bv = _mm512_maskz_loadu_ps(m, bt + c);
#pragma GCC unroll 4
    for (int i = 0; i < N; ++i) {
      const __m512 n = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, v + i * C + c), vm[i]), rstd[i]);
      Store16<T>(p.out, (r + i) * C + c, m, _mm512_fmadd_ps(n, gv, bv));
    }
  }
}

// LayerNormTask's rows on 16 lanes, kLnGroup at a time (v: kLnGroup rows of C floats).
template <DType T>
__attribute__((target("avx512f,avx512bw,avx512vl"))) void LayerNormRows16(const LnParams& p, int64_t r0, int64_t r1,
                                                                          const float* g, const float* bt, float* v) {
  int64_t r = r0;
  for (; r + kLnGroup <= r1; r += kLnGroup) LayerNormGroup16<T, kLnGroup>(p, r, g, bt, v);
  for (; r < r1; ++r) LayerNormGroup16<T, 1>(p, r, g, bt, v);
}

// Whether LayerNormRows16 runs: the AVX-512 FP32 micro-kernels are in force (forcing
// another variant tests the 8-lane rows), and the CPU has the 16-bit masked loads and stores.
bool RunsLayerNorm16() {
  static const bool bw = CpuHasFlag("avx512bw") && CpuHasFlag("avx512vl");
  return bw && GetMicroKernels().avx512();
}

// Rows [r0, r1) of the FP32 output quantized into p.codes, read back while in cache.
void QuantizeOutputRows(const LnParams& p, int64_t r0, int64_t r1) {
  const int64_t C = p.cols, kp = PaddedCodeBytes(C);
  auto* q = static_cast<uint8_t*>(p.codes->codes.data());
  auto* params = static_cast<float*>(p.codes->params.data());
  const auto* out = static_cast<const float*>(p.out);
  for (int64_t r = r0; r < r1; ++r) p.quantize_row(out + r * C, C, kp, q + r * kp, params + 2 * r);
}

void LayerNormRows(const LnParams& p, int64_t task, float* scratch);

void LayerNormTask(const LnParams& p, int64_t task, float* scratch) {
  LayerNormRows(p, task, scratch);
  if (p.codes != nullptr) QuantizeOutputRows(p, task * kRowsPerTask, std::min(p.rows, (task + 1) * kRowsPerTask));
}

void LayerNormRows(const LnParams& p, int64_t task, float* scratch) {
  const int64_t r_end = std::min(p.rows, (task + 1) * kRowsPerTask);
  const int64_t C = p.cols;
  float* v = scratch;
  float* tmp = v + C;
  const float* g = AsFloat(p.dtype, p.gamma, scratch + kLnGroup * C, C);
  const float* bt = AsFloat(p.dtype, p.beta, scratch + (kLnGroup + 1) * C, C);
  if (RunsLayerNorm16() && (p.dtype == DType::kF32 || p.dtype == DType::kBF16)) {
    // v: the scratch's first kLnGroup * C floats (g and bt, when copies, lie past them).
    (p.dtype == DType::kF32 ? LayerNormRows16<DType::kF32> : LayerNormRows16<DType::kBF16>)(
        p, task * kRowsPerTask, r_end, g, bt, v);
    return;
  }
  const size_t es = DTypeSize(p.dtype);
  for (int64_t r = task * kRowsPerTask; r < r_end; ++r) {
    const float* x = AsFloat(p.dtype, static_cast<const std::byte*>(p.x) + r * C * es, v, C);
    if (p.residual != nullptr) {
      const float* res =
          AsFloat(p.dtype, static_cast<const std::byte*>(p.residual) + r * C * es, tmp, C);
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
      float* out = static_cast<float*>(p.out) + r * C;
      for (int64_t c = 0; c < C; ++c) out[c] = (v[c] - mean) * rstd * g[c] + bt[c];
    } else {
      for (int64_t c = 0; c < C; ++c) v[c] = (v[c] - mean) * rstd * g[c] + bt[c];
      FromFloat(v, p.dtype, static_cast<std::byte*>(p.out) + r * C * es, C);
    }
  }
}

}  // namespace

Status CpuLayerNorm(CpuBackend& be, const Tensor& x, const Tensor* residual, const Tensor& gamma,
                    const Tensor& beta, float eps, Tensor& out, QuantizedRows* codes) {
  const int64_t C = x.dim(-1);  // shapes checked by the kernel front (kernels.h)
  const DType t = x.dtype();
  LnParams p{x.data(), residual ? residual->data() : nullptr, gamma.data(), beta.data(),
             out.data(), t, x.numel() / C, C, eps, codes,
             codes != nullptr ? PickQuantizeRow(GetInt8MicroKernels()) : nullptr};
  if (codes != nullptr) TS_RETURN_IF_ERROR(CheckCodeLayout(*codes, "LayerNormQuantized"));
  LaunchDesc desc;
  static const char* kNames[2][4] = {
      {"cpu_layer_norm_f32_r16", "cpu_layer_norm_f16_r16", "cpu_layer_norm_bf16_r16", "cpu_layer_norm_f32_r16_u8out"},
      {"cpu_add_layer_norm_f32_r16", "cpu_add_layer_norm_f16_r16", "cpu_add_layer_norm_bf16_r16",
       "cpu_add_layer_norm_f32_r16_u8out"}};
  desc.kernel = kNames[residual ? 1 : 0][codes != nullptr ? 3 : t == DType::kF16 ? 1 : t == DType::kBF16 ? 2 : 0];
  desc.grid = Dim3{(p.rows + kRowsPerTask - 1) / kRowsPerTask, 1, 1};
  desc.block = Dim3{kRowsPerTask, C, 1};
  const OpCost cost = LayerNormCost(p.rows, C, residual != nullptr, t);
  (codes != nullptr ? WithQuantizedOutput(cost, p.rows, C, PaddedCodeBytes(C), /*keep_fp32=*/true) : cost).Into(desc);
  desc.writes[0] = {out.data(), out.bytes()};
  if (codes != nullptr) {
    desc.writes[1] = {codes->codes.data(), codes->codes.bytes()};
    desc.writes[2] = {codes->params.data(), codes->params.bytes()};
  }
  be.EnsureScratch(static_cast<size_t>((kLnGroup + 2) * C));
  return be.Launch(desc, [&](int64_t task, int worker) {
    LayerNormTask(p, task, be.scratch(worker));
  });
}

}  // namespace tierscope
