// cuBLASLt plans and launches for the CUDA backend's Linear.
#include "backend/cuda/gemm.h"

#include <string>

namespace tierscope {
namespace {

Status BlasStatus(blasStatus_t s, const std::string& what) {
  if (s == BLAS_STATUS_SUCCESS) return OkStatus();
  return Internal(std::string(TS_GPU_VENDOR) + "BLASLt error " + std::to_string(static_cast<int>(s)) +
                  " (" + what + ")");
}

auto DataType(cuda::ElemType t) {
  return t == cuda::ElemType::kF16 ? GPU_R_16F : t == cuda::ElemType::kBF16 ? GPU_R_16BF : GPU_R_32F;
}

}  // namespace

StatusOr<std::unique_ptr<LtGemm>> LtGemm::Create(CudaBackend& backend) {
  std::unique_ptr<LtGemm> g(new LtGemm(backend));
  TS_RETURN_IF_ERROR(BlasStatus(blasLtCreate(&g->handle_), "create handle"));
  TS_ASSIGN_OR_RETURN(g->workspace_, backend.Allocate(g->workspace_bytes_));
  return g;
}

LtGemm::~LtGemm() {
  for (auto& [key, p] : plans_) {
    if (p.a) blasLtMatrixLayoutDestroy(p.a);
    if (p.b) blasLtMatrixLayoutDestroy(p.b);
    if (p.c) blasLtMatrixLayoutDestroy(p.c);
    if (p.desc) blasLtMatmulDescDestroy(p.desc);
  }
  if (workspace_) backend_.Deallocate(workspace_, workspace_bytes_);
  if (handle_) blasLtDestroy(handle_);
}

StatusOr<LtGemm::Plan*> LtGemm::GetPlan(cuda::ElemType t, int64_t rows, int64_t x_stride,
                                        int64_t n, int64_t k, bool bias) {
  const Key key{static_cast<int>(t), rows, x_stride, n, k, bias};
  auto it = plans_.find(key);
  if (it != plans_.end()) return &it->second;
  Plan p;
  // Destroys what was created when a step fails (a kept plan is owned by plans_).
  struct Guard {
    Plan& p;
    bool keep = false;
    ~Guard() {
      if (keep) return;
      if (p.a) blasLtMatrixLayoutDestroy(p.a);
      if (p.b) blasLtMatrixLayoutDestroy(p.b);
      if (p.c) blasLtMatrixLayoutDestroy(p.c);
      if (p.desc) blasLtMatmulDescDestroy(p.desc);
    }
  } guard{p};
  const auto type = DataType(t);
  TS_RETURN_IF_ERROR(BlasStatus(blasLtMatmulDescCreate(&p.desc, BLAS_COMPUTE_32F, GPU_R_32F), "desc"));
  // Column-major view of the row-major problem: y^T[N, rows] = W[N, K] . x^T[K, rows], with
  // W stored [K, N] (ld K) and transposed, x stored [K, rows] (ld x_stride).
  const auto op_t = BLAS_OP_T, op_n = BLAS_OP_N;
  TS_RETURN_IF_ERROR(BlasStatus(
      blasLtMatmulDescSetAttribute(p.desc, BLASLT_MATMUL_DESC_TRANSA, &op_t, sizeof(op_t)), "transa"));
  TS_RETURN_IF_ERROR(BlasStatus(
      blasLtMatmulDescSetAttribute(p.desc, BLASLT_MATMUL_DESC_TRANSB, &op_n, sizeof(op_n)), "transb"));
  const auto epilogue = bias ? BLASLT_EPILOGUE_BIAS : BLASLT_EPILOGUE_DEFAULT;
  TS_RETURN_IF_ERROR(BlasStatus(
      blasLtMatmulDescSetAttribute(p.desc, BLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)),
      "epilogue"));
  TS_RETURN_IF_ERROR(BlasStatus(blasLtMatrixLayoutCreate(&p.a, type, k, n, k), "layout W"));
  TS_RETURN_IF_ERROR(BlasStatus(blasLtMatrixLayoutCreate(&p.b, type, k, rows, x_stride), "layout x"));
  TS_RETURN_IF_ERROR(BlasStatus(blasLtMatrixLayoutCreate(&p.c, type, n, rows, n), "layout y"));
  blasLtMatmulPreference_t pref = nullptr;
  TS_RETURN_IF_ERROR(BlasStatus(blasLtMatmulPreferenceCreate(&pref), "preference"));
  blasStatus_t s = blasLtMatmulPreferenceSetAttribute(pref, BLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                      &workspace_bytes_, sizeof(workspace_bytes_));
  int returned = 0;
  if (s == BLAS_STATUS_SUCCESS) {
    s = blasLtMatmulAlgoGetHeuristic(handle_, p.desc, p.a, p.b, p.c, p.c, pref, 1, &p.heuristic,
                                     &returned);
  }
  blasLtMatmulPreferenceDestroy(pref);
  TS_RETURN_IF_ERROR(BlasStatus(s, "heuristic"));
  if (returned == 0) {
    return Unimplemented("cuBLASLt has no algorithm for a " + std::to_string(rows) + "x" +
                         std::to_string(n) + "x" + std::to_string(k) + " GEMM of this type");
  }
  guard.keep = true;
  return &(plans_[key] = p);
}

Status LtGemm::Run(gpuStream_t stream, cuda::ElemType t, const void* x, int64_t rows,
                   int64_t x_stride, const void* w, int64_t n, int64_t k, const void* bias,
                   void* y) {
  TS_ASSIGN_OR_RETURN(Plan* p, GetPlan(t, rows, x_stride, n, k, bias != nullptr));
  if (bias != nullptr) {
    TS_RETURN_IF_ERROR(BlasStatus(
        blasLtMatmulDescSetAttribute(p->desc, BLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)),
        "bias"));
  }
  const float alpha = 1.0f, beta = 0.0f;
  return BlasStatus(blasLtMatmul(handle_, p->desc, &alpha, w, p->a, x, p->b, &beta, y, p->c, y,
                                 p->c, &p->heuristic.algo, workspace_, workspace_bytes_, stream),
                    "matmul");
}

}  // namespace tierscope
