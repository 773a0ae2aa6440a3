// CUDA fused multi-head self-attention: one warp per (sample, head, query row), four
// rows per block. The query row lives in registers (pre-scaled), keys stream from
// global memory (L2 resident for BERT's lengths), and the softmax is online (running
// max and sum in FP32), so the S x S score matrix never reaches memory. Masked keys are
// skipped (they add exactly 0); when every key is masked, V is averaged uniformly, as
// Hugging Face's additive mask does and as the CPU backend does.
#include <cmath>

#include "backend/cuda/cuda_elem.cuh"

namespace tierscope {
namespace cuda {
namespace {

constexpr int kRowsPerBlock = 4;
constexpr int kMaxPerLane = 8;  // head_dim up to 256

template <typename T>
__global__ void AttentionKernel(const T* qkv, const int32_t* mask, T* out, int64_t seq,
                                int64_t heads, int64_t head_dim) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + warp;
  const int64_t h = blockIdx.y, b = blockIdx.z;
  if (row >= seq) return;
  const int64_t H = heads * head_dim, stride = 3 * H;
  const T* base = qkv + b * seq * stride;
  const int32_t* m = mask + b * seq;
  const float scale = rsqrtf(static_cast<float>(head_dim));
  float q[kMaxPerLane], acc[kMaxPerLane];
#pragma unroll
  for (int i = 0; i < kMaxPerLane; ++i) {
    const int64_t d = lane + 32 * i;
    q[i] = d < head_dim ? Load(base, row * stride + h * head_dim + d) * scale : 0.0f;
    acc[i] = 0.0f;
  }
  bool any = false;
  for (int64_t j = lane; j < seq; j += 32) any |= m[j] != 0;
  any = __any_sync(0xffffffffu, any);
  float running_max = -INFINITY, sum = 0.0f;
  for (int64_t j = 0; j < seq; ++j) {
    if (any && m[j] == 0) continue;
    const T* k = base + j * stride + H + h * head_dim;
    const T* v = k + H;
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < kMaxPerLane; ++i) {
      const int64_t d = lane + 32 * i;
      if (d < head_dim) s += q[i] * Load(k, d);
    }
    s = any ? WarpSum(s) : 0.0f;  // all masked: equal scores, a uniform average
    const float new_max = fmaxf(running_max, s);
    const float correction = expf(running_max - new_max);  // 0 on the first key
    const float p = expf(s - new_max);
    sum = sum * correction + p;
#pragma unroll
    for (int i = 0; i < kMaxPerLane; ++i) {
      const int64_t d = lane + 32 * i;
      acc[i] = acc[i] * correction + (d < head_dim ? p * Load(v, d) : 0.0f);
    }
    running_max = new_max;
  }
  const float inv = 1.0f / sum;
#pragma unroll
  for (int i = 0; i < kMaxPerLane; ++i) {
    const int64_t d = lane + 32 * i;
    if (d < head_dim) Store(out, (b * seq + row) * H + h * head_dim + d, acc[i] * inv);
  }
}

}  // namespace

gpuError_t Attention(gpuStream_t stream, ElemType t, const void* qkv, const int32_t* mask,
                     void* out, int64_t batch, int64_t seq, int64_t heads, int64_t head_dim,
                     LaunchShape* shape) {
  if (head_dim > 32 * kMaxPerLane) return gpuErrorInvalidValue;
  const dim3 grid(static_cast<unsigned>((seq + kRowsPerBlock - 1) / kRowsPerBlock),
                  static_cast<unsigned>(heads), static_cast<unsigned>(batch));
  const dim3 block(32 * kRowsPerBlock);
  shape->grid_x = grid.x;
  shape->grid_y = grid.y;
  shape->grid_z = grid.z;
  shape->block_x = block.x;
  return Dispatch(t, [&](auto tag) {
    using T = decltype(tag);
    AttentionKernel<T><<<grid, block, 0, stream>>>(static_cast<const T*>(qkv), mask,
                                                   static_cast<T*>(out), seq, heads, head_dim);
    return gpuGetLastError();
  });
}

}  // namespace cuda
}  // namespace tierscope
