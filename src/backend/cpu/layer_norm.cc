// CPU LayerNorm over the last dimension, optionally fused with the residual add that
// precedes it in a post-LN BERT block. Statistics are computed in FP32, two-pass.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "backend/cpu/cpu_backend.h"

namespace tierscope {
namespace {

constexpr int64_t kRowsPerTask = 16;

struct LnParams {
  const void* x;
  const void* residual;
  const void* gamma;
  const void* beta;
  void* out;
  DType dtype;
  int64_t rows, cols;
  float eps;
};

void LayerNormTask(const LnParams& p, int64_t task, float* scratch) {
  const int64_t r_end = std::min(p.rows, (task + 1) * kRowsPerTask);
  const int64_t C = p.cols;
  float* v = scratch;
  float* tmp = v + C;
  const float* g = AsFloat(p.dtype, p.gamma, tmp + C, C);
  const float* bt = AsFloat(p.dtype, p.beta, tmp + 2 * C, C);
  const size_t es = DTypeSize(p.dtype);
  for (int64_t r = task * kRowsPerTask; r < r_end; ++r) {
    const float* x = AsFloat(p.dtype, static_cast<const std::byte*>(p.x) + r * C * es, v, C);
    if (p.residual != nullptr) {
      const float* res =
          AsFloat(p.dtype, static_cast<const std::byte*>(p.residual) + r * C * es, tmp, C);
      for (int64_t c = 0; c < C; ++c) v[c] = x[c] + res[c];
    } else if (x != v) {
      std::memcpy(v, x, sizeof(float) * C);
    }
    float mean = 0.0f;
#pragma omp simd reduction(+ : mean)
    for (int64_t c = 0; c < C; ++c) mean += v[c];
    mean /= static_cast<float>(C);
    float var = 0.0f;
#pragma omp simd reduction(+ : var)
    for (int64_t c = 0; c < C; ++c) var += (v[c] - mean) * (v[c] - mean);
    var /= static_cast<float>(C);
    const float rstd = 1.0f / std::sqrt(var + p.eps);
    if (p.dtype == DType::kF32) {
      float* out = static_cast<float*>(p.out) + r * C;
      for (int64_t c = 0; c < C; ++c) out[c] = (v[c] - mean) * rstd * g[c] + bt[c];
    } else {
      for (int64_t c = 0; c < C; ++c) v[c] = (v[c] - mean) * rstd * g[c] + bt[c];
      FromFloat(v, p.dtype, static_cast<std::byte*>(p.out) + r * C * es, C);
    }
  }
}

}  // namespace

Status CpuLayerNorm(CpuBackend& be, const Tensor& x, const Tensor* residual, const Tensor& gamma,
                    const Tensor& beta, float eps, Tensor& out) {
  const int64_t C = x.dim(-1);  // shapes checked by the kernel front (kernels.h)
  const DType t = x.dtype();
  LnParams p{x.data(), residual ? residual->data() : nullptr, gamma.data(), beta.data(),
             out.data(), t, x.numel() / C, C, eps};
  LaunchDesc desc;
  static const char* kNames[2][3] = {
      {"cpu_layer_norm_f32_r16", "cpu_layer_norm_f16_r16", "cpu_layer_norm_bf16_r16"},
      {"cpu_add_layer_norm_f32_r16", "cpu_add_layer_norm_f16_r16",
       "cpu_add_layer_norm_bf16_r16"}};
  desc.kernel = kNames[residual ? 1 : 0][t == DType::kF16 ? 1 : t == DType::kBF16 ? 2 : 0];
  desc.grid = Dim3{(p.rows + kRowsPerTask - 1) / kRowsPerTask, 1, 1};
  desc.block = Dim3{kRowsPerTask, C, 1};
  LayerNormCost(p.rows, C, residual != nullptr, t).Into(desc);
  desc.writes[0] = {out.data(), out.bytes()};
  be.EnsureScratch(static_cast<size_t>(4 * C));
  return be.Launch(desc, [&](int64_t task, int worker) {
    LayerNormTask(p, task, be.scratch(worker));
  });
}

}  // namespace tierscope
