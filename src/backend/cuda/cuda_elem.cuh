// Device helpers shared by the .cu files: element loads and stores in FP32, warp and
// block sums, and the dispatch from ElemType to a C++ element type.
#ifndef TIERSCOPE_BACKEND_CUDA_CUDA_ELEM_CUH_
#define TIERSCOPE_BACKEND_CUDA_CUDA_ELEM_CUH_

#include "backend/cuda/cuda_ops.h"

namespace tierscope {
namespace cuda {

__device__ __forceinline__ float Load(const float* p, int64_t i) { return p[i]; }
__device__ __forceinline__ float Load(const gpuHalf* p, int64_t i) { return __half2float(p[i]); }
__device__ __forceinline__ float Load(const gpuBf16* p, int64_t i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ void Store(float* p, int64_t i, float v) { p[i] = v; }
__device__ __forceinline__ void Store(gpuHalf* p, int64_t i, float v) { p[i] = __float2half_rn(v); }
__device__ __forceinline__ void Store(gpuBf16* p, int64_t i, float v) { p[i] = __float2bfloat16_rn(v); }

__device__ __forceinline__ float WarpSum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// The sum of `v` over the block (blockDim.x a multiple of 32, at most 1024); every
// thread gets it. `scratch` holds 32 floats.
__device__ __forceinline__ float BlockSum(float v, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = WarpSum(v);
  __syncthreads();  // scratch may still be read from a previous call
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  const int warps = blockDim.x >> 5;
  v = lane < warps ? scratch[lane] : 0.0f;
  return WarpSum(v);
}

// Calls f(T{}) with T the element type of `t`.
template <typename F>
gpuError_t Dispatch(ElemType t, F&& f) {
  switch (t) {
    case ElemType::kF32: return f(float{});
    case ElemType::kF16: return f(gpuHalf{});
    case ElemType::kBF16: return f(gpuBf16{});
  }
  return gpuSuccess;
}

}  // namespace cuda
}  // namespace tierscope

#endif  // TIERSCOPE_BACKEND_CUDA_CUDA_ELEM_CUH_
