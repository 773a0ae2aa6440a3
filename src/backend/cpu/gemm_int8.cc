// CPU INT8 Linear, dynamic quantization as ONNX Runtime's quantize_dynamic does it:
// weights symmetric int8 per output channel (7 bits for AVX2's micro-kernels, which sum
// only those exactly), quantized once at load; activations u8 per row (scale and zero
// point from the row's range, quantize_rows.h) at run time, in a launch of their own or by
// the op that produced them (QuantizedRows); int32 sums on the host's dot instructions,
// then y = s_x s_w (acc - z_x colsum_w) + bias and the activation, in FP32. The output is
// FP32 rows (streamed past the caches when too big for them), or each row quantized in
// turn for the next INT8 Linear (tasks of whole rows; the FP32 rows never leave them), or
// each row through the residual add and LayerNorm (layer_norm_rows.h) in the same task.
#include <immintrin.h>

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/layer_norm_rows.h"
#include "backend/cpu/micro_kernel_int8.h"
#include "backend/cpu/quantize_rows.h"
#include "backend/cpu/tile_rows.h"
#include "backend/cpu/vec_math.h"
#include "core/cpu_info.h"

namespace tierscope {
namespace {

constexpr int kMB = 48;  // rows of one task's tile (whole AMX tiles: the int32 tile has room)
static_assert(kMB % kAmxRows == 0);
constexpr int kNB = 64;  // columns of one task's tile
constexpr int kPanelsPerTask = kNB / kNR;
constexpr int64_t kQuantRowsPerTask = 16;
// The int32 sums hold K x 255 x 127 for K up to 66,000; refuse more than this.
constexpr int64_t kMaxInt8K = 65536;

class CpuInt8Weight : public PackedWeight {
 public:
  CpuInt8Weight(int64_t n, int64_t k, int weight_max, Tensor panels, Tensor scales, Tensor colsums)
      : PackedWeight(n, k, DType::kI8),
        weight_max_(weight_max),
        panels_(std::move(panels)),
        scales_(std::move(scales)),
        colsums_(std::move(colsums)) {}
  int64_t kq() const { return PaddedKq(k()); }
  int64_t num_panels() const { return (n() + kNR - 1) / kNR; }
  int weight_max() const { return weight_max_; }  // the codes' range: [-weight_max, weight_max]
  int64_t panel_bytes() const { return kq() * kQGroupBytes; }
  const int8_t* panels() const { return static_cast<const int8_t*>(panels_.data()); }
  const float* scales() const { return static_cast<const float*>(scales_.data()); }
  const int32_t* colsums() const { return static_cast<const int32_t*>(colsums_.data()); }
  int64_t bytes() const override { return static_cast<int64_t>(panels_.bytes() + scales_.bytes() + colsums_.bytes()); }

 private:
  int weight_max_;
  Tensor panels_;   // [num_panels][kq][16][4] int8, zero past N and K
  Tensor scales_;   // [num_panels * 16] FP32: max |w[n, :]| / weight_max (1 for an all-zero row)
  Tensor colsums_;  // [num_panels * 16] int32: sum_k wq[n, k], for the zero-point term
};

// Rows [0, rows) of a tile of at most kNB columns: out[j] = sx * sw[j] * (a[j] - zp *
// cs[j]) + bias[j] for j < n, row r's sums at a + r lda, its outputs at out + r ldo, its
// sx and zp at qparams[2 r] and qparams[2 r + 1] (zp a whole number in [0, 255]). The
// zero-point term is taken off in int32, exactly (|a|, |zp cs| and their difference stay
// below 255 x 127 x K < 2^31 for K <= 65,536), and the difference converted to FP32 once.
using DequantTileFn = void (*)(const int32_t* a, int64_t lda, int64_t rows, const int32_t* cs, const float* sw,
                               const float* bias, const float* qparams, float* out, int64_t ldo, int64_t n);

constexpr int kChunks16 = kNB / 16;  // 16-lane chunks of a tile's row
static_assert(kNB % 16 == 0);

// A tile's columns for the AVX-512 dequantization: their sums of weights, scales and bias,
// 16 lanes a chunk (lanes past the tile's columns zero, chunks past them masked off),
// loaded once for all the tile's rows rather than once a row.
struct TileColumns16 {
  __m512i cs[kChunks16];
  __m512 sw[kChunks16], bias[kChunks16];
  __mmask16 m[kChunks16];
};

template <bool kBias>
__attribute__((target("avx512f"), always_inline)) inline TileColumns16 LoadTileColumns16(const int32_t* cs,
                                                                                        const float* sw,
                                                                                        const float* bias,
                                                                                        int64_t n) {
  assert(n <= kNB);
  TileColumns16 t;
#pragma GCC unroll 4
  for (int c = 0; c < kChunks16; ++c) {
    t.m[c] = 16 * c < n ? TailMask16(n - 16 * c) : static_cast<__mmask16>(0);
    t.cs[c] = _mm512_setzero_si512();
    t.sw[c] = t.bias[c] = _mm512_setzero_ps();
    if (t.m[c] == 0) continue;  // no pointer formed past the columns
    t.cs[c] = _mm512_maskz_loadu_epi32(t.m[c], cs + 16 * c);
    t.sw[c] = _mm512_maskz_loadu_ps(t.m[c], sw + 16 * c);
    if (kBias) t.bias[c] = _mm512_maskz_loadu_ps(t.m[c], bias + 16 * c);
  }
  return t;
}

// Chunk c of a row's int32 sums `a`, dequantized: (a - zp * cs) * (sx * sw) (+ bias). The
// one dequantization of the AVX-512 rows, FP32 or BF16 out.
template <bool kBias>
__attribute__((target("avx512f"), always_inline)) inline __m512 DequantChunk16(const int32_t* a,
                                                                               const TileColumns16& t, int c,
                                                                               __m512 vsx, __m512i vzp) {
  const __m512i v = _mm512_maskz_loadu_epi32(t.m[c], a + 16 * c);
  const __m512 d = _mm512_cvtepi32_ps(_mm512_sub_epi32(v, _mm512_mullo_epi32(vzp, t.cs[c])));
  const __m512 s = _mm512_mul_ps(vsx, t.sw[c]);
  return kBias ? _mm512_fmadd_ps(s, d, t.bias[c]) : _mm512_mul_ps(s, d);
}

// kStream: rows written with non-temporal stores where they are aligned (an output too
// big to stay in the cores' caches for its reader: streaming it skips the read for
// ownership a cached store makes, a third of the traffic); the tail stores as usual.
template <bool kBias, bool kGelu, bool kStream>
__attribute__((target("avx512f"))) void DequantTileAvx512(const int32_t* a, int64_t lda, int64_t rows,
                                                          const int32_t* cs, const float* sw, const float* bias,
                                                          const float* qparams, float* out, int64_t ldo, int64_t n) {
  const TileColumns16 t = LoadTileColumns16<kBias>(cs, sw, bias, n);
  for (int64_t r = 0; r < rows; ++r) {
    const __m512 vsx = _mm512_set1_ps(qparams[2 * r]);
    const __m512i vzp = _mm512_set1_epi32(static_cast<int32_t>(qparams[2 * r + 1]));
    float* o = out + r * ldo;
    const bool stream = kStream && (reinterpret_cast<uintptr_t>(o) & 63) == 0;
#pragma GCC unroll 4
    for (int c = 0; c < kChunks16; ++c) {
      if (t.m[c] == 0) break;
      const __m512 y = DequantChunk16<kBias>(a + r * lda, t, c, vsx, vzp);
      const __m512 v = kGelu ? Gelu16(y) : y;  // GELU on the registers
      if (stream && t.m[c] == 0xffff) {
        _mm512_stream_ps(o + 16 * c, v);
      } else {
        _mm512_mask_storeu_ps(o + 16 * c, t.m[c], v);
      }
    }
  }
}

// Eight lanes, then the portable loop's arithmetic for the tail; GELU as GeluInPlace
// computes it on a host without AVX-512 (Gelu8, FastGelu on the tail), on the registers.
template <bool kBias, bool kGelu, bool kStream>
void DequantRowAvx2(const int32_t* a, const int32_t* cs, const float* sw, const float* bias, float sx, int32_t zp,
                    float* out, int64_t n) {
  int64_t j = 0;
#ifdef TIERSCOPE_VEC_AVX2
  const __m256 vsx = _mm256_set1_ps(sx);
  const __m256i vzp = _mm256_set1_epi32(zp);
  const bool stream = kStream && (reinterpret_cast<uintptr_t>(out) & 31) == 0;
  for (; j + 8 <= n; j += 8) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + j));
    const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(cs + j));
    const __m256 d = _mm256_cvtepi32_ps(_mm256_sub_epi32(v, _mm256_mullo_epi32(vzp, c)));
    const __m256 s = _mm256_mul_ps(vsx, _mm256_loadu_ps(sw + j));
    const __m256 y = kBias ? _mm256_fmadd_ps(s, d, _mm256_loadu_ps(bias + j)) : _mm256_mul_ps(s, d);
    const __m256 r = kGelu ? Gelu8(y) : y;
    if (stream) {
      _mm256_stream_ps(out + j, r);
    } else {
      _mm256_storeu_ps(out + j, r);
    }
  }
#endif
  for (; j < n; ++j) {
    const float d = static_cast<float>(a[j] - zp * cs[j]);
    const float y = kBias ? std::fma(sx * sw[j], d, bias[j]) : sx * sw[j] * d;
    out[j] = kGelu ? FastGelu(y) : y;
  }
}

// DequantRowAvx2 a row at a time.
template <bool kBias, bool kGelu, bool kStream>
void DequantTileAvx2(const int32_t* a, int64_t lda, int64_t rows, const int32_t* cs, const float* sw,
                     const float* bias, const float* qparams, float* out, int64_t ldo, int64_t n) {
  for (int64_t r = 0; r < rows; ++r) {
    DequantRowAvx2<kBias, kGelu, kStream>(a + r * lda, cs, sw, bias, qparams[2 * r],
                                          static_cast<int32_t>(qparams[2 * r + 1]), out + r * ldo, n);
  }
}

template <bool kAvx512, bool kBias, bool kGelu>
DequantTileFn DequantTile(bool stream) {
  if constexpr (kAvx512) {
    return stream ? DequantTileAvx512<kBias, kGelu, true> : DequantTileAvx512<kBias, kGelu, false>;
  } else {
    return stream ? DequantTileAvx2<kBias, kGelu, true> : DequantTileAvx2<kBias, kGelu, false>;
  }
}

// The dequantization that goes with micro-kernels `mk` (AVX-512 beside AVX512-VNNI and
// AMX, 8 lanes beside the others); `*gelu_fused` says whether it also applies GELU. Each
// gives the lanes GeluInPlace would on this host, so fused or not, the outputs agree.
// `stream`: non-temporal stores, where no pass reads the rows back after it (no epilogue,
// or GELU fused); `*streams` says whether they were chosen.
DequantTileFn PickDequantTile(const Int8MicroKernels& mk, bool bias, Epilogue e, bool stream, bool* gelu_fused,
                              bool* streams) {
  const bool avx512 = mk.avx512();
  *gelu_fused = e == Epilogue::kGelu && (avx512 || !RunsAvx512());
  *streams = stream && (e == Epilogue::kNone || *gelu_fused);
  const bool g = *gelu_fused, st = *streams;
  if (avx512) {
    if (g) return bias ? DequantTile<true, true, true>(st) : DequantTile<true, false, true>(st);
    return bias ? DequantTile<true, true, false>(st) : DequantTile<true, false, false>(st);
  }
  if (g) return bias ? DequantTile<false, true, true>(st) : DequantTile<false, false, true>(st);
  return bias ? DequantTile<false, true, false>(st) : DequantTile<false, false, false>(st);
}

struct Int8GemmParams {
  const uint8_t* q;      // [m][kp] activation codes
  const float* qparams;  // [m][2]: scale, zero point
  int64_t m, n, kp;
  const CpuInt8Weight* w;
  const float* bias;
  Epilogue epilogue;
  float* y;
  int64_t n_blocks;
  const Int8MicroKernels* mk = nullptr;
  DequantTileFn dequant = nullptr;
  bool gelu_fused = false;  // dequant applied the GELU already
  bool streams = false;     // dequant writes y with non-temporal stores
};

// The int32 sums of rows [m0, m0 + rows) by column block nb into `acc` (row stride kNB);
// returns the block's columns.
int64_t Int8TileSums(const Int8GemmParams& p, int64_t m0, int64_t rows, int64_t nb, int32_t* acc) {
  const int64_t p0 = nb * kPanelsPerTask;
  const int64_t panels = std::min<int64_t>(kPanelsPerTask, p.w->num_panels() - p0);
  p.mk->Run(rows, p.kp / kQK, p.q + m0 * p.kp, p.kp, p.w->panels() + p0 * p.w->panel_bytes(), panels,
            p.w->panel_bytes(), acc, kNB);
  return std::min<int64_t>(panels * kNR, p.n - p0 * kNR);
}

// Rows [m0, m0 + rows) by column block nb of y = epilogue(x . W^T + bias): the int32 sums
// into `acc`, then dequantized into out (the tile's first value: row m0, the block's first
// column; row stride ldo).
void Int8GemmTile(const Int8GemmParams& p, int64_t m0, int64_t rows, int64_t nb, int32_t* acc, float* out,
                  int64_t ldo) {
  const int64_t cols = Int8TileSums(p, m0, rows, nb, acc);
  const int64_t n0 = nb * kNB;
  const float* sw = p.w->scales() + n0;
  const int32_t* cs = p.w->colsums() + n0;
  const float* bias = p.bias != nullptr ? p.bias + n0 : nullptr;
  p.dequant(acc, kNB, rows, cs, sw, bias, p.qparams + m0 * 2, out, ldo, cols);
  if (p.epilogue == Epilogue::kNone || p.gelu_fused) return;
  for (int64_t r = 0; r < rows; ++r) {  // the activation the dequantization left: tanh, or GELU unfused
    float* o = out + r * ldo;
    (p.epilogue == Epilogue::kGelu ? GeluInPlace : TanhInPlace)(o, cols);
  }
}

// The GEMM's name; `codes`: its output rows are quantized (u8 out), not written in FP32;
// `bf16`: written in BF16.
const char* Int8GemmKernelName(bool bias, Epilogue e, bool codes, bool bf16 = false) {
  static const char* kBf16[2][3] = {
      {"cpu_igemm_nt_u8s8_48x64_bf16out", "cpu_igemm_nt_u8s8_48x64_gelu_bf16out", "cpu_igemm_nt_u8s8_48x64_tanh_bf16out"},
      {"cpu_igemm_nt_u8s8_48x64_bias_bf16out", "cpu_igemm_nt_u8s8_48x64_bias_gelu_bf16out",
       "cpu_igemm_nt_u8s8_48x64_bias_tanh_bf16out"}};
  if (bf16) return kBf16[bias ? 1 : 0][static_cast<int>(e)];
  static const char* kNames[2][2][3] = {
      {{"cpu_igemm_nt_u8s8_48x64", "cpu_igemm_nt_u8s8_48x64_gelu", "cpu_igemm_nt_u8s8_48x64_tanh"},
       {"cpu_igemm_nt_u8s8_48x64_bias", "cpu_igemm_nt_u8s8_48x64_bias_gelu", "cpu_igemm_nt_u8s8_48x64_bias_tanh"}},
      {{"cpu_igemm_nt_u8s8_rows_u8out", "cpu_igemm_nt_u8s8_rows_gelu_u8out", "cpu_igemm_nt_u8s8_rows_tanh_u8out"},
       {"cpu_igemm_nt_u8s8_rows_bias_u8out", "cpu_igemm_nt_u8s8_rows_bias_gelu_u8out",
        "cpu_igemm_nt_u8s8_rows_bias_tanh_u8out"}}};
  return kNames[codes ? 1 : 0][bias ? 1 : 0][static_cast<int>(e)];
}

// The GEMM with the residual add and LayerNorm in its epilogue; `codes`: its output rows
// also quantized (u8 out).
const char* Int8AddLayerNormKernelName(bool bias, bool codes) {
  static const char* kNames[2][2] = {
      {"cpu_igemm_nt_u8s8_rows_add_layer_norm", "cpu_igemm_nt_u8s8_rows_add_layer_norm_u8out"},
      {"cpu_igemm_nt_u8s8_rows_bias_add_layer_norm", "cpu_igemm_nt_u8s8_rows_bias_add_layer_norm_u8out"}};
  return kNames[bias ? 1 : 0][codes ? 1 : 0];
}

}  // namespace

StatusOr<std::unique_ptr<PackedWeight>> CpuPackWeightInt8(CpuBackend& be, const HostTensor& w) {
  const int64_t n = w.shape[0], k = w.shape[1];
  if (const std::string& why = Int8MicroKernelsEnvError(); !why.empty()) return InvalidArgument(why);
  const int weight_max = GetInt8MicroKernels().weight_max;  // the codes the GEMM will sum exactly
  if (k > kMaxInt8K) {
    return InvalidArgument("INT8 Linear sums in int32: in_features must be <= " + std::to_string(kMaxInt8K) +
                           ", got " + std::to_string(k));
  }
  const int64_t panels = (n + kNR - 1) / kNR, kq = PaddedKq(k);
  TS_ASSIGN_OR_RETURN(Tensor packed, Tensor::Empty(be, DType::kI8, {panels, kq, kQGroupBytes}));
  TS_ASSIGN_OR_RETURN(Tensor scales, Tensor::Empty(be, DType::kF32, {panels * kNR}));
  TS_ASSIGN_OR_RETURN(Tensor colsums, Tensor::Empty(be, DType::kI32, {panels * kNR}));
  auto* dst = static_cast<int8_t*>(packed.data());
  auto* sc = static_cast<float*>(scales.data());
  auto* cs = static_cast<int32_t*>(colsums.data());
  std::memset(dst, 0, packed.bytes());
  std::vector<float> row(static_cast<size_t>(k));
  const size_t src_esize = DTypeSize(w.dtype);
  const auto top = static_cast<float>(weight_max);
  for (int64_t c = 0; c < panels * kNR; ++c) {
    sc[c] = 1.0f;
    cs[c] = 0;
    if (c >= n) continue;
    ToFloat(w.dtype, w.data + c * k * src_esize, row.data(), k);
    float amax = 0;
    for (float v : row) {
      if (!std::isfinite(v)) {
        return InvalidArgument("INT8 quantization: weight row " + std::to_string(c) + " holds a non-finite value");
      }
      amax = std::max(amax, std::fabs(v));
    }
    if (amax > 0) sc[c] = amax / top;
    float inv = 1.0f / sc[c];
    if (!std::isfinite(inv)) sc[c] = inv = 1.0f;  // |w| below ~1e-36: every code rounds to 0
    const int64_t p = c / kNR, j = c % kNR;
    int32_t sum = 0;
    for (int64_t kk = 0; kk < k; ++kk) {
      const auto q = static_cast<int8_t>(std::clamp(std::nearbyint(row[kk] * inv), -top, top));
      dst[(p * kq + kk / kQK) * kQGroupBytes + j * kQK + kk % kQK] = q;
      sum += q;
    }
    cs[c] = sum;
  }
  return std::unique_ptr<PackedWeight>(
      new CpuInt8Weight(n, k, weight_max, std::move(packed), std::move(scales), std::move(colsums)));
}

StatusOr<QuantizedRows> CpuNewQuantizedRows(CpuBackend& be, int64_t rows, int64_t k) {
  if (k > kMaxInt8K) {
    return InvalidArgument("INT8 activations: rows of at most " + std::to_string(kMaxInt8K) + " values, got " +
                           std::to_string(k));
  }
  const int64_t kp = PaddedCodeBytes(k);
  QuantizedRows q;
  q.rows = rows;
  q.k = k;
  TS_ASSIGN_OR_RETURN(q.codes, Tensor::Empty(be, DType::kU8, {PaddedRows(rows), kp}));
  TS_ASSIGN_OR_RETURN(q.params, Tensor::Empty(be, DType::kF32, {rows, 2}));
  // The rows past `rows` are zeros (AMX reads whole 16-row tiles); the others are written.
  std::memset(static_cast<uint8_t*>(q.codes.data()) + rows * kp, 0,
              static_cast<size_t>((PaddedRows(rows) - rows) * kp));
  return q;
}

Status CpuQuantizeRows(CpuBackend& be, const Tensor& x, int64_t x_row_stride, QuantizedRows& q) {
  TS_RETURN_IF_ERROR(CheckCodeLayout(q, "QuantizeRows"));
  const int64_t rows = q.rows, k = q.k, kp = PaddedCodeBytes(k);
  const auto* xs = static_cast<const float*>(x.data());
  auto* qd = static_cast<uint8_t*>(q.codes.data());
  auto* qp = static_cast<float*>(q.params.data());
  const QuantizeRowFn quantize_row = PickQuantizeRow(GetInt8MicroKernels());
  LaunchDesc quant;
  quant.kernel = "cpu_quantize_rows_f32_u8";
  quant.grid = Dim3{(rows + kQuantRowsPerTask - 1) / kQuantRowsPerTask, 1, 1};
  quant.block = Dim3{kQuantRowsPerTask, 1, 1};
  QuantizeRowsCost(rows, k, kp).Into(quant);
  quant.writes = {MemRange{q.codes.data(), q.codes.bytes()}, MemRange{q.params.data(), q.params.bytes()}};
  return be.Launch(quant, [&](int64_t task, int) {
    const int64_t r1 = std::min(rows, (task + 1) * kQuantRowsPerTask);
    for (int64_t r = task * kQuantRowsPerTask; r < r1; ++r) {
      quantize_row(xs + r * x_row_stride, k, kp, qd + r * kp, qp + r * 2);
    }
  });
}

namespace {

// The row blocks (whole AMX tiles) of the tasks of a Linear that writes rows, one a row
// block and column block; sets the launch's grid and block to them.
TileRows SetTileGrid(const Int8GemmParams& p, int workers, LaunchDesc& desc) {
  const TileRows mt = SplitTileRows(p.m, kMB, kAmxRows, workers);
  desc.grid = Dim3{p.n_blocks, mt.blocks, 1};
  desc.block = Dim3{kNB, mt.most_rows(), 1};
  return mt;
}

// FP32 rows out: tasks of a row block (at most 48 rows, tile_rows.h) by 64 columns; `y`
// streamed where it is big.
Status Int8GemmToRows(CpuBackend& be, Int8GemmParams& p, Tensor& y, LaunchDesc& desc, OpCost cost,
                      bool may_stream) {
  const bool big = may_stream && static_cast<double>(y.bytes()) > CpuInt8StreamingThresholdBytes(be.num_workers());
  p.y = static_cast<float*>(y.data());
  p.dequant = PickDequantTile(*p.mk, p.bias != nullptr, p.epilogue, big, &p.gelu_fused, &p.streams);
  const TileRows mt = SetTileGrid(p, be.num_workers(), desc);
  cost.Into(desc);
  desc.writes[0] = {y.data(), y.bytes()};
  be.EnsureScratch(kMB * kNB);
  return be.Launch(desc, [&](int64_t task, int worker) {
    // The worker's scratch holds the int32 tile; it is only ever written and read as int32
    // in this launch (std::vector<float> storage reused, sizes equal).
    static_assert(sizeof(float) == sizeof(int32_t));
    const int64_t mb = task / p.n_blocks, nb = task % p.n_blocks, m0 = mt.begin(mb);
    Int8GemmTile(p, m0, mt.rows(mb), nb, reinterpret_cast<int32_t*>(be.scratch(worker)),
                 p.y + m0 * p.n + nb * kNB, p.n);
    if (p.streams) _mm_sfence();  // the streamed rows are visible before the task ends
  });
}

// rows x cols FP32 values (row stride ldt) rounded to BF16 into y (row stride ldy), as
// RoundRowToBf16 rounds: one call for a whole tile, its loops inlined.
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) void RoundTileToBf16(
    const float* tile, int64_t ldt, int64_t rows, int64_t cols, uint16_t* y, int64_t ldy) {
  for (int64_t r = 0; r < rows; ++r) RoundRowToBf16(tile + r * ldt, cols, y + r * ldy);
}

// A tile's int32 sums (row stride kNB) dequantized as DequantTileAvx512 does
// (DequantChunk16) and rounded to BF16 as RoundRowToBf16 rounds, straight into y (row
// stride ldy): the bytes the way through FP32 scratch writes, without the scratch.
template <bool kBias>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) void DequantTileToBf16(
    const Int8GemmParams& p, const int32_t* acc, int64_t m0, int64_t rows, int64_t n0, int64_t cols, uint16_t* y,
    int64_t ldy) {
  const TileColumns16 t =
      LoadTileColumns16<kBias>(p.w->colsums() + n0, p.w->scales() + n0, kBias ? p.bias + n0 : nullptr, cols);
  for (int64_t r = 0; r < rows; ++r) {
    const __m512 vsx = _mm512_set1_ps(p.qparams[(m0 + r) * 2]);
    const __m512i vzp = _mm512_set1_epi32(static_cast<int32_t>(p.qparams[(m0 + r) * 2 + 1]));
#pragma GCC unroll 4
    for (int c = 0; c < kChunks16; ++c) {
      if (t.m[c] == 0) break;
      const __m512 out = DequantChunk16<kBias>(acc + r * kNB, t, c, vsx, vzp);
      _mm256_mask_storeu_epi16(y + r * ldy + 16 * c, t.m[c], (__m256i)_mm512_cvtneps_pbh(out));
    }
  }
}

// BF16 rows out (Kernels::Int8RunsBf16Rows): the tiles of Int8GemmToRows, each into the
// worker's scratch in FP32 and then rounded into y as vcvtneps2bf16 rounds (the rows
// attention would round itself: the same bytes).
Status Int8GemmToBf16Rows(CpuBackend& be, Int8GemmParams& p, Tensor& y, LaunchDesc& desc, OpCost cost) {
  bool streams = false;
  p.dequant = PickDequantTile(*p.mk, p.bias != nullptr, p.epilogue, /*stream=*/false, &p.gelu_fused, &streams);
  const TileRows mt = SetTileGrid(p, be.num_workers(), desc);
  cost.bytes_written /= 2;  // two bytes an output, not four
  cost.Into(desc);
  desc.writes[0] = {y.data(), y.bytes()};
  be.EnsureScratch(2 * kMB * kNB);
  auto* y16 = static_cast<uint16_t*>(y.data());
  const bool direct = p.epilogue == Epilogue::kNone && p.mk->avx512();
  return be.Launch(desc, [&](int64_t task, int worker) {
    auto* acc = reinterpret_cast<int32_t*>(be.scratch(worker));  // int32 only, as above
    float* tile = be.scratch(worker) + kMB * kNB;
    const int64_t mb = task / p.n_blocks, nb = task % p.n_blocks, m0 = mt.begin(mb);
    const int64_t rows = mt.rows(mb), n0 = nb * kNB, cols = std::min<int64_t>(kNB, p.n - n0);
    if (direct) {  // no epilogue, the AVX-512 dequantization: straight to BF16
      Int8TileSums(p, m0, rows, nb, acc);
      if (p.bias != nullptr) {
        DequantTileToBf16<true>(p, acc, m0, rows, n0, cols, y16 + m0 * p.n + n0, p.n);
      } else {
        DequantTileToBf16<false>(p, acc, m0, rows, n0, cols, y16 + m0 * p.n + n0, p.n);
      }
      return;
    }
    Int8GemmTile(p, m0, rows, nb, acc, tile, kNB);
    RoundTileToBf16(tile, kNB, rows, cols, y16 + m0 * p.n + n0, p.n);
  });
}

// A launch of whole-row tasks (every column block of a row block), too coarse for stealing
// to even out: as many rows a worker (tile_rows.h). Each task's rows are dequantized into
// the worker's scratch (row stride n) and handed to `finish(m0, m, rows, extra)`, with
// `extra_floats` more floats of scratch at `extra`. Sets desc's grid and block; its cost and
// writes are the caller's.
template <typename Finish>
Status Int8GemmRowTasks(CpuBackend& be, Int8GemmParams& p, LaunchDesc& desc, int64_t extra_floats, Finish finish) {
  bool streams = false;
  p.dequant = PickDequantTile(*p.mk, p.bias != nullptr, p.epilogue, /*stream=*/false, &p.gelu_fused, &streams);
  const TileRows mt = SplitRowTasks(p.m, kMB, kAmxRows, be.num_workers());
  const int64_t mb = mt.most_rows(), n = p.n;
  desc.grid = Dim3{mt.blocks, 1, 1};
  desc.block = Dim3{n, mb, 1};
  // The int32 tile, the task's FP32 rows, then the finisher's.
  be.EnsureScratch(static_cast<size_t>(kMB * kNB + mb * n + extra_floats));
  return be.Launch(desc, [&](int64_t task, int worker) {
    auto* acc = reinterpret_cast<int32_t*>(be.scratch(worker));  // int32 only, as above
    float* rows = be.scratch(worker) + kMB * kNB;
    const int64_t m0 = mt.begin(task), m = mt.rows(task);
    for (int64_t nb = 0; nb < p.n_blocks; ++nb) Int8GemmTile(p, m0, m, nb, acc, rows + nb * kNB, n);
    finish(m0, m, rows, rows + mb * n);
  });
}

// Codes out: each row's range is known before it is quantized; its FP32 values never leave
// the worker's scratch.
Status Int8GemmToCodes(CpuBackend& be, Int8GemmParams& p, QuantizedRows& y_codes, LaunchDesc& desc, OpCost cost) {
  const int64_t n = p.n, kp_out = PaddedCodeBytes(n);
  WithQuantizedOutput(cost, p.m, n, kp_out, /*keep_fp32=*/false).Into(desc);
  desc.writes = {MemRange{y_codes.codes.data(), y_codes.codes.bytes()},
                 MemRange{y_codes.params.data(), y_codes.params.bytes()}};
  auto* qd = static_cast<uint8_t*>(y_codes.codes.data());
  auto* qp = static_cast<float*>(y_codes.params.data());
  const QuantizeRowFn quantize_row = PickQuantizeRow(*p.mk);
  return Int8GemmRowTasks(be, p, desc, 0, [&](int64_t m0, int64_t m, const float* rows, float*) {
    for (int64_t r = 0; r < m; ++r) quantize_row(rows + r * n, n, kp_out, qd + (m0 + r) * kp_out, qp + (m0 + r) * 2);
  });
}

// The residual add and LayerNorm in the epilogue: each task's rows normalised with the
// residual's into `out` (and quantized into `codes`, where given) while in cache: the rows
// LinearInt8 would write, then LayerNorm over them, without the round trip.
Status Int8GemmToAddLayerNorm(CpuBackend& be, Int8GemmParams& p, const AddLayerNormArgs& ln, Tensor& out,
                              QuantizedRows* codes, LaunchDesc& desc, OpCost cost) {
  const int64_t n = p.n, kp_out = PaddedCodeBytes(n);
  desc.kernel = Int8AddLayerNormKernelName(p.bias != nullptr, codes != nullptr);
  (codes != nullptr ? WithQuantizedOutput(cost, p.m, n, kp_out, /*keep_fp32=*/true) : cost).Into(desc);
  desc.writes[0] = {out.data(), out.bytes()};
  if (codes != nullptr) {
    desc.writes[1] = {codes->codes.data(), codes->codes.bytes()};
    desc.writes[2] = {codes->params.data(), codes->params.bytes()};
  }
  LnRows lr = DenseLnRows(DType::kF32, n, ln.eps);
  if (codes != nullptr) {
    lr.kp = kp_out;
    lr.quantize_row = PickQuantizeRow(*p.mk);
  }
  const auto* residual = static_cast<const float*>(ln.residual->data());
  auto* y = static_cast<float*>(out.data());
  std::vector<float> affine;
  const LnAffine ab = Fp32Affine(*ln.gamma, *ln.beta, &affine);
  return Int8GemmRowTasks(be, p, desc, LayerNormRowScratchFloats(n),
                          [&](int64_t m0, int64_t m, const float* rows, float* scratch) {
                            LnRows t = lr;
                            t.x = rows;
                            t.residual = residual + m0 * n;
                            t.out = y + m0 * n;
                            if (codes != nullptr) {
                              t.codes = static_cast<uint8_t*>(codes->codes.data()) + m0 * kp_out;
                              t.code_params = static_cast<float*>(codes->params.data()) + m0 * 2;
                            }
                            LayerNormRowRange(t, ab.gamma, ab.beta, 0, m, scratch);
                          });
}

}  // namespace

double CpuInt8StreamingThresholdBytes(int workers) {
  return static_cast<double>(CpuL2BytesPerCore()) * workers;
}

namespace {

// An INT8 Linear's parameters, once the layouts and the weight's codes are checked against
// the micro-kernels in force.
StatusOr<Int8GemmParams> Int8Params(const QuantizedRows& x, const PackedWeight& w, const Tensor* bias,
                                    Epilogue epilogue, const QuantizedRows* y_codes) {
  const auto& qw = static_cast<const CpuInt8Weight&>(w);
  TS_RETURN_IF_ERROR(CheckCodeLayout(x, "LinearInt8"));
  if (y_codes != nullptr) TS_RETURN_IF_ERROR(CheckCodeLayout(*y_codes, "LinearInt8"));
  const Int8MicroKernels& mk = GetInt8MicroKernels();
  if (qw.weight_max() > mk.weight_max) {
    return FailedPrecondition("INT8 Linear: the weights are quantized to |w| <= " + std::to_string(qw.weight_max()) +
                              ", but the micro-kernels in force (" + mk.isa + ") sum exactly only |w| <= " +
                              std::to_string(mk.weight_max) + "; pack them again");
  }
  return Int8GemmParams{static_cast<const uint8_t*>(x.codes.data()), static_cast<const float*>(x.params.data()),
                        x.rows, w.n(), qw.kq() * kQK, &qw, bias ? static_cast<const float*>(bias->data()) : nullptr,
                        epilogue, nullptr, CeilDiv(w.n(), int64_t{kNB}), &mk};
}

// Too few 16-row blocks to give every worker two: whole-row tasks would leave workers idle.
bool TooFewRowsForRowTasks(int64_t rows, int workers) {
  return CeilDiv(rows, int64_t{kAmxRows}) < 2 * int64_t{workers};
}

}  // namespace

Status CpuLinearInt8Codes(CpuBackend& be, const QuantizedRows& x, const PackedWeight& w, const Tensor* bias,
                          Epilogue epilogue, Tensor* y, QuantizedRows* y_codes) {
  TS_ASSIGN_OR_RETURN(Int8GemmParams p, Int8Params(x, w, bias, epilogue, y_codes));
  const int64_t rows = x.rows, n = w.n(), k = w.k();
  LaunchDesc desc;
  desc.kernel = Int8GemmKernelName(bias != nullptr, epilogue, y_codes != nullptr);
  desc.pipe = "int8_dot";
  const OpCost cost = QuantizedLinearCost(rows, n, k, bias != nullptr, epilogue);
  if (y != nullptr && y->dtype() == DType::kBF16) {  // the front took it only where the BF16 dot kernels run
    desc.kernel = Int8GemmKernelName(bias != nullptr, epilogue, /*codes=*/false, /*bf16=*/true);
    return Int8GemmToBf16Rows(be, p, *y, desc, cost);
  }
  if (y != nullptr) return Int8GemmToRows(be, p, *y, desc, cost, /*may_stream=*/true);
  // Too few rows for whole-row tasks: the tiles go to FP32 rows and those are quantized
  // after (the same bytes).
  if (TooFewRowsForRowTasks(rows, be.num_workers())) {
    TS_ASSIGN_OR_RETURN(Tensor fp32, Tensor::Empty(be, DType::kF32, {rows, n}));
    desc.kernel = Int8GemmKernelName(bias != nullptr, epilogue, /*codes=*/false);
    TS_RETURN_IF_ERROR(Int8GemmToRows(be, p, fp32, desc, cost, /*may_stream=*/false));
    return CpuQuantizeRows(be, fp32, n, *y_codes);
  }
  return Int8GemmToCodes(be, p, *y_codes, desc, cost);
}

Status CpuLinearInt8AddLayerNorm(CpuBackend& be, const QuantizedRows& x, const PackedWeight& w, const Tensor* bias,
                                 const AddLayerNormArgs& ln, Tensor& out, QuantizedRows* codes) {
  TS_ASSIGN_OR_RETURN(Int8GemmParams p, Int8Params(x, w, bias, Epilogue::kNone, codes));
  const int64_t rows = x.rows, n = w.n(), k = w.k();
  LaunchDesc desc;
  desc.pipe = "int8_dot";
  const OpCost linear = QuantizedLinearCost(rows, n, k, bias != nullptr, Epilogue::kNone);
  // Too few rows for whole-row tasks: the Linear's tiles into `out`, then the LayerNorm's
  // launch over them in place (each row read whole before it is written): no rows of
  // their own, as the fused launch makes none.
  if (TooFewRowsForRowTasks(rows, be.num_workers())) {
    desc.kernel = Int8GemmKernelName(bias != nullptr, Epilogue::kNone, /*codes=*/false);
    TS_RETURN_IF_ERROR(Int8GemmToRows(be, p, out, desc, linear, /*may_stream=*/false));
    return CpuLayerNorm(be, out, ln.residual, *ln.gamma, *ln.beta, ln.eps, out, codes);
  }
  return Int8GemmToAddLayerNorm(be, p, ln, out, codes, desc, WithAddLayerNorm(linear, rows, n, DType::kF32));
}

Status CpuLinearInt8(CpuBackend& be, const Tensor& x, int64_t rows, int64_t x_row_stride,
                     const PackedWeight& w, const Tensor* bias, Epilogue epilogue, Tensor& y) {
  TS_ASSIGN_OR_RETURN(QuantizedRows q, CpuNewQuantizedRows(be, rows, w.k()));
  TS_RETURN_IF_ERROR(CpuQuantizeRows(be, x, x_row_stride, q));
  return CpuLinearInt8Codes(be, q, w, bias, epilogue, &y, nullptr);
}

}  // namespace tierscope
