// CPU GEMM for Linear: y = epilogue(x . W^T + bias), FP32 accumulation for F32, F16 and
// BF16 operands. Weights are pre-packed at load into 16-column panels [N/16][K][16];
// each task computes one 48x96 tile of y with register-blocked micro-kernels (8x48 where
// the ISA has them, else 6x32 or 6x16), converting F16/BF16 operands to FP32 per K block.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/micro_kernel.h"
#include "backend/cpu/vec_math.h"

namespace tierscope {
namespace {

constexpr int kMB = 48;   // rows of one task's tile
constexpr int kNB = 96;   // columns of one task's tile: two wide calls
static_assert(kMB % kMRWide == 0 && kMB % kMR == 0 && kNB % (kWidePanels * kNR) == 0);
constexpr int kPanelsPerTask = kNB / kNR;
constexpr int kKC = 128;  // depth of one K block (three B panels of it fit L1 beside A rows)
constexpr size_t kScratchFloats = kMB * kNB + kMB * kKC + kPanelsPerTask * kKC * kNR;

class CpuPackedWeight : public PackedWeight {
 public:
  CpuPackedWeight(int64_t n, int64_t k, DType dtype, Tensor panels)
      : PackedWeight(n, k, dtype), panels_(std::move(panels)) {}
  const Tensor& panels() const { return panels_; }
  int64_t bytes() const override { return static_cast<int64_t>(panels_.bytes()); }
  int64_t num_panels() const { return (n() + kNR - 1) / kNR; }

 private:
  Tensor panels_;  // [num_panels][K][16] in dtype, zero-padded past N
};

struct GemmParams {
  const void* x;
  int64_t x_stride;
  DType dtype;
  int64_t m, n, k;
  const CpuPackedWeight* w;
  const void* bias;
  Epilogue epilogue;
  void* y;
  int64_t n_blocks;
};

// Adds the bias and applies GELU or nothing on 16 lanes in one pass (AVX-512 hosts).
template <bool kGelu>
__attribute__((target("avx512f"))) void BiasRowAvx512(const float* bias, float* v, int64_t n) {
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 m = TailMask16(n - j);
    const __m512 y = _mm512_add_ps(_mm512_maskz_loadu_ps(m, v + j), _mm512_maskz_loadu_ps(m, bias + j));
    _mm512_mask_storeu_ps(v + j, m, kGelu ? Gelu16(y) : y);
  }
}

// Adds the bias and applies the activation to one row of n floats, in place.
void ApplyEpilogue(Epilogue e, const float* bias, float* v, int64_t n) {
  if (bias != nullptr && e != Epilogue::kTanh && RunsAvx512()) {
    (e == Epilogue::kGelu ? BiasRowAvx512<true> : BiasRowAvx512<false>)(bias, v, n);
    return;
  }
  if (bias != nullptr) {
    for (int64_t j = 0; j < n; ++j) v[j] += bias[j];
  }
  switch (e) {
    case Epilogue::kGelu:
      GeluInPlace(v, n);
      break;
    case Epilogue::kTanh:
      TanhInPlace(v, n);
      break;
    case Epilogue::kNone:
      break;
  }
}

void GemmTile(const GemmParams& p, int64_t task, float* scratch) {
  const MicroKernels& mk = GetMicroKernels();
  const int64_t mb = task / p.n_blocks, nb = task % p.n_blocks;
  const int64_t m0 = mb * kMB, p0 = nb * kPanelsPerTask;
  const int64_t rows = std::min<int64_t>(kMB, p.m - m0);
  const int64_t panels = std::min<int64_t>(kPanelsPerTask, p.w->num_panels() - p0);
  const size_t esize = DTypeSize(p.dtype);
  // FP32 with whole panels inside y: the micro-kernels accumulate straight into y (no tile
  // to copy out); else into the scratch tile, converted into y at the end.
  const int64_t n0 = p0 * kNR;
  const bool direct = p.dtype == DType::kF32 && n0 + panels * kNR <= p.n;
  const int64_t ldc = direct ? p.n : kNB;
  float* ctile = direct ? static_cast<float*>(p.y) + m0 * p.n + n0 : scratch;
  float* abuf = scratch + kMB * kNB;
  float* bbuf = abuf + kMB * kKC;
  if (p.k == 0) {  // no K block writes it
    for (int64_t r = 0; r < rows; ++r) std::memset(ctile + r * ldc, 0, sizeof(float) * panels * kNR);
  }
  const auto* wbase = static_cast<const std::byte*>(p.w->panels().data());

  for (int64_t k0 = 0; k0 < p.k; k0 += kKC) {
    const int64_t kc = std::min<int64_t>(kKC, p.k - k0);
    const float* a;
    int64_t lda;
    const auto* xrow0 = static_cast<const std::byte*>(p.x) + (m0 * p.x_stride + k0) * esize;
    if (p.dtype == DType::kF32) {
      a = reinterpret_cast<const float*>(xrow0);
      lda = p.x_stride;
    } else {
      for (int64_t r = 0; r < rows; ++r) {
        ToFloat(p.dtype, xrow0 + r * p.x_stride * esize, abuf + r * kc, kc);
      }
      a = abuf;
      lda = kc;
    }
    const float* b[kPanelsPerTask];
    for (int64_t pp = 0; pp < panels; ++pp) {
      const std::byte* src = wbase + ((p0 + pp) * p.k + k0) * kNR * esize;
      if (p.dtype == DType::kF32) {
        b[pp] = reinterpret_cast<const float*>(src);
      } else {
        float* dst = bbuf + pp * kKC * kNR;
        ToFloat(p.dtype, src, dst, kc * kNR);
        b[pp] = dst;
      }
    }
    // Panel-major: three B panels (kc x 48) where the ISA has wide kernels, else two or
    // one, stay in L1 while the rows stream past them.
    const int64_t panel_stride = p.dtype == DType::kF32 ? p.k * kNR : kKC * kNR;
    int64_t pp = 0;
    if (mk.has_wide()) {
      for (; pp + kWidePanels <= panels; pp += kWidePanels) {
        for (int64_t r0 = 0; r0 < rows; r0 += kMRWide) {
          const int64_t mr = std::min<int64_t>(kMRWide, rows - r0);
          (k0 == 0 ? mk.wide_overwrite : mk.wide_by_rows)[mr](kc, a + r0 * lda, lda, b[pp], panel_stride,
                                                             ctile + r0 * ldc + pp * kNR, ldc);
        }
      }
    }
    if (mk.has_pairs()) {
      for (; pp + 1 < panels; pp += 2) {
        for (int64_t r0 = 0; r0 < rows; r0 += kMR) {
          const int64_t mr = std::min<int64_t>(kMR, rows - r0);
          (k0 == 0 ? mk.pair_overwrite : mk.pair_by_rows)[mr](kc, a + r0 * lda, lda, b[pp], b[pp + 1],
                                                             ctile + r0 * ldc + pp * kNR, ldc);
        }
      }
    }
    for (; pp < panels; ++pp) {
      for (int64_t r0 = 0; r0 < rows; r0 += kMR) {
        const int64_t mr = std::min<int64_t>(kMR, rows - r0);
        const float* ar = a + r0 * lda;
        float* c = ctile + r0 * ldc + pp * kNR;
        (k0 == 0 ? mk.overwrite : mk.by_rows)[mr](kc, ar, lda, b[pp], c, ldc);
      }
    }
  }
  // Epilogue: bias, activation, conversion to y's dtype (in place when direct).
  const int64_t cols = std::min<int64_t>(panels * kNR, p.n - n0);
  float bias[kNB];
  if (p.bias != nullptr) {
    ToFloat(p.dtype, static_cast<const std::byte*>(p.bias) + n0 * esize, bias, cols);
  }
  for (int64_t r = 0; r < rows; ++r) {
    float* c = ctile + r * ldc;
    ApplyEpilogue(p.epilogue, p.bias != nullptr ? bias : nullptr, c, cols);
    if (!direct) FromFloat(c, p.dtype, static_cast<std::byte*>(p.y) + ((m0 + r) * p.n + n0) * esize, cols);
  }
}

const char* GemmKernelName(DType t, bool bias, Epilogue e) {
  // Names carry operation, dtype, layout, tile and fusion, like vendor GEMM names.
  static const char* kNames[3][2][3] = {
      {{"cpu_sgemm_nt_f32_48x96", "cpu_sgemm_nt_f32_48x96_gelu", "cpu_sgemm_nt_f32_48x96_tanh"},
       {"cpu_sgemm_nt_f32_48x96_bias", "cpu_sgemm_nt_f32_48x96_bias_gelu",
        "cpu_sgemm_nt_f32_48x96_bias_tanh"}},
      {{"cpu_hgemm_nt_f16_48x96", "cpu_hgemm_nt_f16_48x96_gelu", "cpu_hgemm_nt_f16_48x96_tanh"},
       {"cpu_hgemm_nt_f16_48x96_bias", "cpu_hgemm_nt_f16_48x96_bias_gelu",
        "cpu_hgemm_nt_f16_48x96_bias_tanh"}},
      {{"cpu_bgemm_nt_bf16_48x96", "cpu_bgemm_nt_bf16_48x96_gelu",
        "cpu_bgemm_nt_bf16_48x96_tanh"},
       {"cpu_bgemm_nt_bf16_48x96_bias", "cpu_bgemm_nt_bf16_48x96_bias_gelu",
        "cpu_bgemm_nt_bf16_48x96_bias_tanh"}}};
  int ti = t == DType::kF16 ? 1 : t == DType::kBF16 ? 2 : 0;
  return kNames[ti][bias ? 1 : 0][static_cast<int>(e)];
}


}  // namespace

StatusOr<std::unique_ptr<PackedWeight>> CpuPackWeight(CpuBackend& be, const HostTensor& w,
                                                      DType dtype) {
  if (dtype == DType::kI8) return CpuPackWeightInt8(be, w);
  const int64_t n = w.shape[0], k = w.shape[1];
  const int64_t panels = (n + kNR - 1) / kNR;
  TS_ASSIGN_OR_RETURN(Tensor packed, Tensor::Empty(be, dtype, {panels, k, kNR}));
  std::vector<float> row(static_cast<size_t>(k));
  std::vector<float> panel(static_cast<size_t>(k * kNR));
  const size_t src_esize = DTypeSize(w.dtype), dst_esize = DTypeSize(dtype);
  for (int64_t p = 0; p < panels; ++p) {
    std::fill(panel.begin(), panel.end(), 0.0f);
    for (int64_t j = 0; j < kNR && p * kNR + j < n; ++j) {
      ToFloat(w.dtype, w.data + (p * kNR + j) * k * src_esize, row.data(), k);
      for (int64_t kk = 0; kk < k; ++kk) panel[kk * kNR + j] = row[kk];
    }
    FromFloat(panel.data(), dtype, static_cast<std::byte*>(packed.data()) + p * k * kNR * dst_esize,
              k * kNR);
  }
  return std::unique_ptr<PackedWeight>(new CpuPackedWeight(n, k, dtype, std::move(packed)));
}

Status CpuLinear(CpuBackend& be, const Tensor& x, int64_t rows, int64_t x_row_stride,
                 const PackedWeight& w, const Tensor* bias, Epilogue epilogue, Tensor& y) {
  if (w.dtype() == DType::kI8) return CpuLinearInt8(be, x, rows, x_row_stride, w, bias, epilogue, y);
  const auto& pw = static_cast<const CpuPackedWeight&>(w);
  const int64_t n = w.n(), k = w.k();
  const DType t = x.dtype();
  GemmParams p{x.data(), x_row_stride, t, rows, n, k, &pw,
               bias ? bias->data() : nullptr, epilogue, y.data(), (n + kNB - 1) / kNB};
  LaunchDesc desc;
  desc.kernel = GemmKernelName(t, bias != nullptr, epilogue);
  desc.grid = Dim3{p.n_blocks, (rows + kMB - 1) / kMB, 1};
  desc.block = Dim3{kNB, kMB, 1};
  LinearCost(rows, n, k, bias != nullptr, epilogue, t).Into(desc);
  desc.writes[0] = {y.data(), y.bytes()};
  be.EnsureScratch(kScratchFloats);
  return be.Launch(desc, [&](int64_t task, int worker) {
    GemmTile(p, task, be.scratch(worker));
  });
}

}  // namespace tierscope
