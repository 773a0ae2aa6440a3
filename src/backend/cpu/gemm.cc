// CPU GEMM for Linear: y = epilogue(x . W^T + bias), FP32 accumulation for F32, F16 and
// BF16 operands. Weights are pre-packed at load into 16-column panels [N/16][K][16];
// each task computes one tile of y, a row block of at most 48 rows (tile_rows.h) by 96
// columns, with register-blocked micro-kernels (8x48 where the ISA has them, else 6x32 or
// 6x16). F16/BF16: A's rows are converted to FP32 per K block, B's panels are widened in
// the micro-kernels' registers (AVX-512), or once a task into scratch for the FP32 kernels
// (AVX2, scalar: MicroKernels::RunHalf), or, where several row blocks read them, once a
// launch into shared scratch (widened_panels.h) — FP32 arithmetic either way.
// BF16 where the CPU has BF16 arithmetic (micro_kernel_bf16.h): the panels are packed in
// 2-deep groups [N/16][K/2][16][2] and the dot kernels read A's BF16 rows in place.
// With the residual add and LayerNorm in the epilogue (CpuLinearAddLayerNorm), a task
// holds whole rows, every column block, then normalises them in place (layer_norm_rows.h).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <string_view>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/layer_norm_rows.h"
#include "backend/cpu/micro_kernel.h"
#include "backend/cpu/micro_kernel_bf16.h"
#include "backend/cpu/tile_rows.h"
#include "backend/cpu/vec_math.h"
#include "backend/cpu/widened_panels.h"

namespace tierscope {
namespace {

constexpr int kMB = 48;   // most rows of one task's tile (the kernel names' 48; tile_rows.h)
constexpr int kNB = 96;   // columns of one task's tile: two wide calls
static_assert(kMB % kMRWide == 0 && kMB % kMR == 0 && kNB % (kWidePanels * kNR) == 0);
constexpr int kPanelsPerTask = kNB / kNR;
constexpr int kKC = 128;  // depth of one K block (three B panels of it fit L1 beside A rows)
constexpr int kKCDot = 256;  // the same for BF16 panels (half the bytes a value)
// F16/BF16 tasks take up to this many column blocks, so A's rows are converted once for
// all of them (fewer where that would leave too few tasks for the workers).
constexpr int64_t kMaxHalfGroup = 4;
// FP32: the C tile at the right edge; F16/BF16: A's K block in FP32 and kMaxHalfGroup
// tiles; then one 16-bit panel's K block widened to FP32 (MicroKernels::RunHalf).
constexpr size_t kPanelScratchAt = kMB * kKC + kMaxHalfGroup * kMB * kNB;
constexpr size_t kScratchFloats = kPanelScratchAt + kKC * kNR;

class CpuPackedWeight : public PackedWeight {
 public:
  CpuPackedWeight(int64_t n, int64_t k, DType dtype, Tensor panels, const char* dot_isa)
      : PackedWeight(n, k, dtype), panels_(std::move(panels)), dot_isa_(dot_isa) {}
  const Tensor& panels() const { return panels_; }
  int64_t bytes() const override { return static_cast<int64_t>(panels_.bytes()); }
  int64_t num_panels() const { return (n() + kNR - 1) / kNR; }
  // The BF16 dot kernels' isa the panels are packed in 2-deep groups for; null: [K][16].
  const char* dot_isa() const { return dot_isa_; }
  // Elements from one panel to the next.
  int64_t panel_stride() const { return dot_isa_ != nullptr ? Bf16Groups(k()) * kBGroupElems : k() * kNR; }

 private:
  Tensor panels_;  // [num_panels][K][16], or [num_panels][K/2][16][2], in dtype, zero-padded past N (and K)
  const char* dot_isa_;
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
  DType w_dtype;      // the panels': dtype, or F16/BF16 under FP32 activations
  int64_t n_blocks;  // column blocks of kNB
  int64_t n_group;   // column blocks of one task (1 for FP32)
  TileRows mt;       // the tasks' row blocks, of at most kMB rows
  WidenedPanels* widened;  // 16-bit panels widened once a launch, where on
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

// Bias, activation and conversion to y's dtype for rows x (panels x 16) of the FP32 tile
// `ctile` (row stride ldc) at y[m0][n0]; in place where `direct` (ctile is y).
void TileEpilogue(const GemmParams& p, int64_t m0, int64_t n0, int64_t rows, int64_t panels, float* ctile,
                  int64_t ldc, bool direct) {
  const size_t esize = DTypeSize(p.dtype);
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

// One FP32 tile of y, a row block (at most 48 rows) by 96 columns (FP32 activations; FP32,
// F16 or BF16 panels).
void GemmTile(const GemmParams& p, int64_t mb, int64_t nb, float* scratch) {
  const MicroKernels& mk = GetMicroKernels();
  const int64_t m0 = p.mt.begin(mb), p0 = nb * kPanelsPerTask;
  const int64_t rows = p.mt.rows(mb);
  const int64_t panels = std::min<int64_t>(kPanelsPerTask, p.w->num_panels() - p0);
  // Whole panels inside y: the micro-kernels accumulate straight into y (no tile to copy
  // out); else (the right edge) into the scratch tile, copied into y at the end.
  const int64_t n0 = p0 * kNR;
  const bool direct = n0 + panels * kNR <= p.n;
  const int64_t ldc = direct ? p.n : kNB;
  float* ctile = direct ? static_cast<float*>(p.y) + m0 * p.n + n0 : scratch;
  if (p.k == 0) {  // no K block writes it
    for (int64_t r = 0; r < rows; ++r) std::memset(ctile + r * ldc, 0, sizeof(float) * panels * kNR);
  }
  // This column block's FP32 panels: the weights', or 16-bit ones widened once a launch.
  const float* f32 = p.w_dtype == DType::kF32 ? static_cast<const float*>(p.w->panels().data()) + p0 * p.k * kNR
                                              : p.widened->Claim(nb);

  for (int64_t k0 = 0; k0 < p.k; k0 += kKC) {
    const int64_t kc = std::min<int64_t>(kKC, p.k - k0);
    const float* a = static_cast<const float*>(p.x) + m0 * p.x_stride + k0;
    const int64_t lda = p.x_stride;
    if (f32 == nullptr) {  // 16-bit panels under FP32 activations, widened by RunHalf
      const HalfPanelKernels& hk = p.w_dtype == DType::kBF16 ? mk.bf16 : mk.f16;
      const auto* w16 = static_cast<const uint16_t*>(p.w->panels().data()) + (p0 * p.k + k0) * kNR;
      mk.RunHalf(hk, rows, kc, a, lda, w16, panels, p.k * kNR, ctile, ldc, /*accumulate=*/k0 != 0,
                 scratch + kPanelScratchAt);
      continue;
    }
    const float* b[kPanelsPerTask];
    for (int64_t pp = 0; pp < panels; ++pp) b[pp] = f32 + (pp * p.k + k0) * kNR;
    // Panel-major: three B panels (kc x 48) where the ISA has wide kernels, else two or
    // one, stay in L1 while the rows stream past them.
    const int64_t panel_stride = p.k * kNR;
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
  TileEpilogue(p, m0, n0, rows, panels, ctile, ldc, direct);
}

// F16/BF16: the tile of y at row block mb (at most 48 rows) by 96 x p.n_group columns from
// column block nb0.
// Each K block of A's rows is converted to FP32 once for all the task's column blocks;
// B's 16-bit panels are widened as MicroKernels::RunHalf does.
void GemmTileHalf(const GemmParams& p, int64_t mb, int64_t nb0, float* scratch) {
  const MicroKernels& mk = GetMicroKernels();
  const HalfPanelKernels& hk = p.dtype == DType::kBF16 ? mk.bf16 : mk.f16;
  const int64_t m0 = p.mt.begin(mb);
  const int64_t rows = p.mt.rows(mb);
  const int64_t nb1 = std::min<int64_t>(nb0 + p.n_group, p.n_blocks);
  float* abuf = scratch;
  float* ctiles = scratch + kMB * kKC;  // one kMB x kNB tile per column block
  const auto* w = static_cast<const uint16_t*>(p.w->panels().data());
  const auto* x = static_cast<const uint16_t*>(p.x);
  // The rows' lines of x and of y are fetched while the micro-kernels run: the converting
  // loops would otherwise stall on each miss (short rows far apart defeat the prefetcher).
  const int64_t y_bytes = (std::min<int64_t>(nb1 * kNB, p.n) - nb0 * kNB) * 2;
  for (int64_t r = 0; r < rows; ++r) {
    const auto* xr = reinterpret_cast<const char*>(x + (m0 + r) * p.x_stride);
    for (int64_t off = 0; off < p.k * 2; off += 64) __builtin_prefetch(xr + off, 0, 2);
    const auto* yr = static_cast<const char*>(p.y) + ((m0 + r) * p.n + nb0 * kNB) * 2;
    for (int64_t off = 0; off < y_bytes; off += 64) __builtin_prefetch(yr + off, 1, 2);
  }
  const float* f32[kMaxHalfGroup];  // the column blocks' panels widened once a launch, or null
  for (int64_t nb = nb0; nb < nb1; ++nb) f32[nb - nb0] = p.widened->Claim(nb);
  for (int64_t k0 = 0; k0 < p.k; k0 += kKC) {
    const int64_t kc = std::min<int64_t>(kKC, p.k - k0);
    for (int64_t r = 0; r < rows; ++r) ToFloat(p.dtype, x + (m0 + r) * p.x_stride + k0, abuf + r * kc, kc);
    for (int64_t nb = nb0; nb < nb1; ++nb) {
      const int64_t p0 = nb * kPanelsPerTask;
      const int64_t panels = std::min<int64_t>(kPanelsPerTask, p.w->num_panels() - p0);
      float* ctile = ctiles + (nb - nb0) * kMB * kNB;
      if (const float* b = f32[nb - nb0]; b != nullptr) {
        mk.Run(rows, kc, abuf, kc, b + k0 * kNR, panels, p.k * kNR, ctile, kNB, /*accumulate=*/k0 != 0);
      } else {
        mk.RunHalf(hk, rows, kc, abuf, kc, w + (p0 * p.k + k0) * kNR, panels, p.k * kNR, ctile, kNB,
                   /*accumulate=*/k0 != 0, scratch + kPanelScratchAt);
      }
    }
  }
  for (int64_t nb = nb0; nb < nb1; ++nb) {
    const int64_t p0 = nb * kPanelsPerTask;
    const int64_t panels = std::min<int64_t>(kPanelsPerTask, p.w->num_panels() - p0);
    float* ctile = ctiles + (nb - nb0) * kMB * kNB;
    if (p.k == 0) std::memset(ctile, 0, sizeof(float) * kMB * kNB);
    TileEpilogue(p, m0, p0 * kNR, rows, panels, ctile, kNB, /*direct=*/false);
  }
}

// BF16 arithmetic: one tile of y (a row block by 96 columns) from A's BF16 rows in place
// and panels in 2-deep groups. The K blocks before the last sum into the FP32 scratch
// tile; the last one's kernels add the bias, apply GELU and store BF16 into y (tanh, the
// pooler's, after).
void GemmTileBf16Dot(const GemmParams& p, const Bf16Kernels& bk, int64_t mb, int64_t nb, float* ctile) {
  const int64_t m0 = p.mt.begin(mb), p0 = nb * kPanelsPerTask, n0 = p0 * kNR;
  const int64_t rows = p.mt.rows(mb);
  const int64_t panels = std::min<int64_t>(kPanelsPerTask, p.w->num_panels() - p0);
  const int64_t panel_stride = p.w->panel_stride();
  const auto* w = static_cast<const uint16_t*>(p.w->panels().data()) + p0 * panel_stride;
  const auto* x = static_cast<const uint16_t*>(p.x) + m0 * p.x_stride;
  const int64_t cols = std::min<int64_t>(panels * kNR, p.n - n0);
  const bool fused = p.epilogue != Epilogue::kTanh;
  float bias[kNB];
  if (p.bias != nullptr) ToFloat(p.dtype, static_cast<const uint16_t*>(p.bias) + n0, bias, cols);
  const Bf16Epilogue out{static_cast<uint16_t*>(p.y) + m0 * p.n + n0, p.n, p.bias != nullptr ? bias : nullptr, cols,
                         p.epilogue == Epilogue::kGelu};
  // kKCDot is even: only the last block can be odd. K = 0 still runs one (empty) block.
  for (int64_t k0 = 0; k0 == 0 || k0 < p.k; k0 += kKCDot) {
    const int64_t kc = std::min<int64_t>(kKCDot, p.k - k0);
    const bool last = k0 + kKCDot >= p.k;
    bk.Run(rows, kc, x + k0, p.x_stride, w + k0 / kBK * kBGroupElems, panels, panel_stride, ctile, kNB,
           /*from_c=*/k0 != 0, last && fused ? &out : nullptr);
  }
  if (!fused) TileEpilogue(p, m0, n0, rows, panels, ctile, kNB, /*direct=*/false);
}

// The index of a GEMM's operand dtypes in the name tables below.
int GemmNameIndex(DType x, DType w, bool dot) {
  int ti = x == DType::kF16 ? 1 : x == DType::kBF16 ? (dot ? 5 : 2) : 0;
  if (x == DType::kF32 && w != DType::kF32) ti = w == DType::kF16 ? 3 : 4;
  return ti;
}

// Names carry operation, dtype, layout, tile and fusion, like vendor GEMM names; FP32
// activations over 16-bit weights say which ("_wbf16", "_wf16"); BF16 on the BF16 dot
// kernels says so ("bf16dot"), apart from BF16 widened to FP32.
#define TS_GEMM_PREFIXES(M)                                                                              \
  M("cpu_sgemm_nt_f32"), M("cpu_hgemm_nt_f16"), M("cpu_bgemm_nt_bf16"), M("cpu_sgemm_nt_f32_wf16"), \
      M("cpu_sgemm_nt_f32_wbf16"), M("cpu_bgemm_nt_bf16dot")

const char* GemmKernelName(DType x, DType w, bool bias, Epilogue e, bool dot) {
#define TS_GEMM_NAMES(P)                                                                   \
  {{P "_48x96", P "_48x96_gelu", P "_48x96_tanh"},                                        \
   {P "_48x96_bias", P "_48x96_bias_gelu", P "_48x96_bias_tanh"}}
  static const char* kNames[6][2][3] = {TS_GEMM_PREFIXES(TS_GEMM_NAMES)};
#undef TS_GEMM_NAMES
  return kNames[GemmNameIndex(x, w, dot)][bias ? 1 : 0][static_cast<int>(e)];
}

// The GEMM with the residual add and LayerNorm in its epilogue: tasks of whole rows.
const char* GemmAddLayerNormKernelName(DType x, DType w, bool bias, bool dot) {
#define TS_GEMM_NAMES(P) {P "_rows_add_layer_norm", P "_rows_bias_add_layer_norm"}
  static const char* kNames[6][2] = {TS_GEMM_PREFIXES(TS_GEMM_NAMES)};
#undef TS_GEMM_NAMES
  return kNames[GemmNameIndex(x, w, dot)][bias ? 1 : 0];
}
#undef TS_GEMM_PREFIXES

}  // namespace

StatusOr<std::unique_ptr<PackedWeight>> CpuPackWeight(CpuBackend& be, const HostTensor& w,
                                                      DType dtype) {
  // Every run packs weights before its first GEMM or attention: a variant forced that this
  // CPU cannot run is refused here. BF16 and INT8 runs use the BF16 kernels (INT8 runs'
  // attention computes in BF16 where they have the dot kernels).
  if (const std::string& why = MicroKernelsEnvError(); !why.empty()) return InvalidArgument(why);
  if (const std::string& why = Bf16KernelsEnvError();
      !why.empty() && (dtype == DType::kBF16 || dtype == DType::kI8)) {
    return InvalidArgument(why);
  }
  if (dtype == DType::kI8) return CpuPackWeightInt8(be, w);
  const int64_t n = w.shape[0], k = w.shape[1];
  const int64_t panels = (n + kNR - 1) / kNR;
  // BF16 under the BF16 dot kernels: k values in pairs, [K/2][16][2]; else [K][16].
  const Bf16Kernels& bk = GetBf16Kernels();
  const bool pairs = dtype == DType::kBF16 && bk.dot();
  const int64_t depth = pairs ? Bf16Groups(k) * kBK : k;  // K, or K rounded up to pairs
  TS_ASSIGN_OR_RETURN(Tensor packed, Tensor::Empty(be, dtype, {panels, depth, kNR}));
  std::vector<float> row(static_cast<size_t>(k));
  std::vector<float> panel(static_cast<size_t>(depth * kNR));
  const size_t src_esize = DTypeSize(w.dtype), dst_esize = DTypeSize(dtype);
  for (int64_t p = 0; p < panels; ++p) {
    std::fill(panel.begin(), panel.end(), 0.0f);
    for (int64_t j = 0; j < kNR && p * kNR + j < n; ++j) {
      ToFloat(w.dtype, w.data + (p * kNR + j) * k * src_esize, row.data(), k);
      for (int64_t kk = 0; kk < k; ++kk) {
        panel[pairs ? kk / kBK * kBGroupElems + j * kBK + kk % kBK : kk * kNR + j] = row[kk];
      }
    }
    FromFloat(panel.data(), dtype, static_cast<std::byte*>(packed.data()) + p * depth * kNR * dst_esize,
              depth * kNR);
  }
  return std::unique_ptr<PackedWeight>(new CpuPackedWeight(n, k, dtype, std::move(packed), pairs ? bk.isa : nullptr));
}

namespace {

// BF16 panels packed for the BF16 dot kernels run only with BF16 activations on those
// kernels.
Status CheckDotPacking(const CpuPackedWeight& pw, DType t) {
  const Bf16Kernels& bk = GetBf16Kernels();
  if (pw.dot_isa() != nullptr && (t != DType::kBF16 || std::string_view(bk.isa) != pw.dot_isa())) {
    return FailedPrecondition(std::string("Linear: BF16 weights packed for the ") + pw.dot_isa() +
                              " BF16 kernels, run with " + std::string(DTypeName(t)) + " activations on the " +
                              bk.isa + " ones (pack and run under one TIERSCOPE_BF16_KERNELS)");
  }
  return OkStatus();
}

// Few row blocks (one sample's rows) over weights larger than a core's L2: each worker
// takes whole column blocks, every row block of them, so it streams only its share of
// the weights from beyond L2 and reuses each panel for all the rows (row block by row
// block, both workers streamed all of them: all-MiniLM-L6-v2 one sample at a time, 4.5%
// slower). Weights that fit in L2 keep the rows' order (the tiny model's: 6% faster so).
bool ByColumns(CpuBackend& be, int64_t m_blocks, const PackedWeight& pw) {
  return m_blocks < 4 * int64_t{be.num_workers()} && pw.bytes() > CpuL2BytesPerCore();
}

// F16/BF16 widened to FP32: column blocks a task takes, as many as leave at least 4 tasks
// a worker (at most kMaxHalfGroup).
int64_t HalfGroup(int64_t m_blocks, int64_t n_blocks, int workers) {
  int64_t group = std::min<int64_t>(kMaxHalfGroup, n_blocks);
  while (group > 1 && m_blocks * ((n_blocks + group - 1) / group) < 4 * workers) --group;
  return group;
}

// How this variant widens pw's 16-bit panels into scratch for its FP32 kernels (AVX2,
// scalar), or null: FP32 and INT8 weights, BF16 packed for the dot kernels, and AVX-512's
// widening in the registers.
WidenFn ScratchWiden(const CpuPackedWeight& pw) {
  if (pw.dot_isa() != nullptr || (pw.dtype() != DType::kBF16 && pw.dtype() != DType::kF16)) return nullptr;
  const MicroKernels& mk = GetMicroKernels();
  return (pw.dtype() == DType::kBF16 ? mk.bf16 : mk.f16).widen;
}

// The floats of pw's panels widened to FP32: the launch's workspace.
int64_t WidenedFloats(const CpuPackedWeight& pw) { return pw.num_panels() * pw.k() * kNR; }

// Whether a launch over the row blocks mt widens pw's panels once (widened_panels.h), not
// once a task: where the variant widens into scratch, and each column block is read by
// row blocks of more than kMR rows (fewer: RunHalf widens in the registers, writing
// nothing), kMinRowBlocksToWidenOnce of them at least (fewer share little, and pay for
// the FP32 copy's bytes).
constexpr int64_t kMinRowBlocksToWidenOnce = 4;
bool RowsWidenOnce(const TileRows& mt) { return mt.blocks >= kMinRowBlocksToWidenOnce && mt.most_rows() > kMR; }
bool WidensOnce(const CpuPackedWeight& pw, const TileRows& mt) {
  return ScratchWiden(pw) != nullptr && RowsWidenOnce(mt);
}

// The launch's shared widening, off where WidensOnce is not. The launch's bytes stay its
// operands' (GemmCost, as on every backend and in the roofline's shape-derived rows): the
// workspace, like the tasks' own scratch, is how this CPU runs the op, not what it reads.
StatusOr<WidenedPanels> LaunchWidening(CpuBackend& be, const CpuPackedWeight& pw, const TileRows& mt,
                                       int64_t n_blocks) {
  const WidenFn widen = ScratchWiden(pw);
  if (widen == nullptr || !RowsWidenOnce(mt)) return WidenedPanels();
  const int64_t total = WidenedFloats(pw);
  TS_ASSIGN_OR_RETURN(float* dst, be.EnsureSharedScratch(static_cast<size_t>(total)));
  return WidenedPanels(widen, static_cast<const uint16_t*>(pw.panels().data()), dst, kPanelsPerTask * pw.k() * kNR,
                       total, n_blocks);
}

// Column blocks [nb, nb + p.n_group) of row block mb, on the kernels for p's dtypes.
void GemmTask(const GemmParams& p, int64_t mb, int64_t nb, bool dot, float* scratch) {
  if (dot) {
    GemmTileBf16Dot(p, GetBf16Kernels(), mb, nb, scratch);
  } else if (p.dtype == DType::kF32) {
    GemmTile(p, mb, nb, scratch);
  } else {
    GemmTileHalf(p, mb, nb, scratch);
  }
}

}  // namespace

int64_t CpuGemmRowGranule() { return GetMicroKernels().has_wide() ? kMRWide : kMR; }

bool CpuLinearWidensPanelsOnce(CpuBackend& be, int64_t rows, const PackedWeight& w) {
  if (w.dtype() == DType::kI8) return false;
  const TileRows mt = SplitTileRows(rows, kMB, CpuGemmRowGranule(), be.num_workers());
  return WidensOnce(static_cast<const CpuPackedWeight&>(w), mt);
}

int64_t CpuLinearWorkspaceGrowth(const CpuBackend& be, int64_t rows, const PackedWeight& w) {
  if (w.dtype() == DType::kI8) return 0;
  const auto& pw = static_cast<const CpuPackedWeight&>(w);
  // The Linear's row blocks, or the fused LayerNorm's whole-row tasks.
  const int64_t granule = CpuGemmRowGranule();
  if (!WidensOnce(pw, SplitTileRows(rows, kMB, granule, be.num_workers())) &&
      !WidensOnce(pw, SplitRowTasks(rows, kMB, granule, be.num_workers()))) {
    return 0;
  }
  const int64_t held = static_cast<int64_t>(be.shared_scratch_floats());
  return std::max<int64_t>(0, WidenedFloats(pw) - held) * int64_t{sizeof(float)};
}

bool CpuLinearByColumns(CpuBackend& be, int64_t rows, const PackedWeight& w) {
  const TileRows mt = SplitTileRows(rows, kMB, CpuGemmRowGranule(), be.num_workers());
  return w.dtype() != DType::kI8 && ByColumns(be, mt.blocks, w);
}

Status CpuLinear(CpuBackend& be, const Tensor& x, int64_t rows, int64_t x_row_stride,
                 const PackedWeight& w, const Tensor* bias, Epilogue epilogue, Tensor& y) {
  if (w.dtype() == DType::kI8) return CpuLinearInt8(be, x, rows, x_row_stride, w, bias, epilogue, y);
  const auto& pw = static_cast<const CpuPackedWeight&>(w);
  const int64_t n = w.n(), k = w.k();
  const DType t = x.dtype();
  const int64_t n_blocks = (n + kNB - 1) / kNB;
  // Row blocks of whole micro-kernel calls, so few rows still give every worker an equal share.
  const TileRows mt = SplitTileRows(rows, kMB, CpuGemmRowGranule(), be.num_workers());
  const int64_t m_blocks = mt.blocks;
  TS_RETURN_IF_ERROR(CheckDotPacking(pw, t));
  const bool dot = pw.dot_isa() != nullptr;
  const int64_t group = t != DType::kF32 && !dot ? HalfGroup(m_blocks, n_blocks, be.num_workers()) : 1;
  const int64_t col_tasks = (n_blocks + group - 1) / group;
  LaunchDesc desc;
  desc.kernel = GemmKernelName(t, w.dtype(), bias != nullptr, epilogue, dot);
  desc.grid = Dim3{col_tasks, m_blocks, 1};
  desc.block = Dim3{kNB * group, mt.most_rows(), 1};
  LinearCost(rows, n, k, bias != nullptr, epilogue, t, w.dtype()).Into(desc);
  if (dot) desc.pipe = "bf16_dot";
  desc.writes[0] = {y.data(), y.bytes()};
  TS_ASSIGN_OR_RETURN(WidenedPanels widened, LaunchWidening(be, pw, mt, n_blocks));
  GemmParams p{x.data(), x_row_stride, t, rows, n, k, &pw,
               bias ? bias->data() : nullptr, epilogue, y.data(), w.dtype(), n_blocks, group, mt, &widened};
  be.EnsureScratch(kScratchFloats);
  const bool by_columns = ByColumns(be, m_blocks, pw);
  return be.Launch(
      desc,
      [&](int64_t task, int worker) {
        const int64_t mb = by_columns ? task % m_blocks : task / col_tasks;
        const int64_t nb = (by_columns ? task / m_blocks : task % col_tasks) * group;
        GemmTask(p, mb, nb, dot, be.scratch(worker));
      },
      [&] { widened.Reset(); });
}

Status CpuLinearAddLayerNorm(CpuBackend& be, const Tensor& x, int64_t rows, int64_t x_row_stride,
                             const PackedWeight& w, const Tensor* bias, const AddLayerNormArgs& ln, Tensor& out) {
  if (w.dtype() == DType::kI8) {  // FP32 rows quantized here, as CpuLinearInt8 does
    TS_ASSIGN_OR_RETURN(QuantizedRows q, CpuNewQuantizedRows(be, rows, w.k()));
    TS_RETURN_IF_ERROR(CpuQuantizeRows(be, x, x_row_stride, q));
    return CpuLinearInt8AddLayerNorm(be, q, w, bias, ln, out, nullptr);
  }
  const auto& pw = static_cast<const CpuPackedWeight&>(w);
  const int64_t n = w.n(), k = w.k();
  const DType t = x.dtype();
  TS_RETURN_IF_ERROR(CheckDotPacking(pw, t));
  // Where the Linear alone would share out its columns (ByColumns), whole-row tasks would
  // make every worker stream all the weights: the Linear's launch into `out`, then the
  // LayerNorm's over it in place (each row read whole before it is written).
  if (CpuLinearByColumns(be, rows, w)) {
    TS_RETURN_IF_ERROR(CpuLinear(be, x, rows, x_row_stride, w, bias, Epilogue::kNone, out));
    return CpuLayerNorm(be, out, ln.residual, *ln.gamma, *ln.beta, ln.eps, out);
  }
  // Tasks of whole rows (every column block), each then normalised in place with the
  // residual's rows while in cache: the Linear's rows, then LayerNorm over them.
  const TileRows mt = SplitRowTasks(rows, kMB, CpuGemmRowGranule(), be.num_workers());
  const bool dot = pw.dot_isa() != nullptr;
  const int64_t n_blocks = (n + kNB - 1) / kNB;
  const int64_t group = t != DType::kF32 && !dot ? std::min<int64_t>(kMaxHalfGroup, n_blocks) : 1;
  LaunchDesc desc;
  desc.kernel = GemmAddLayerNormKernelName(t, w.dtype(), bias != nullptr, dot);
  desc.grid = Dim3{mt.blocks, 1, 1};
  desc.block = Dim3{n, mt.most_rows(), 1};
  WithAddLayerNorm(LinearCost(rows, n, k, bias != nullptr, Epilogue::kNone, t, w.dtype()), rows, n, t).Into(desc);
  if (dot) desc.pipe = "bf16_dot";
  desc.writes[0] = {out.data(), out.bytes()};
  TS_ASSIGN_OR_RETURN(WidenedPanels widened, LaunchWidening(be, pw, mt, n_blocks));
  GemmParams p{x.data(), x_row_stride, t, rows, n, k, &pw,
               bias ? bias->data() : nullptr, Epilogue::kNone, out.data(), w.dtype(), n_blocks, group, mt, &widened};
  const LnRows lr = DenseLnRows(t, n, ln.eps);
  const size_t es = DTypeSize(t);
  std::vector<float> affine;
  const LnAffine ab = Fp32Affine(*ln.gamma, *ln.beta, &affine);
  // The GEMM's scratch, then LayerNorm's.
  be.EnsureScratch(static_cast<size_t>(kScratchFloats + LayerNormRowScratchFloats(n)));
  return be.Launch(
      desc,
      [&](int64_t task, int worker) {
        float* scratch = be.scratch(worker);
        for (int64_t nb = 0; nb < n_blocks; nb += group) GemmTask(p, task, nb, dot, scratch);
        const int64_t m0 = mt.begin(task);
        LnRows r = lr;
        r.x = static_cast<const std::byte*>(out.data()) + m0 * n * es;
        r.residual = static_cast<const std::byte*>(ln.residual->data()) + m0 * n * es;
        r.out = static_cast<std::byte*>(out.data()) + m0 * n * es;
        LayerNormRowRange(r, ab.gamma, ab.beta, 0, mt.rows(task), scratch + kScratchFloats);
      },
      [&] { widened.Reset(); });
}

}  // namespace tierscope
