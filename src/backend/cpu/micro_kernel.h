// The FP32 micro-kernels shared by the GEMM and attention kernels:
// c[r][0..16) += sum_k a[r*lda + k] * b[k*16 .. +16) for r < MR (MR in 1..6), with B
// packed in 16-column panels; pair (two panels) and wide (three panels, MR in 1..8) forms
// where the ISA has the registers; the single and wide forms also over BF16/FP16 panels.
// GetMicroKernels picks the fastest variant, or the one TIERSCOPE_FP32_KERNELS or a
// ScopedMicroKernels forces.
#ifndef TIERSCOPE_BACKEND_CPU_MICRO_KERNEL_H_
#define TIERSCOPE_BACKEND_CPU_MICRO_KERNEL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "backend/cpu/kernel_variant.h"

namespace tierscope {

constexpr int kNR = 16;  // columns of a B panel / of the micro-kernel
constexpr int kMR = 6;   // most rows of one micro-kernel call
constexpr int kMRWide = 8;    // most rows of one wide call
constexpr int kWidePanels = 3;  // B panels of one wide call

using MicroKernelFn = void (*)(int64_t kc, const float* a, int64_t lda, const float* b,
                               float* c, int64_t ldc);
// Two adjacent panels at once: c[r][0..16) from b0, c[r][16..32) from b1 (twice the
// accumulators, so FMA latency is covered where the ISA has the registers: AVX-512).
using MicroKernelPairFn = void (*)(int64_t kc, const float* a, int64_t lda, const float* b0,
                                   const float* b1, float* c, int64_t ldc);

// Three panels `panel_stride` floats apart at once: c[r][0..48) for r < MR (MR in 1..8);
// 24 accumulators, the most the AVX-512 register file holds beside B and a broadcast, so
// fewer loads per FMA than the pair kernel (the GEMM's main loop on AVX-512).
using MicroKernelWideFn = void (*)(int64_t kc, const float* a, int64_t lda, const float* b,
                                   int64_t panel_stride, float* c, int64_t ldc);

// The single-panel and wide forms over B panels stored as 16-bit floats (BF16 or FP16),
// widened to FP32 in registers as they are loaded: the panels are read once, at half the
// bytes, with no conversion pass (FP32 arithmetic, for CPUs without BF16/FP16 math).
using MicroKernelB16Fn = void (*)(int64_t kc, const float* a, int64_t lda, const uint16_t* b,
                                  float* c, int64_t ldc);
using MicroKernelWideB16Fn = void (*)(int64_t kc, const float* a, int64_t lda, const uint16_t* b,
                                      int64_t panel_stride, float* c, int64_t ldc);

// Widens n 16-bit floats of a panel to FP32.
using WidenFn = void (*)(const uint16_t* src, float* dst, int64_t n);

struct HalfPanelKernels {
  MicroKernelB16Fn by_rows[kMR + 1] = {};
  MicroKernelB16Fn overwrite[kMR + 1] = {};
  MicroKernelWideB16Fn wide_by_rows[kMRWide + 1] = {};  // null where the ISA has none
  MicroKernelWideB16Fn wide_overwrite[kMRWide + 1] = {};
  // Where set (AVX2, scalar): a panel that more than kMR rows read is widened once into
  // FP32 scratch and run on the variant's FP32 kernels (MicroKernels::RunHalf), so its
  // rows share one conversion; a GEMM of several row blocks widens each column block once
  // a launch instead (widened_panels.h). Widening in the registers repeats it for every kMR rows: on
  // a Zen 1, whose 256-bit operations are two 128-bit halves, the conversions held the
  // 6x16 kernel to 78% (BF16) and 72% (FP16) of the FMA peak in L1, against 97% over FP32
  // panels. AVX-512 keeps the registers (its wide kernels: 3 panels a call).
  WidenFn widen = nullptr;
  bool has_wide() const { return wide_by_rows[1] != nullptr; }
};

struct MicroKernels {
  MicroKernelFn by_rows[kMR + 1];    // c += a.b; by_rows[mr] handles mr rows; [0] unused
  MicroKernelFn overwrite[kMR + 1];  // c = a.b (c need not be initialised)
  // The same over two panels; all null where the ISA has no pair kernel.
  MicroKernelPairFn pair_by_rows[kMR + 1] = {};
  MicroKernelPairFn pair_overwrite[kMR + 1] = {};
  // The same over three panels, up to kMRWide rows; all null where the ISA has none.
  MicroKernelWideFn wide_by_rows[kMRWide + 1] = {};
  MicroKernelWideFn wide_overwrite[kMRWide + 1] = {};
  // B panels in BF16 and in FP16 (every variant has both).
  HalfPanelKernels bf16, f16;
  bool has_pairs() const { return pair_by_rows[1] != nullptr; }
  bool has_wide() const { return wide_by_rows[1] != nullptr; }
  // Whether this is the AVX-512 variant (the only one with wide kernels): the row kernels
  // beside the GEMMs (LayerNorm) run 16 lanes with it, 8 with the others, so forcing a
  // variant tests theirs too.
  bool avx512() const { return has_wide(); }
  // Run over 16-bit panels (`panel_stride` elements apart) with hk, this variant's bf16 or
  // f16: in the registers, or each panel widened into `panel_scratch` (kc x 16 floats)
  // and run on this variant's FP32 kernels, where hk widens and more than kMR rows read it.
  void RunHalf(const HalfPanelKernels& hk, int64_t rows, int64_t kc, const float* a, int64_t lda, const uint16_t* b,
               int64_t panels, int64_t panel_stride, float* c, int64_t ldc, bool accumulate,
               float* panel_scratch) const {
    int64_t p = 0;
    if (hk.has_wide()) {
      const MicroKernelWideB16Fn* wide = accumulate ? hk.wide_by_rows : hk.wide_overwrite;
      for (; p + kWidePanels <= panels; p += kWidePanels) {
        for (int64_t r0 = 0; r0 < rows; r0 += kMRWide) {
          const int64_t mr = rows - r0 < kMRWide ? rows - r0 : kMRWide;
          wide[mr](kc, a + r0 * lda, lda, b + p * panel_stride, panel_stride, c + r0 * ldc + p * kNR, ldc);
        }
      }
    }
    const bool widen = hk.widen != nullptr && rows > kMR;
    const MicroKernelB16Fn* fns = accumulate ? hk.by_rows : hk.overwrite;
    for (; p < panels; ++p) {
      if (widen) {
        hk.widen(b + p * panel_stride, panel_scratch, kc * kNR);
        Run(rows, kc, a, lda, panel_scratch, 1, kc * kNR, c + p * kNR, ldc, accumulate);
        continue;
      }
      for (int64_t r0 = 0; r0 < rows; r0 += kMR) {
        const int64_t mr = rows - r0 < kMR ? rows - r0 : kMR;
        fns[mr](kc, a + r0 * lda, lda, b + p * panel_stride, c + r0 * ldc + p * kNR, ldc);
      }
    }
  }
  // c[rows][cols of the panels] (+)= a[rows][kc] . panels; `panels` B panels of
  // [kc][16] each, `panel_stride` floats apart; c has row stride ldc. With
  // `accumulate` false, c is overwritten. Three panels at a time on wide kernels, then
  // pairs, then a single panel.
  void Run(int64_t rows, int64_t kc, const float* a, int64_t lda, const float* b,
           int64_t panels, int64_t panel_stride, float* c, int64_t ldc,
           bool accumulate = true) const {
    int64_t p = 0;
    if (has_wide()) {
      const int64_t wide_end = panels / kWidePanels * kWidePanels;
      const MicroKernelWideFn* wide = accumulate ? wide_by_rows : wide_overwrite;
      for (; p < wide_end; p += kWidePanels) {
        for (int64_t r0 = 0; r0 < rows; r0 += kMRWide) {
          const int64_t mr = rows - r0 < kMRWide ? rows - r0 : kMRWide;
          wide[mr](kc, a + r0 * lda, lda, b + p * panel_stride, panel_stride, c + r0 * ldc + p * kNR, ldc);
        }
      }
    }
    const MicroKernelFn* fns = accumulate ? by_rows : overwrite;
    const MicroKernelPairFn* pairs = accumulate ? pair_by_rows : pair_overwrite;
    for (int64_t r0 = 0; r0 < rows; r0 += kMR) {
      const int64_t mr = rows - r0 < kMR ? rows - r0 : kMR;
      int64_t q = p;
      if (has_pairs()) {
        for (; q + 1 < panels; q += 2) {
          pairs[mr](kc, a + r0 * lda, lda, b + q * panel_stride, b + (q + 1) * panel_stride,
                    c + r0 * ldc + q * kNR, ldc);
        }
      }
      for (; q < panels; ++q) {
        fns[mr](kc, a + r0 * lda, lda, b + q * panel_stride, c + r0 * ldc + q * kNR, ldc);
      }
    }
  }
};

// The micro-kernels every FP32 (and 16-bit-weight) GEMM and attention use: the fastest
// this CPU supports, the variant TIERSCOPE_FP32_KERNELS names ("avx512f", "avx2+fma",
// "scalar"), or the one a ScopedMicroKernels in force names.
const MicroKernels& GetMicroKernels();
// Empty, or why TIERSCOPE_FP32_KERNELS cannot be honoured (it names no variant this CPU
// runs); packing a float weight returns it as an error, before any GEMM runs.
const std::string& MicroKernelsEnvError();

struct MicroKernelVariant {
  const char* isa;  // "avx512f", "avx2+fma", "scalar"
  MicroKernels kernels;
};
// Every variant this CPU can run, fastest first (the first is GetMicroKernels'); tests
// check each against a double-precision reference, not only the one picked here.
std::vector<MicroKernelVariant> AvailableMicroKernels();

// Tests: every FP32 GEMM and attention runs on `variant` (one of AvailableMicroKernels())
// while in scope, so the variants this host does not pick are tested end to end too. Not
// for concurrent use; a whole process is forced by TIERSCOPE_FP32_KERNELS=<isa>.
class ScopedMicroKernels : public ScopedKernelVariant<MicroKernels> {
 public:
  explicit ScopedMicroKernels(const MicroKernels& variant);
};


}  // namespace tierscope

#endif  // TIERSCOPE_BACKEND_CPU_MICRO_KERNEL_H_
