// What every kernel launch says about itself — its name, grid and block, FLOPs and bytes
// from the op's cost model, the pipe it runs on and the buffers it writes — which the
// profiler (tier 2) and the inspector (tier 3) read.
#ifndef TIERSCOPE_BACKEND_LAUNCH_H_
#define TIERSCOPE_BACKEND_LAUNCH_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tierscope {

struct Dim3 {
  int64_t x = 1, y = 1, z = 1;
  int64_t count() const { return x * y * z; }
};

// A buffer a kernel writes.
struct MemRange {
  void* ptr = nullptr;
  size_t bytes = 0;
};

// What every kernel launch says about itself; profilers and tier 3 read it.
// CPU: grid = tasks (e.g. M-tiles x N-tiles), block = the work of one task.
struct LaunchDesc {
  std::string kernel;  // "cpu_sgemm_nt_f32_64x64_bias_gelu"
  Dim3 grid, block;
  double flops = 0;
  double bytes_read = 0;
  double bytes_written = 0;
  int64_t shared_bytes = 0;  // GPUs: shared memory per block, static + dynamic
  // The arithmetic pipe the FLOPs run on, which names the peak they are measured against
  // ("fp32_fma", "bf16_dot", "int8_dot", "tensor_f16", "tensor_bf16"): always a string
  // literal. An INT8 GEMM's multiply-adds count as 2 operations each, like FLOPs.
  std::string_view pipe = "fp32_fma";
  // Every buffer the kernel writes (tier-3 replay saves and restores them).
  std::array<MemRange, 3> writes{};
};

}  // namespace tierscope

#endif  // TIERSCOPE_BACKEND_LAUNCH_H_
