// What a vendor kernel's name says about its work: the library, the operation (GEMM, grouped
// GEMM, GEMV, convolution and its direction, attention), the data type and the tile —
// cuBLAS/cuBLASLt (xmma, nvjet, sgemm/gemv), CUTLASS, cuDNN, hipBLASLt/Tensile (Cijk_…_MT…),
// MIOpen (igemm_*), MUSA (musa_asm_*), Triton's matmul_ogs, vLLM's wvSplitK, MAGMA.
// A name carries the tile a kernel was compiled for, never the problem's M, N and K: it
// says what the work is and in which precision, not how much of it there is.
#ifndef TIERSCOPE_ANALYSIS_KERNEL_NAMES_H_
#define TIERSCOPE_ANALYSIS_KERNEL_NAMES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tierscope {

struct KernelName {
  std::string category;  // GEMM, grouped GEMM, GEMV, CONV_fwd, CONV_bwd_data, CONV_bwd_weight, CONV, attention
  std::string library;   // "cuBLAS", "CUTLASS", "cuDNN", "hipBLASLt/Tensile", "MIOpen", "MUSA", ...
  std::string dtype;     // a Kineto dtype name ("c10::BFloat16", "float", "tf32", ...); "" when the name has none
  int64_t tile_m = 0, tile_n = 0, tile_k = 0;  // 0: not in the name

  // "hipBLASLt/Tensile GEMM bf16 tile 32x32x256".
  std::string Label() const;
};

// What `name` says, or nullopt for a kernel the name does not identify as one of these.
std::optional<KernelName> ParseKernelName(std::string_view name);

// Kineto's dtype name for a short one ("bf16", "fp16", "h", "tf32", "e4m3", "int8", "fp32",
// ...): "c10::BFloat16", "c10::Half", "signed char", "float", ...; "" if unknown.
std::string KinetoDtypeName(std::string_view short_name);

}  // namespace tierscope

#endif  // TIERSCOPE_ANALYSIS_KERNEL_NAMES_H_
