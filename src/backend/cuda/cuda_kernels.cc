// The CUDA backend's Kernels: each op family enqueued with its launch descriptor (name,
// grid and block as launched, FLOPs and bytes, the buffers it writes). GEMMs go through
// cuBLASLt, whose internal grid is its own: the descriptor then gives the 128x128 output
// tiles the problem has, a stand-in until CUPTI reports the real launch. GELU and tanh
// run after the GEMM, on its FP16/BF16 output: one rounding more than the CPU backend's
// fused FP32 epilogue (FP32 is unaffected).
#include <cstring>
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/gemm.h"
#include "backend/kernels.h"

namespace tierscope {
namespace {

using cuda::ElemType;
using cuda::LaunchShape;

StatusOr<ElemType> ToElem(DType t) {
  switch (t) {
    case DType::kF32: return ElemType::kF32;
    case DType::kF16: return ElemType::kF16;
    case DType::kBF16: return ElemType::kBF16;
    default: return InvalidArgument("the CUDA backend computes in F32, F16 or BF16, not " +
                                    std::string(DTypeName(t)));
  }
}

int TypeIndex(ElemType t) { return static_cast<int>(t); }

class CudaPackedWeight : public PackedWeight {
 public:
  CudaPackedWeight(int64_t n, int64_t k, DType dtype, Tensor w)
      : PackedWeight(n, k, dtype), w_(std::move(w)) {}
  const void* data() const { return w_.data(); }
  int64_t bytes() const override { return static_cast<int64_t>(w_.bytes()); }

 private:
  Tensor w_;  // [N, K] row-major on the device
};

class CudaKernels : public Kernels {
 public:
  CudaKernels(CudaBackend& be, std::unique_ptr<LtGemm> gemm, Status gemm_status)
      : be_(be), gemm_(std::move(gemm)), gemm_status_(std::move(gemm_status)) {}

 protected:
  // Contracts (shapes, dtypes) are the kernel front's (kernels.h); costs are op_cost.h's.
  StatusOr<std::unique_ptr<PackedWeight>> DoPackWeight(const HostTensor& w, DType dtype) override {
    if (dtype == DType::kI8) {
      return Unimplemented("INT8 is the CPU's precision lever; on a GPU use fp16 or bf16 (tensor cores)");
    }
    TS_RETURN_IF_ERROR(ToElem(dtype).status());
    const size_t n = static_cast<size_t>(w.numel());
    std::vector<float> f(n);
    ToFloat(w.dtype, w.data, f.data(), n);
    std::vector<std::byte> conv(n * DTypeSize(dtype));
    FromFloat(f.data(), dtype, conv.data(), n);
    TS_ASSIGN_OR_RETURN(Tensor t, Tensor::Empty(be_, dtype, {w.shape[0], w.shape[1]}));
    TS_RETURN_IF_ERROR(be_.CopyHostToDevice(t.data(), conv.data(), conv.size()));
    return std::unique_ptr<PackedWeight>(
        new CudaPackedWeight(w.shape[0], w.shape[1], dtype, std::move(t)));
  }

  Status DoLinear(const Tensor& x, int64_t rows, int64_t x_row_stride, const PackedWeight& w,
                  const Tensor* bias, Epilogue epilogue, Tensor& y) override {
    TS_RETURN_IF_ERROR(gemm_status_);
    TS_ASSIGN_OR_RETURN(ElemType t, ToElem(y.dtype()));
    const auto& pw = static_cast<const CudaPackedWeight&>(w);
    const int64_t n = w.n(), k = w.k();
    static const char* kNames[2][3] = {
        {"cublasLt_gemm_nt_f32", "cublasLt_gemm_nt_f16", "cublasLt_gemm_nt_bf16"},
        {"cublasLt_gemm_nt_f32_bias", "cublasLt_gemm_nt_f16_bias", "cublasLt_gemm_nt_bf16_bias"}};
    LaunchDesc desc;
    desc.kernel = kNames[bias ? 1 : 0][TypeIndex(t)];
    desc.grid = Dim3{(n + 127) / 128, (rows + 127) / 128, 1};
    desc.block = Dim3{256, 1, 1};
    GemmCost(rows, n, k, bias != nullptr, y.dtype()).Into(desc);
    desc.pipe = t == ElemType::kF32 ? "fp32_fma" : t == ElemType::kF16 ? "tensor_f16" : "tensor_bf16";
    desc.writes[0] = {y.data(), y.bytes()};
    TS_RETURN_IF_ERROR(be_.Launch(desc, [&](gpuStream_t s) {
      return gemm_->Run(s, t, x.data(), rows, x_row_stride, pw.data(), n, k,
                        bias ? bias->data() : nullptr, y.data());
    }));
    if (epilogue == Epilogue::kNone) return OkStatus();
    static const char* kAct[2][3] = {{"ts_gelu_erf_f32", "ts_gelu_erf_f16", "ts_gelu_erf_bf16"},
                                     {"ts_tanh_f32", "ts_tanh_f16", "ts_tanh_bf16"}};
    const bool gelu = epilogue == Epilogue::kGelu;
    const int64_t count = rows * n;
    LaunchDesc act;
    act.kernel = kAct[gelu ? 0 : 1][TypeIndex(t)];
    const int64_t blocks = std::min<int64_t>(std::max<int64_t>((count + 255) / 256, 1), 65535);
    act.grid = Dim3{blocks, 1, 1};
    act.block = Dim3{256, 1, 1};
    ActivationCost(epilogue, count, y.dtype()).Into(act);
    act.writes[0] = {y.data(), y.bytes()};
    return be_.Launch(act, [&](gpuStream_t s) {
      LaunchShape shape;
      return GpuStatus(cuda::ActivationInPlace(s, t, y.data(), count,
                                               gelu ? cuda::Activation::kGelu : cuda::Activation::kTanh,
                                               &shape),
                       act.kernel.data());
    });
  }

  Status DoEmbeddingSum(const Tensor& ids, const Tensor& type_ids, const Tensor& word,
                        const Tensor& pos, const Tensor& type, Tensor& out) override {
    TS_ASSIGN_OR_RETURN(ElemType t, ToElem(out.dtype()));
    const int64_t B = ids.dim(0), S = ids.dim(1), H = out.dim(-1);
    static const char* kNames[3] = {"ts_embedding_sum_f32", "ts_embedding_sum_f16",
                                    "ts_embedding_sum_bf16"};
    LaunchDesc desc;
    desc.kernel = kNames[TypeIndex(t)];
    desc.grid = Dim3{B * S, 1, 1};
    desc.block = Dim3{H >= 256 ? 256 : 128, 1, 1};
    EmbeddingCost(B * S, H, out.dtype()).Into(desc);
    desc.writes[0] = {out.data(), out.bytes()};
    return be_.Launch(desc, [&](gpuStream_t s) {
      LaunchShape shape;
      return GpuStatus(cuda::EmbeddingSum(s, t, ids.data_as<int32_t>(), type_ids.data_as<int32_t>(),
                                          word.data(), pos.data(), type.data(), out.data(), B, S,
                                          H, word.dim(0), type.dim(0), &shape),
                       desc.kernel.data());
    });
  }

  Status DoLayerNorm(const Tensor& x, const Tensor* residual, const Tensor& gamma,
                     const Tensor& beta, float eps, Tensor& out) override {
    TS_ASSIGN_OR_RETURN(ElemType t, ToElem(out.dtype()));
    const int64_t C = x.dim(-1), rows = x.numel() / C;
    static const char* kNames[2][3] = {
        {"ts_layer_norm_f32", "ts_layer_norm_f16", "ts_layer_norm_bf16"},
        {"ts_add_layer_norm_f32", "ts_add_layer_norm_f16", "ts_add_layer_norm_bf16"}};
    LaunchDesc desc;
    desc.kernel = kNames[residual ? 1 : 0][TypeIndex(t)];
    desc.grid = Dim3{rows, 1, 1};
    desc.block = Dim3{C >= 512 ? 256 : 128, 1, 1};
    desc.shared_bytes = 32 * sizeof(float);  // the block sum's scratch
    LayerNormCost(rows, C, residual != nullptr, out.dtype()).Into(desc);
    desc.writes[0] = {out.data(), out.bytes()};
    return be_.Launch(desc, [&](gpuStream_t s) {
      LaunchShape shape;
      return GpuStatus(cuda::LayerNorm(s, t, x.data(), residual ? residual->data() : nullptr,
                                       gamma.data(), beta.data(), eps, out.data(), rows, C, &shape),
                       desc.kernel.data());
    });
  }

  // AttentionMath: the CUDA kernels compute in the activations' dtype (FP32 accumulation).
  Status DoAttention(const Tensor& qkv, const Tensor& mask, int heads, Tensor& out, AttentionMath) override {
    TS_ASSIGN_OR_RETURN(ElemType t, ToElem(out.dtype()));
    const int64_t B = qkv.dim(0), S = qkv.dim(1), H = out.dim(-1), D = H / heads;
    if (D > 256) return Unimplemented("CUDA attention supports head_dim up to 256");
    if (B > 65535 || heads > 65535) {
      return InvalidArgument("CUDA attention takes at most 65535 samples and heads per launch");
    }
    static const char* kNames[3] = {"ts_attention_online_softmax_f32",
                                    "ts_attention_online_softmax_f16",
                                    "ts_attention_online_softmax_bf16"};
    LaunchDesc desc;
    desc.kernel = kNames[TypeIndex(t)];
    desc.grid = Dim3{(S + 3) / 4, heads, B};
    desc.block = Dim3{128, 1, 1};
    AttentionCost(B, S, heads, D, out.dtype()).Into(desc);
    desc.writes[0] = {out.data(), out.bytes()};
    return be_.Launch(desc, [&](gpuStream_t s) {
      LaunchShape shape;
      return GpuStatus(cuda::Attention(s, t, qkv.data(), mask.data_as<int32_t>(), out.data(), B, S,
                                       heads, D, &shape),
                       desc.kernel.data());
    });
  }

  Status DoCopyInto(const Tensor& src, Tensor& dst, size_t dst_byte_offset) override {
    const size_t n = src.bytes();
    auto* d = static_cast<std::byte*>(dst.data()) + dst_byte_offset;
    LaunchDesc desc;
    desc.kernel = "cuda_memcpy_dtod";
    desc.grid = Dim3{1, 1, 1};
    desc.block = Dim3{1, 1, 1};
    CopyCost(n).Into(desc);
    desc.writes[0] = {d, n};
    return be_.Launch(desc, [&](gpuStream_t s) {
      return GpuStatus(gpuMemcpyAsync(d, src.data(), n, gpuMemcpyDeviceToDevice, s), "copy");
    });
  }

 private:
  CudaBackend& be_;
  std::unique_ptr<LtGemm> gemm_;
  Status gemm_status_;
};

}  // namespace

std::unique_ptr<Kernels> CreateCudaKernels(CudaBackend& backend) {
  StatusOr<std::unique_ptr<LtGemm>> gemm = LtGemm::Create(backend);
  Status s = gemm.status();
  return std::make_unique<CudaKernels>(backend, gemm.ok() ? std::move(*gemm) : nullptr, s);
}

}  // namespace tierscope
