// The device kernels of the CUDA backend, as plain launchers the host code calls (each
// .cu file holds one op family). Element types: F32, F16 or BF16, accumulation in FP32.
// Each launcher only enqueues on `stream` and returns the launch error; it also reports
// the grid and block it used, for the launch descriptor.
#ifndef TIERSCOPE_BACKEND_CUDA_CUDA_OPS_H_
#define TIERSCOPE_BACKEND_CUDA_CUDA_OPS_H_

#include <cstdint>

#include "backend/cuda/cuda_vendor.h"

namespace tierscope {
namespace cuda {

enum class ElemType : int { kF32 = 0, kF16 = 1, kBF16 = 2 };

struct LaunchShape {
  int64_t grid_x = 1, grid_y = 1, grid_z = 1;
  int64_t block_x = 1, block_y = 1, block_z = 1;
  int64_t shared_bytes = 0;
};

// out[b, s, :] = word[ids[b, s]] + pos[s] + type[type_ids[b, s]], [B*S, H]. A token
// whose id is outside [0, vocab) or type outside [0, types) reads nothing and gets a
// NaN row, so it cannot read past a table nor pass for a real embedding.
gpuError_t EmbeddingSum(gpuStream_t stream, ElemType t, const int32_t* ids,
                        const int32_t* type_ids, const void* word, const void* pos,
                        const void* type, void* out, int64_t batch, int64_t seq, int64_t hidden,
                        int64_t vocab, int64_t types, LaunchShape* shape);

// out = LayerNorm(x + residual) * gamma + beta per row of `hidden`; residual may be null.
gpuError_t LayerNorm(gpuStream_t stream, ElemType t, const void* x, const void* residual,
                     const void* gamma, const void* beta, float eps, void* out, int64_t rows,
                     int64_t hidden, LaunchShape* shape);

// Multi-head self-attention over qkv [B, S, 3H] (Q, K, V blocks of H), key mask I32
// [B, S] (0 = masked), out [B, S, H]. One warp per query row, online softmax in FP32.
gpuError_t Attention(gpuStream_t stream, ElemType t, const void* qkv, const int32_t* mask,
                     void* out, int64_t batch, int64_t seq, int64_t heads, int64_t head_dim,
                     LaunchShape* shape);

enum class Activation : int { kGelu = 1, kTanh = 2 };
// y = act(y) in place over n elements (GELU is the exact erf form BERT uses).
gpuError_t ActivationInPlace(gpuStream_t stream, ElemType t, void* y, int64_t n, Activation act,
                             LaunchShape* shape);

// Peak measurement (calibrate.cu). FmaPeak: `blocks` x `threads` threads, each running
// 8 independent FMA chains for `iters` steps (16 x iters FLOPs a thread); `sink` gets one
// float per block so the work is not optimised away.
gpuError_t FmaPeak(gpuStream_t stream, float* sink, int blocks, int threads, int iters);
// a[i] = b[i] + 3 c[i] over n floats (n a multiple of 4): 12 bytes moved per element.
gpuError_t Triad(gpuStream_t stream, float* a, const float* b, const float* c, int64_t n,
                 int blocks);
// x[i] = a small pseudo-random value in [-0.5, 0.5) of type t, from `seed`.
gpuError_t FillRandom(gpuStream_t stream, ElemType t, void* x, int64_t n, uint32_t seed);

}  // namespace cuda
}  // namespace tierscope

#endif  // TIERSCOPE_BACKEND_CUDA_CUDA_OPS_H_
