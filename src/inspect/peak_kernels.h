// The CPU kernels the calibration times for its FLOP/s peaks: FP32 FMA chains (AVX-512,
// AVX2, scalar), the BF16 dot product (AVX512_BF16), and the INT8 dot product on each
// instruction set the INT8 GEMM has a variant for (AMX, AVX512-VNNI, AVX-VNNI, AVX2).
// Each kernel counts the operations it does (a multiply-add is 2), and can also report
// the multiply-adds its accumulators actually received, so a test checks the count
// against what the hardware did rather than against the same formula.
#ifndef TIERSCOPE_INSPECT_PEAK_KERNELS_H_
#define TIERSCOPE_INSPECT_PEAK_KERNELS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tierscope/status.h"

namespace tierscope {

enum class PeakPipe { kFp32Fma, kBf16Dot, kInt8Dot };

struct PeakKernel {
  PeakPipe pipe = PeakPipe::kFp32Fma;
  // FP32: CpuVectorIsa's names ("avx512f", "avx2+fma", "scalar"); BF16: "avx512_bf16";
  // INT8: CpuInt8DotIsa's names ("amx-int8", "avx512vnni", "avxvnni", "avx2").
  std::string isa;
  // Runs `iters` passes on the calling thread and returns the operations it counts
  // (FLOPs for FP32 and BF16, INT8 operations; a multiply-add is 2). With `macs` set it
  // runs on operands of 1, so every multiply-add adds 1 to an accumulator, and stores in
  // *macs what all its accumulators gained: the multiply-adds done. (The operands do not
  // change the kernel's speed; the calibration passes null.)
  double (*run)(int64_t iters, double* macs) = nullptr;
};

// Every (pipe, isa) the calibration has a kernel for, whether or not this CPU runs it.
std::vector<PeakKernel> AllPeakKernels();

// The kernel for `pipe` on `isa`: NotFound when there is none, FailedPrecondition when
// this CPU cannot run it (it would fault).
StatusOr<PeakKernel> FindPeakKernel(PeakPipe pipe, std::string_view isa);

}  // namespace tierscope

#endif  // TIERSCOPE_INSPECT_PEAK_KERNELS_H_
