// CPU multi-head self-attention: one task per (query block of 32 rows, head, sample).
// Scores, mask and softmax stay in FP32 scratch; the S x S matrix never reaches memory.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <string>

#include "backend/cpu/cpu_backend.h"

namespace tierscope {
namespace {

constexpr int64_t kQueryBlock = 32;

struct AttnParams {
  const void* qkv;
  const int32_t* mask;
  void* out;
  DType dtype;
  int64_t batch, seq, heads, head_dim, hidden;
  int64_t q_blocks;
};

void AttentionTask(const AttnParams& p, int64_t task, float* scratch) {
  const int64_t qb = task % p.q_blocks;
  const int64_t h = (task / p.q_blocks) % p.heads;
  const int64_t b = task / (p.q_blocks * p.heads);
  const int64_t S = p.seq, D = p.head_dim, H = p.hidden;
  float* kf = scratch;        // [S][D]
  float* vf = kf + S * D;     // [S][D]
  float* scores = vf + S * D; // [S]
  float* q = scores + S;      // [D]
  float* o = q + D;           // [D]
  const size_t es = DTypeSize(p.dtype);
  const auto* base = static_cast<const std::byte*>(p.qkv);
  for (int64_t j = 0; j < S; ++j) {
    const std::byte* row = base + ((b * S + j) * 3 * H) * es;
    ToFloat(p.dtype, row + (H + h * D) * es, kf + j * D, D);
    ToFloat(p.dtype, row + (2 * H + h * D) * es, vf + j * D, D);
  }
  const int32_t* mask = p.mask + b * S;
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const int64_t i_end = std::min(S, (qb + 1) * kQueryBlock);
  for (int64_t i = qb * kQueryBlock; i < i_end; ++i) {
    const std::byte* qrow = base + ((b * S + i) * 3 * H + h * D) * es;
    ToFloat(p.dtype, qrow, q, D);
    float max_score = -INFINITY;
    for (int64_t j = 0; j < S; ++j) {
      const float* kj = kf + j * D;
      float s = 0.0f;
#pragma omp simd reduction(+ : s)
      for (int64_t d = 0; d < D; ++d) s += q[d] * kj[d];
      s *= scale;
      if (mask[j] == 0) s += -FLT_MAX;  // as Hugging Face's additive mask
      scores[j] = s;
      max_score = std::max(max_score, s);
    }
    float sum = 0.0f;
    for (int64_t j = 0; j < S; ++j) {
      scores[j] = std::exp(scores[j] - max_score);
      sum += scores[j];
    }
    const float inv = 1.0f / sum;
    std::fill(o, o + D, 0.0f);
    for (int64_t j = 0; j < S; ++j) {
      const float w = scores[j] * inv;
      const float* vj = vf + j * D;
#pragma omp simd
      for (int64_t d = 0; d < D; ++d) o[d] += w * vj[d];
    }
    FromFloat(o, p.dtype, static_cast<std::byte*>(p.out) + ((b * S + i) * H + h * D) * es, D);
  }
}

const char* AttentionKernelName(DType t) {
  switch (t) {
    case DType::kF16: return "cpu_attn_softmax_f16_q32";
    case DType::kBF16: return "cpu_attn_softmax_bf16_q32";
    default: return "cpu_attn_softmax_f32_q32";
  }
}

}  // namespace

Status CpuAttention(CpuBackend& be, const Tensor& qkv, const Tensor& mask, int heads,
                    Tensor& out) {
  if (qkv.shape().size() != 3 || out.shape().size() != 3) {
    return InvalidArgument("Attention: qkv and out must be [B, S, *]");
  }
  const int64_t B = qkv.dim(0), S = qkv.dim(1), H = out.dim(2);
  if (heads <= 0 || H % heads != 0 || qkv.dim(2) != 3 * H || out.dim(0) != B ||
      out.dim(1) != S || mask.dtype() != DType::kI32 || mask.numel() != B * S ||
      qkv.dtype() != out.dtype()) {
    return InvalidArgument("Attention: inconsistent shapes qkv " + ShapeString(qkv.shape()) +
                           ", out " + ShapeString(out.shape()) + ", mask " +
                           ShapeString(mask.shape()) + ", heads " + std::to_string(heads));
  }
  AttnParams p{qkv.data(), mask.data_as<int32_t>(), out.data(), qkv.dtype(), B, S, heads,
               H / heads, H, (S + kQueryBlock - 1) / kQueryBlock};
  const int64_t D = p.head_dim;
  const double es = static_cast<double>(DTypeSize(p.dtype));
  LaunchDesc desc;
  desc.kernel = AttentionKernelName(p.dtype);
  desc.grid = Dim3{p.q_blocks, heads, B};
  desc.block = Dim3{kQueryBlock, D, 1};
  desc.flops = 4.0 * B * heads * S * S * D;  // QK^T and PV
  desc.bytes_read = es * B * S * 3 * H + 4.0 * B * S;
  desc.bytes_written = es * B * S * H;
  be.EnsureScratch(static_cast<size_t>(2 * S * D + S + 2 * D));
  return be.Launch(desc, [&](int64_t task, int worker) {
    AttentionTask(p, task, be.scratch(worker));
  });
}

}  // namespace tierscope
