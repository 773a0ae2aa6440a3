// CUDA kernels that measure the device's peaks for tier 3: an FP32 FMA kernel with
// eight independent chains per thread (enough to cover the FMA latency at full
// occupancy), a float4 triad over buffers far larger than L2, and a pseudo-random fill
// for the tensor-core GEMM's operands (zeros would run the tensor cores cooler and
// faster than real data).
#include <algorithm>

#include "backend/cuda/cuda_elem.cuh"
#include "backend/cuda/fma_peak_plan.h"

namespace tierscope {
namespace cuda {
namespace {

// Eight chains: what fma_peak_plan.h counts (kFmaPeakChains x 2 FLOPs a step).
static_assert(kFmaPeakChains == 8, "FmaPeakKernel runs 8 FMA chains a thread");
__global__ void FmaPeakKernel(float* sink, int iters, float a, float b) {
  float x0 = threadIdx.x * 1e-6f, x1 = x0 + 1e-3f, x2 = x0 + 2e-3f, x3 = x0 + 3e-3f;
  float x4 = x0 + 4e-3f, x5 = x0 + 5e-3f, x6 = x0 + 6e-3f, x7 = x0 + 7e-3f;
#pragma unroll 16
  for (int i = 0; i < iters; ++i) {
    x0 = fmaf(x0, a, b);
    x1 = fmaf(x1, a, b);
    x2 = fmaf(x2, a, b);
    x3 = fmaf(x3, a, b);
    x4 = fmaf(x4, a, b);
    x5 = fmaf(x5, a, b);
    x6 = fmaf(x6, a, b);
    x7 = fmaf(x7, a, b);
  }
  const float s = ((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7));
  // Every thread's result decides the store (which never happens for these inputs), so
  // no thread's chains can be dropped as dead code.
  if (s == -1.2345f) sink[blockIdx.x] = s;
}

__global__ void TriadKernel(float4* a, const float4* b, const float4* c, int64_t n4) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n4; i += stride) {
    const float4 x = b[i], y = c[i];
    a[i] = make_float4(x.x + 3.0f * y.x, x.y + 3.0f * y.y, x.z + 3.0f * y.z, x.w + 3.0f * y.w);
  }
}

template <typename T>
__global__ void FillKernel(T* x, int64_t n, uint32_t seed) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    uint32_t h = static_cast<uint32_t>(i) * 2654435761u ^ seed;  // a cheap integer hash
    h ^= h >> 16;
    h *= 0x7feb352du;
    h ^= h >> 15;
    Store(x, i, static_cast<float>(h >> 8) * (1.0f / 16777216.0f) - 0.5f);
  }
}

}  // namespace

gpuError_t FmaPeak(gpuStream_t stream, float* sink, int blocks, int threads, int iters) {
  FmaPeakKernel<<<blocks, threads, 0, stream>>>(sink, iters, 0.999999f, 1e-7f);
  return gpuGetLastError();
}

gpuError_t Triad(gpuStream_t stream, float* a, const float* b, const float* c, int64_t n,
                 int blocks) {
  if (n % 4 != 0) return gpuErrorInvalidValue;
  TriadKernel<<<blocks, 256, 0, stream>>>(reinterpret_cast<float4*>(a),
                                          reinterpret_cast<const float4*>(b),
                                          reinterpret_cast<const float4*>(c), n / 4);
  return gpuGetLastError();
}

gpuError_t FillRandom(gpuStream_t stream, ElemType t, void* x, int64_t n, uint32_t seed) {
  const int64_t blocks = std::min<int64_t>(std::max<int64_t>((n + 255) / 256, 1), 65535);
  return Dispatch(t, [&](auto tag) {
    using T = decltype(tag);
    FillKernel<T><<<static_cast<unsigned>(blocks), 256, 0, stream>>>(static_cast<T*>(x), n, seed);
    return gpuGetLastError();
  });
}

}  // namespace cuda
}  // namespace tierscope
