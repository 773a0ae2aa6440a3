// CPU INT8 Linear, dynamic quantization as ONNX Runtime's quantize_dynamic does it:
// weights symmetric int8 per output channel (7 bits for AVX2's micro-kernels, which sum
// only those exactly), quantized once at load; activations u8 per
// row (scale and zero point from the row's range) at run time, in a launch of their own;
// int32 sums on the host's dot instructions, then y = s_x s_w (acc - z_x colsum_w) + bias
// and the activation, in FP32.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/micro_kernel_int8.h"
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

// 4-deep groups of a panel for K inputs: rounded up to a whole AMX tile (64 inputs), so
// every variant runs on the same packing; the padding is zeros on both sides.
int64_t PaddedKq(int64_t k) { return ((k + kQK - 1) / kQK + kAmxKq - 1) / kAmxKq * kAmxKq; }
int64_t PaddedRows(int64_t rows) { return (rows + kAmxRows - 1) / kAmxRows * kAmxRows; }

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

// Row r of x quantized to codes q[0, kp) in [0, 255], one byte each: x ~ scale * (q - zp),
// with 0.0 exact. A row holding a NaN or an infinity gets
// scale NaN, so its outputs are NaN rather than a number made up from the finite values.
// Codes are round(fma(x, 1/scale, zp)) clamped to [0, 255], in vectors of 8 and in the
// scalar tail alike (vcvtps2dq rounds to nearest even, as nearbyint does).
void QuantizeRow(const float* x, int64_t k, int64_t kp, uint8_t* q, float* params) {
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
  if (poison != 0.0f || std::isnan(poison)) {
    std::memset(q, 0, static_cast<size_t>(k));
    params[0] = std::numeric_limits<float>::quiet_NaN();
    params[1] = 0;
    return;
  }
  const double range = static_cast<double>(hi) - static_cast<double>(lo);
  float scale = range > 0 ? static_cast<float>(range / kQActMax) : 1.0f;
  float inv = 1.0f / scale;
  if (!std::isfinite(inv)) scale = inv = 1.0f;  // a range below ~1e-36: every code rounds to 0
  const float top = static_cast<float>(kQActMax);
  const float zp = std::clamp(std::nearbyint(-lo / scale), 0.0f, top);
  const __m256 vinv = _mm256_set1_ps(inv), vzp = _mm256_set1_ps(zp), vtop = _mm256_set1_ps(top);
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
  for (; j < k; ++j) {
    q[j] = static_cast<uint8_t>(std::clamp(std::nearbyint(std::fma(x[j], inv, zp)), 0.0f, top));
  }
  params[0] = scale;
  params[1] = zp;
}

// out[j] = sx * sw[j] * (a[j] - zp * cs[j]) + bias[j] for j < n. The zero-point term is
// taken off in int32, exactly (|a|, |zp cs| and their difference stay below 255 x 127 x K
// < 2^31 for K <= 65,536), and the difference converted to FP32 once.
using DequantRowFn = void (*)(const int32_t* a, const int32_t* cs, const float* sw, const float* bias,
                              float sx, int32_t zp, float* out, int64_t n);

template <bool kBias, bool kGelu>
__attribute__((target("avx512f"))) void DequantRowAvx512(const int32_t* a, const int32_t* cs, const float* sw,
                                                         const float* bias, float sx, int32_t zp, float* out,
                                                         int64_t n) {
  const __m512 vsx = _mm512_set1_ps(sx);
  const __m512i vzp = _mm512_set1_epi32(zp);
  int64_t j = 0;
  for (; j < n; j += 16) {
    const __mmask16 m = TailMask16(n - j);
    const __m512i v = _mm512_maskz_loadu_epi32(m, a + j);
    const __m512 d = _mm512_cvtepi32_ps(_mm512_sub_epi32(v, _mm512_mullo_epi32(vzp, _mm512_maskz_loadu_epi32(m, cs + j))));
    const __m512 s = _mm512_mul_ps(vsx, _mm512_maskz_loadu_ps(m, sw + j));
    const __m512 y = kBias ? _mm512_fmadd_ps(s, d, _mm512_maskz_loadu_ps(m, bias + j)) : _mm512_mul_ps(s, d);
    _mm512_mask_storeu_ps(out + j, m, kGelu ? Gelu16(y) : y);  // GELU on the registers
  }
}

// Eight lanes, then the portable loop's arithmetic for the tail; GELU as GeluInPlace
// computes it on a host without AVX-512 (Gelu8, FastGelu on the tail), on the registers.
template <bool kBias, bool kGelu>
void DequantRowAvx2(const int32_t* a, const int32_t* cs, const float* sw, const float* bias, float sx, int32_t zp,
                    float* out, int64_t n) {
  int64_t j = 0;
#ifdef TIERSCOPE_VEC_AVX2
  const __m256 vsx = _mm256_set1_ps(sx);
  const __m256i vzp = _mm256_set1_epi32(zp);
  for (; j + 8 <= n; j += 8) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + j));
    const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(cs + j));
    const __m256 d = _mm256_cvtepi32_ps(_mm256_sub_epi32(v, _mm256_mullo_epi32(vzp, c)));
    const __m256 s = _mm256_mul_ps(vsx, _mm256_loadu_ps(sw + j));
    const __m256 y = kBias ? _mm256_fmadd_ps(s, d, _mm256_loadu_ps(bias + j)) : _mm256_mul_ps(s, d);
    _mm256_storeu_ps(out + j, kGelu ? Gelu8(y) : y);
  }
#endif
  for (; j < n; ++j) {
    const float d = static_cast<float>(a[j] - zp * cs[j]);
    const float y = kBias ? std::fma(sx * sw[j], d, bias[j]) : sx * sw[j] * d;
    out[j] = kGelu ? FastGelu(y) : y;
  }
}

// The dequantization that goes with micro-kernels `mk` (AVX-512 beside AVX512-VNNI and
// AMX, 8 lanes beside the others); `*gelu_fused` says whether it also applies GELU. Each
// gives the lanes GeluInPlace would on this host, so fused or not, the outputs agree.
DequantRowFn PickDequantRow(const Int8MicroKernels& mk, bool bias, Epilogue e, bool* gelu_fused) {
  const bool avx512 = std::string_view(mk.isa) == "avx512vnni" || std::string_view(mk.isa) == "amx-int8";
  *gelu_fused = e == Epilogue::kGelu && (avx512 || !RunsAvx512());
  if (avx512) {
    if (*gelu_fused) return bias ? DequantRowAvx512<true, true> : DequantRowAvx512<false, true>;
    return bias ? DequantRowAvx512<true, false> : DequantRowAvx512<false, false>;
  }
  if (*gelu_fused) return bias ? DequantRowAvx2<true, true> : DequantRowAvx2<false, true>;
  return bias ? DequantRowAvx2<true, false> : DequantRowAvx2<false, false>;
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
  DequantRowFn dequant = nullptr;
  bool gelu_fused = false;  // dequant applied the GELU already
};

void Int8GemmTile(const Int8GemmParams& p, int64_t task, int32_t* acc) {
  const Int8MicroKernels& mk = *p.mk;
  const int64_t mb = task / p.n_blocks, nb = task % p.n_blocks;
  const int64_t m0 = mb * kMB, p0 = nb * kPanelsPerTask;
  const int64_t rows = std::min<int64_t>(kMB, p.m - m0);
  const int64_t panels = std::min<int64_t>(kPanelsPerTask, p.w->num_panels() - p0);
  mk.Run(rows, p.kp / kQK, p.q + m0 * p.kp, p.kp, p.w->panels() + p0 * p.w->panel_bytes(), panels,
         p.w->panel_bytes(), acc, kNB);
  const int64_t n0 = p0 * kNR;
  const int64_t cols = std::min<int64_t>(panels * kNR, p.n - n0);
  const float* sw = p.w->scales() + n0;
  const int32_t* cs = p.w->colsums() + n0;
  const float* bias = p.bias != nullptr ? p.bias + n0 : nullptr;
  for (int64_t r = 0; r < rows; ++r) {
    float* out = p.y + (m0 + r) * p.n + n0;
    const auto zp = static_cast<int32_t>(p.qparams[(m0 + r) * 2 + 1]);  // a whole number in [0, 255]
    p.dequant(acc + r * kNB, cs, sw, bias, p.qparams[(m0 + r) * 2], zp, out, cols);
    switch (p.epilogue) {
      case Epilogue::kGelu:
        if (!p.gelu_fused) GeluInPlace(out, cols);
        break;
      case Epilogue::kTanh: TanhInPlace(out, cols); break;
      case Epilogue::kNone: break;
    }
  }
}

const char* Int8GemmKernelName(bool bias, Epilogue e) {
  static const char* kNames[2][3] = {
      {"cpu_igemm_nt_u8s8_48x64", "cpu_igemm_nt_u8s8_48x64_gelu", "cpu_igemm_nt_u8s8_48x64_tanh"},
      {"cpu_igemm_nt_u8s8_48x64_bias", "cpu_igemm_nt_u8s8_48x64_bias_gelu",
       "cpu_igemm_nt_u8s8_48x64_bias_tanh"}};
  return kNames[bias ? 1 : 0][static_cast<int>(e)];
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

Status CpuLinearInt8(CpuBackend& be, const Tensor& x, int64_t rows, int64_t x_row_stride,
                     const PackedWeight& w, const Tensor* bias, Epilogue epilogue, Tensor& y) {
  const auto& qw = static_cast<const CpuInt8Weight&>(w);
  const int64_t n = w.n(), k = w.k(), kp = qw.kq() * kQK;
  const Int8MicroKernels& mk = GetInt8MicroKernels();
  if (qw.weight_max() > mk.weight_max) {
    return FailedPrecondition("INT8 Linear: the weights are quantized to |w| <= " + std::to_string(qw.weight_max()) +
                              ", but the micro-kernels in force (" + mk.isa + ") sum exactly only |w| <= " +
                              std::to_string(mk.weight_max) + "; pack them again");
  }
  // Whole 16-row tiles of codes (AMX reads them); the rows past `rows` are zeros.
  TS_ASSIGN_OR_RETURN(Tensor q, Tensor::Empty(be, DType::kU8, {PaddedRows(rows), kp}));
  std::memset(static_cast<uint8_t*>(q.data()) + rows * kp, 0, static_cast<size_t>((PaddedRows(rows) - rows) * kp));
  TS_ASSIGN_OR_RETURN(Tensor qparams, Tensor::Empty(be, DType::kF32, {rows, 2}));
  const auto* xs = static_cast<const float*>(x.data());
  auto* qd = static_cast<uint8_t*>(q.data());
  auto* qp = static_cast<float*>(qparams.data());

  LaunchDesc quant;
  quant.kernel = "cpu_quantize_rows_f32_u8";
  quant.grid = Dim3{(rows + kQuantRowsPerTask - 1) / kQuantRowsPerTask, 1, 1};
  quant.block = Dim3{kQuantRowsPerTask, 1, 1};
  QuantizeRowsCost(rows, k, kp).Into(quant);
  quant.writes = {MemRange{q.data(), q.bytes()}, MemRange{qparams.data(), qparams.bytes()}};
  TS_RETURN_IF_ERROR(be.Launch(quant, [&](int64_t task, int) {
    const int64_t r1 = std::min(rows, (task + 1) * kQuantRowsPerTask);
    for (int64_t r = task * kQuantRowsPerTask; r < r1; ++r) QuantizeRow(xs + r * x_row_stride, k, kp, qd + r * kp, qp + r * 2);
  }));

  Int8GemmParams p{qd, qp, rows, n, kp, &qw, bias ? static_cast<const float*>(bias->data()) : nullptr,
                   epilogue, static_cast<float*>(y.data()), (n + kNB - 1) / kNB, &mk};
  p.dequant = PickDequantRow(mk, bias != nullptr, epilogue, &p.gelu_fused);
  LaunchDesc desc;
  desc.kernel = Int8GemmKernelName(bias != nullptr, epilogue);
  desc.grid = Dim3{p.n_blocks, (rows + kMB - 1) / kMB, 1};
  desc.block = Dim3{kNB, kMB, 1};
  desc.pipe = "int8_dot";
  QuantizedLinearCost(rows, n, k, bias != nullptr, epilogue).Into(desc);
  desc.writes[0] = {y.data(), y.bytes()};
  be.EnsureScratch(kMB * kNB);
  return be.Launch(desc, [&](int64_t task, int worker) {
    // The worker's scratch holds the int32 tile; it is only ever written and read as int32
    // in this launch (std::vector<float> storage reused, sizes equal).
    static_assert(sizeof(float) == sizeof(int32_t));
    Int8GemmTile(p, task, reinterpret_cast<int32_t*>(be.scratch(worker)));
  });
}

}  // namespace tierscope
