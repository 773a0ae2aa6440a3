// CUDA LayerNorm with an optional residual: one block per row; the row (x + residual)
// is read twice from global memory (L1/L2 resident), mean and variance in FP32.
#include "backend/cuda/cuda_elem.cuh"

namespace tierscope {
namespace cuda {
namespace {

template <typename T>
__global__ void LayerNormKernel(const T* x, const T* residual, const T* gamma, const T* beta,
                                float eps, T* out, int64_t hidden) {
  __shared__ float scratch[32];
  const int64_t base = static_cast<int64_t>(blockIdx.x) * hidden;
  auto in = [&](int64_t h) {  // the sum stays in FP32, as on the CPU backend
    float v = Load(x, base + h);
    if (residual != nullptr) v += Load(residual, base + h);
    return v;
  };
  float sum = 0.0f;
  for (int64_t h = threadIdx.x; h < hidden; h += blockDim.x) sum += in(h);
  const float mean = BlockSum(sum, scratch) / static_cast<float>(hidden);
  float sq = 0.0f;
  for (int64_t h = threadIdx.x; h < hidden; h += blockDim.x) {
    const float d = in(h) - mean;
    sq += d * d;
  }
  const float var = BlockSum(sq, scratch) / static_cast<float>(hidden);
  const float inv = rsqrtf(var + eps);
  for (int64_t h = threadIdx.x; h < hidden; h += blockDim.x) {
    Store(out, base + h, (in(h) - mean) * inv * Load(gamma, h) + Load(beta, h));
  }
}

}  // namespace

gpuError_t LayerNorm(gpuStream_t stream, ElemType t, const void* x, const void* residual,
                     const void* gamma, const void* beta, float eps, void* out, int64_t rows,
                     int64_t hidden, LaunchShape* shape) {
  const int threads = hidden >= 512 ? 256 : 128;
  shape->grid_x = rows;
  shape->block_x = threads;
  shape->shared_bytes = 32 * sizeof(float);
  return Dispatch(t, [&](auto tag) {
    using T = decltype(tag);
    LayerNormKernel<T><<<static_cast<unsigned>(rows), threads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<const T*>(residual), static_cast<const T*>(gamma),
        static_cast<const T*>(beta), eps, static_cast<T*>(out), hidden);
    return gpuGetLastError();
  });
}

}  // namespace cuda
}  // namespace tierscope
