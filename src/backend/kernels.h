// Kernels: the op families a backend implements for the BERT encoder. Shapes are
// checked by the caller (the model); each call is one or more kernel launches.
// Activations and weights are F32, F16 or BF16; accumulation is always FP32.
#ifndef TIERSCOPE_BACKEND_KERNELS_H_
#define TIERSCOPE_BACKEND_KERNELS_H_

#include <cstdint>
#include <memory>
#include <string>

#include "core/host_tensor.h"
#include "core/tensor.h"
#include "tierscope/status.h"

namespace tierscope {

enum class Epilogue { kNone, kGelu, kTanh };

// A weight matrix W[N, K] (out_features x in_features, as nn.Linear stores it),
// laid out however the backend's GEMM wants it.
class PackedWeight {
 public:
  virtual ~PackedWeight() = default;
  int64_t n() const { return n_; }
  int64_t k() const { return k_; }
  DType dtype() const { return dtype_; }

 protected:
  PackedWeight(int64_t n, int64_t k, DType dtype) : n_(n), k_(k), dtype_(dtype) {}

 private:
  int64_t n_, k_;
  DType dtype_;
};

// OutOfRange unless src fits in dst at dst_byte_offset (CopyInto's precondition).
inline Status CheckCopyInto(const Tensor& src, const Tensor& dst, size_t dst_byte_offset) {
  const size_t n = src.bytes();
  if (dst_byte_offset > dst.bytes() || n > dst.bytes() - dst_byte_offset) {
    return OutOfRange("CopyInto: " + std::to_string(n) + " bytes at offset " +
                      std::to_string(dst_byte_offset) + " exceed the destination's " +
                      std::to_string(dst.bytes()));
  }
  return OkStatus();
}

class Kernels {
 public:
  virtual ~Kernels() = default;

  // Packs host weight `w` [N, K] (any float dtype) into `dtype` for Linear.
  virtual StatusOr<std::unique_ptr<PackedWeight>> PackWeight(const HostTensor& w,
                                                              DType dtype) = 0;

  // y[m, :] = epilogue(x[m * x_row_stride .. +K] . W^T + bias) for m in [0, rows).
  // x_row_stride is in elements (K for a dense matrix); bias is [N] in y's dtype, or
  // null. y is dense [rows, N].
  virtual Status Linear(const Tensor& x, int64_t rows, int64_t x_row_stride,
                        const PackedWeight& w, const Tensor* bias, Epilogue epilogue,
                        Tensor& y) = 0;

  // out[b, s, :] = word[ids[b,s]] + pos[s] + type[type_ids[b,s]]. ids and type_ids
  // are I32 [B, S] (validated by the caller). Tables are in out's dtype.
  virtual Status EmbeddingSum(const Tensor& ids, const Tensor& type_ids,
                              const Tensor& word, const Tensor& pos, const Tensor& type,
                              Tensor& out) = 0;

  // out = LayerNorm(x + residual) * gamma + beta over the last dim; residual may be
  // null. Statistics in FP32.
  virtual Status LayerNorm(const Tensor& x, const Tensor* residual, const Tensor& gamma,
                           const Tensor& beta, float eps, Tensor& out) = 0;

  // Multi-head self-attention. qkv is [B, S, 3H] with Q, K, V blocks of H each (heads
  // contiguous within a block, as BERT's separate projections concatenated); mask is
  // I32 [B, S] key mask (0 = masked: adds the most negative float to the score);
  // out is [B, S, H] with heads merged.
  virtual Status Attention(const Tensor& qkv, const Tensor& mask, int heads, Tensor& out) = 0;

  // dst[offset .. offset + src.bytes) = src (a device-to-device copy, aten::cat's work).
  virtual Status CopyInto(const Tensor& src, Tensor& dst, size_t dst_byte_offset) = 0;
};

}  // namespace tierscope

#endif  // TIERSCOPE_BACKEND_KERNELS_H_
