// CUDA embeddings: one block per token sums its word, position and token-type rows.
#include "backend/cuda/cuda_elem.cuh"

namespace tierscope {
namespace cuda {
namespace {

template <typename T>
__global__ void EmbeddingSumKernel(const int32_t* ids, const int32_t* type_ids, const T* word,
                                   const T* pos, const T* type, T* out, int64_t seq,
                                   int64_t hidden, int64_t vocab, int64_t types) {
  const int64_t token = blockIdx.x;
  const int64_t s = token % seq;
  const int64_t w = ids[token], ty = type_ids[token];
  if (w < 0 || w >= vocab || ty < 0 || ty >= types) {
    for (int64_t h = threadIdx.x; h < hidden; h += blockDim.x) Store(out, token * hidden + h, nanf(""));
    return;
  }
  for (int64_t h = threadIdx.x; h < hidden; h += blockDim.x) {
    const float v = Load(word, w * hidden + h) + Load(pos, s * hidden + h) + Load(type, ty * hidden + h);
    Store(out, token * hidden + h, v);
  }
}

}  // namespace

gpuError_t EmbeddingSum(gpuStream_t stream, ElemType t, const int32_t* ids,
                        const int32_t* type_ids, const void* word, const void* pos,
                        const void* type, void* out, int64_t batch, int64_t seq, int64_t hidden,
                        int64_t vocab, int64_t types, LaunchShape* shape) {
  const int threads = hidden >= 256 ? 256 : 128;
  shape->grid_x = batch * seq;
  shape->block_x = threads;
  return Dispatch(t, [&](auto tag) {
    using T = decltype(tag);
    EmbeddingSumKernel<T><<<static_cast<unsigned>(batch * seq), threads, 0, stream>>>(
        ids, type_ids, static_cast<const T*>(word), static_cast<const T*>(pos),
        static_cast<const T*>(type), static_cast<T*>(out), seq, hidden, vocab, types);
    return gpuGetLastError();
  });
}

}  // namespace cuda
}  // namespace tierscope
