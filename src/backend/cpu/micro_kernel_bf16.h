// The BF16 micro-kernels with BF16 arithmetic: c (FP32) (+)= a (BF16 rows) . b (BF16), the
// products summed in FP32 by the CPU's BF16 dot instruction (AVX512_BF16's vdpbf16ps). B
// is packed in 16-column panels of 2-deep groups, [ceil(K/2)][16][2] elements (64 bytes a
// group: one zmm), the layout vdpbf16ps and AMX's BF16 tiles read; an odd K's last group
// holds a zero. A row's two k values of a group are one 32-bit broadcast.
// A CPU without BF16 arithmetic runs BF16 models on the FP32 micro-kernels instead (BF16
// weights widened in registers, FP32 activations): the "fp32" variant, which has no
// kernels here. GetBf16Kernels picks the fastest, or the one TIERSCOPE_BF16_KERNELS or a
// ScopedBf16Kernels forces.
#ifndef TIERSCOPE_BACKEND_CPU_MICRO_KERNEL_BF16_H_
#define TIERSCOPE_BACKEND_CPU_MICRO_KERNEL_BF16_H_

#include <cstdint>
#include <string>
#include <vector>

#include "backend/cpu/kernel_variant.h"
#include "backend/cpu/micro_kernel.h"

namespace tierscope {

constexpr int kBK = 2;                    // k values per 32-bit group
constexpr int kBGroupElems = kNR * kBK;   // one group of a panel: 16 columns x 2 k
constexpr int kBMaxPanels = 3;            // B panels of one call: 24 accumulators at 8 rows

// Groups of a panel for K inputs (an odd K's last group is half zeros).
inline int64_t Bf16Groups(int64_t k) { return (k + kBK - 1) / kBK; }

// The last K block's store, in the kernel (the GEMM's epilogue in its producing op):
// y = BF16(GELU?(sum + bias)) instead of the FP32 sums to c.
struct Bf16Epilogue {
  uint16_t* y = nullptr;        // y at the call's first row and column
  int64_t ldy = 0;              // in elements
  const float* bias = nullptr;  // the call's columns' bias in FP32; null: none
  int64_t cols = 0;             // columns of y from the call's first: the panels past them are not stored
  bool gelu = false;
};

// sum[r][0..16 x NP) = (c[r][..] if from_c, else 0) + sum_k a[r * lda + k] * panel_p[k][j]
// for r < MR (1..8) and NP panels (1..3) `panel_stride` elements apart; kc k values from
// the group b points at (kc odd only for a row's last block: its last a value is read
// alone). The sums go to c, or through `out` to y when it is given. lda and ldc in elements.
using Bf16DotKernelFn = void (*)(int64_t kc, const uint16_t* a, int64_t lda, const uint16_t* b,
                                 int64_t panel_stride, float* c, int64_t ldc, bool from_c, const Bf16Epilogue* out);

struct Bf16Kernels {
  const char* isa = "fp32";  // "avx512bf16", or "fp32": the FP32 micro-kernels, widened
  // [np][mr]: np panels (1..3), mr rows (1..8); null throughout for "fp32".
  Bf16DotKernelFn fn[kBMaxPanels + 1][kMRWide + 1] = {};
  bool dot() const { return fn[1][1] != nullptr; }

  // [rows][16 x panels] sums of a[rows][kc] . panels (each Bf16Groups(K) x 32 elements,
  // `panel_stride` elements apart, b at the block's first group), added to c's where
  // from_c; to c (row stride ldc), or through `out` (y, bias and columns at the first
  // row and panel) to y. Three panels at a time, then what is left; eight rows at a time.
  void Run(int64_t rows, int64_t kc, const uint16_t* a, int64_t lda, const uint16_t* b, int64_t panels,
           int64_t panel_stride, float* c, int64_t ldc, bool from_c, const Bf16Epilogue* out = nullptr) const {
    for (int64_t p = 0; p < panels; p += kBMaxPanels) {
      const int64_t np = panels - p < kBMaxPanels ? panels - p : kBMaxPanels;
      for (int64_t r0 = 0; r0 < rows; r0 += kMRWide) {
        const int64_t mr = rows - r0 < kMRWide ? rows - r0 : kMRWide;
        Bf16Epilogue sub;
        if (out != nullptr) {
          sub = {out->y + r0 * out->ldy + p * kNR, out->ldy, out->bias ? out->bias + p * kNR : nullptr,
                 out->cols - p * kNR, out->gelu};
        }
        fn[np][mr](kc, a + r0 * lda, lda, b + p * panel_stride, panel_stride, c + r0 * ldc + p * kNR, ldc, from_c,
                   out != nullptr ? &sub : nullptr);
      }
    }
  }
};

// The BF16 kernels every BF16 Linear and attention uses (and an INT8 run's attention): the
// fastest this CPU supports, the one TIERSCOPE_BF16_KERNELS names (one of
// CpuBf16KernelIsas()), or the variant a ScopedBf16Kernels in force names. With "fp32" in
// force a BF16 run keeps FP32 activations and widens its BF16 weights on the FP32
// micro-kernels, and an INT8 run's attention computes in FP32.
const Bf16Kernels& GetBf16Kernels();
// Empty, or why TIERSCOPE_BF16_KERNELS cannot be honoured (it names no variant this CPU
// runs); packing a BF16 or an INT8 weight returns it as an error, before any kernel runs.
const std::string& Bf16KernelsEnvError();

// Every variant this CPU can run, fastest first (the first is GetBf16Kernels'); "fp32" last,
// always. The tests check each against a double-precision reference.
std::vector<Bf16Kernels> AvailableBf16Kernels();

// Tests: BF16 weights are packed for, and BF16 Linears run on, `variant` while in scope
// (a CPU backend made in scope computes BF16 runs the variant's way). Not for concurrent
// use; a whole process is forced by TIERSCOPE_BF16_KERNELS=<isa>.
class ScopedBf16Kernels : public ScopedKernelVariant<Bf16Kernels> {
 public:
  explicit ScopedBf16Kernels(const Bf16Kernels& variant);
};

}  // namespace tierscope

#endif  // TIERSCOPE_BACKEND_CPU_MICRO_KERNEL_BF16_H_
