// CUDA in-place activations for the GEMM epilogues cuBLASLt does not do exactly: BERT's
// GELU is the erf form (cuBLASLt's GELU epilogue is the tanh approximation), and tanh.
#include "backend/cuda/cuda_elem.cuh"

namespace tierscope {
namespace cuda {
namespace {

template <typename T>
__global__ void ActivationKernel(T* y, int64_t n, int act) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const float v = Load(y, i);
    const float r = act == 1 ? 0.5f * v * (1.0f + erff(v * 0.70710678118654752f)) : tanhf(v);
    Store(y, i, r);
  }
}

}  // namespace

gpuError_t ActivationInPlace(gpuStream_t stream, ElemType t, void* y, int64_t n, Activation act,
                             LaunchShape* shape) {
  const int threads = 256;
  int64_t blocks = (n + threads - 1) / threads;
  if (blocks > 65535) blocks = 65535;
  if (blocks < 1) blocks = 1;
  shape->grid_x = blocks;
  shape->block_x = threads;
  return Dispatch(t, [&](auto tag) {
    using T = decltype(tag);
    ActivationKernel<T><<<static_cast<unsigned>(blocks), threads, 0, stream>>>(
        static_cast<T*>(y), n, static_cast<int>(act));
    return gpuGetLastError();
  });
}

}  // namespace cuda
}  // namespace tierscope
