// GEMMs of the CUDA backend through cuBLASLt: y[rows, N] = x[rows, K] . W[N, K]^T (+ bias
// in cuBLASLt's epilogue), FP32 compute for every element type (no TF32, so FP32 matches
// the CPU backend). Plans (descriptors, layouts, the heuristic's algorithm) are cached per
// shape and type.
#ifndef TIERSCOPE_BACKEND_CUDA_GEMM_H_
#define TIERSCOPE_BACKEND_CUDA_GEMM_H_

#include <map>
#include <memory>
#include <tuple>

#include "backend/cuda/cuda_backend.h"

namespace tierscope {

class LtGemm {
 public:
  static StatusOr<std::unique_ptr<LtGemm>> Create(CudaBackend& backend);
  ~LtGemm();
  // Enqueues the GEMM on `stream`. x rows are `x_stride` elements apart; bias may be null.
  Status Run(gpuStream_t stream, cuda::ElemType t, const void* x, int64_t rows, int64_t x_stride,
             const void* w, int64_t n, int64_t k, const void* bias, void* y);

 private:
  struct Plan {
    blasLtMatmulDesc_t desc = nullptr;
    blasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    blasLtMatmulHeuristicResult_t heuristic{};
  };
  using Key = std::tuple<int, int64_t, int64_t, int64_t, int64_t, bool>;
  explicit LtGemm(CudaBackend& backend) : backend_(backend) {}
  StatusOr<Plan*> GetPlan(cuda::ElemType t, int64_t rows, int64_t x_stride, int64_t n, int64_t k,
                          bool bias);

  CudaBackend& backend_;
  blasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 32 << 20;
  std::map<Key, Plan> plans_;
};

}  // namespace tierscope

#endif  // TIERSCOPE_BACKEND_CUDA_GEMM_H_
