// A device's properties (what torch.cuda.get_device_properties shows) and the peaks a
// GPU measures with its own kernels.
#ifndef TIERSCOPE_BACKEND_DEVICE_H_
#define TIERSCOPE_BACKEND_DEVICE_H_

#include <cstdint>
#include <string>

#include "tierscope/dtype.h"

namespace tierscope {

struct DeviceProps {
  std::string name;          // "cpu: AMD EPYC (2 threads)", "cuda:0: NVIDIA H200 (132 SMs, sm_90)"
  std::string model;         // GPUs: the device's own name ("NVIDIA H200"), no ordinal
  std::string kind;          // "cpu" or "cuda"
  int compute_units = 1;     // CPU: worker threads
  int64_t total_memory = 0;  // bytes
  // GPUs: per streaming multiprocessor, and the architecture ("sm_90").
  int max_threads_per_unit = 0;
  int max_blocks_per_unit = 0;
  int regs_per_unit = 0;
  int64_t shared_per_unit = 0;
  int64_t reserved_shared_per_block = 0;  // what the runtime keeps of each block's share
  int warp_size = 0;
  int64_t l2_bytes = 0;
  std::string arch;
  // Whether the engine's kernels here compute in FP16 / in BF16. Where they do not (the
  // CPU: FP16 never; BF16 without AVX512_BF16, or with TIERSCOPE_BF16_KERNELS=fp32), an
  // FP16/BF16 run keeps its weights in 16 bits, widened in registers, and its activations
  // in FP32: converting them between ops would cost time and precision and buy nothing.
  bool f16_arithmetic = true;
  bool bf16_arithmetic = true;
  // The flag above for a run of precision `t` (false for FP32 and INT8 runs).
  bool HalfArithmetic(DType t) const {
    return t == DType::kF16 ? f16_arithmetic : t == DType::kBF16 ? bf16_arithmetic : false;
  }
};

// Peaks a device measures with its own kernels (GPUs), FLOP/s and bytes/s.
struct DevicePeaks {
  double fp32_flops = 0;         // an FP32 FMA kernel over every SM
  double fp16_tensor_flops = 0;  // large FP16 / BF16 GEMMs on the tensor cores (FP32
  double bf16_tensor_flops = 0;  // accumulation, as the engine's GEMMs)
  double mem_bw = 0;             // a triad kernel over buffers far larger than L2
};

}  // namespace tierscope

#endif  // TIERSCOPE_BACKEND_DEVICE_H_
