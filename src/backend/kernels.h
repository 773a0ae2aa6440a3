// Kernels: the op families of the BERT encoder, and the one front every backend's kernels
// sit behind. The front checks each call's contract — shapes, dtypes, sizes — for all
// backends alike, then calls the backend's implementation (Do*), which fills its launch
// descriptors from the one cost model (op_cost.h). Each call is one or more launches.
// Activations and weights are F32, F16 or BF16; accumulation is always FP32.
#ifndef TIERSCOPE_BACKEND_KERNELS_H_
#define TIERSCOPE_BACKEND_KERNELS_H_

#include <cstdint>
#include <memory>
#include <string>

#include "backend/op_cost.h"
#include "core/host_tensor.h"
#include "core/tensor.h"
#include "tierscope/status.h"

namespace tierscope {

// A weight matrix W[N, K] (out_features x in_features, as nn.Linear stores it),
// laid out however the backend's GEMM wants it.
class PackedWeight {
 public:
  virtual ~PackedWeight() = default;
  int64_t n() const { return n_; }
  int64_t k() const { return k_; }
  DType dtype() const { return dtype_; }
  // Bytes the packed weight holds on the device (padding, scales and sums included).
  virtual int64_t bytes() const = 0;

 protected:
  PackedWeight(int64_t n, int64_t k, DType dtype) : n_(n), k_(k), dtype_(dtype) {}

 private:
  int64_t n_, k_;
  DType dtype_;
};

// Rows of FP32 activations quantized per row for an INT8 Linear: u8 codes with a scale and
// a zero point per row (x ~ scale * (code - zero point)), written by the op that produced
// the rows (quantization in the producing op: LayerNorm, an INT8 Linear feeding another)
// or by QuantizeRows. `codes` is in the backend's layout; NewQuantizedRows makes one.
struct QuantizedRows {
  Tensor codes;
  Tensor params;  // F32 [rows, 2]: scale, zero point
  int64_t rows = 0, k = 0;
};

// The arithmetic of attention over FP32 activations: FP32, or BF16 where the backend has
// BF16 arithmetic (an INT8 run's attention, as OpenVINO runs a quantized model's on such a
// CPU: Q, K, V and the probabilities rounded to BF16, sums in FP32); the inputs and the
// output stay FP32. Other dtypes compute as they always do. Where the backend says
// Int8RunsBf16Rows, kBf16WhereNative also takes BF16 qkv (rounded already) into FP32 out.
enum class AttentionMath { kInputDtype, kBf16WhereNative };

class Kernels {
 public:
  virtual ~Kernels() = default;

  // Packs host weight `w` [N, K] (any float dtype) into `dtype` for Linear; kI8 quantizes
  // it per output channel for an INT8 Linear (a backend without one says so).
  StatusOr<std::unique_ptr<PackedWeight>> PackWeight(const HostTensor& w, DType dtype);

  // y[m, :] = epilogue(x[m * x_row_stride .. +K] . W^T + bias) for m in [0, rows).
  // x_row_stride is in elements (K for a dense matrix); bias is [N] in y's dtype, or
  // null. y is dense [rows, N]. With an INT8 weight x, bias and y are FP32 and x is
  // quantized per row at run time (dynamic quantization); so they are with an F16/BF16
  // weight on a backend without FP16/BF16 arithmetic (the weight is widened).
  Status Linear(const Tensor& x, int64_t rows, int64_t x_row_stride, const PackedWeight& w,
                const Tensor* bias, Epilogue epilogue, Tensor& y);
  // Whether LinearAddLayerNorm and LinearInt8AddLayerNorm are there (else Unimplemented).
  virtual bool FusesAddLayerNorm() const { return false; }
  // A post-LN block's projection, its residual add and LayerNorm in one op: out =
  // LayerNorm(Linear(x) + residual) * gamma + beta, out [rows, N] and the residual in x's
  // dtype (FP32 over an INT8 weight), gamma and beta too; out shares no byte with x or the
  // residual. Bit for bit Linear into rows of out's shape, then LayerNorm over them.
  Status LinearAddLayerNorm(const Tensor& x, int64_t rows, int64_t x_row_stride, const PackedWeight& w,
                            const Tensor* bias, const Tensor& residual, const Tensor& gamma, const Tensor& beta,
                            float eps, Tensor& out);

  // out[b, s, :] = word[ids[b,s]] + pos[s] + type[type_ids[b,s]]. ids and type_ids are
  // I32 [B, S]; the tables [rows, H] are in out's dtype (or F16/BF16 under an FP32 out
  // where Linear widens 16-bit weights), pos with at least S rows. An id
  // outside its table is the kernel's to refuse (CPU) or to write as NaN (GPU): it never
  // reads past a table.
  Status EmbeddingSum(const Tensor& ids, const Tensor& type_ids, const Tensor& word,
                      const Tensor& pos, const Tensor& type, Tensor& out);

  // out = LayerNorm(x + residual) * gamma + beta over the last dim; residual may be
  // null. Statistics in FP32.
  Status LayerNorm(const Tensor& x, const Tensor* residual, const Tensor& gamma,
                   const Tensor& beta, float eps, Tensor& out);

  // Multi-head self-attention. qkv is [B, S, 3H] with Q, K, V blocks of H each (heads
  // contiguous within a block, as BERT's separate projections concatenated); mask is
  // I32 [B, S] key mask (0 = masked: adds the most negative float to the score);
  // out is [B, S, H] with heads merged.
  Status Attention(const Tensor& qkv, const Tensor& mask, int heads, Tensor& out,
                   AttentionMath math = AttentionMath::kInputDtype);

  // dst[offset .. offset + src.bytes) = src (a device-to-device copy, aten::cat's work).
  Status CopyInto(const Tensor& src, Tensor& dst, size_t dst_byte_offset);

  // INT8 activations quantized where they are produced. Whether this backend has the five
  // calls below (else they are Unimplemented, and an INT8 Linear quantizes its own input).
  virtual bool QuantizesInProducer() const { return false; }
  // Whether LinearInt8 also writes BF16 rows (each FP32 output rounded to nearest even,
  // a denormal to zero, as vcvtneps2bf16 does) and Attention (kBf16WhereNative) reads
  // them into FP32 out: an INT8 run's Q, K and V in BF16 where its attention computes in
  // BF16, half the bytes and no rounding inside attention, the same outputs bit for bit.
  virtual bool Int8RunsBf16Rows() const { return false; }
  // Room for `rows` rows of `k` activations as codes.
  StatusOr<QuantizedRows> NewQuantizedRows(int64_t rows, int64_t k);
  // q = x[m * x_row_stride .. +q.k] quantized per row for m < q.rows (FP32 x).
  Status QuantizeRows(const Tensor& x, int64_t x_row_stride, QuantizedRows& q);
  // The INT8 Linear over rows quantized already (w INT8, bias FP32 [N] or null): into FP32
  // (or, where Int8RunsBf16Rows, BF16) y [rows, N] when `y` is given, else each output row quantized into `y_codes` (the next
  // INT8 Linear's input; the FP32 rows are never written). Bit for bit what Linear on the
  // rows the codes came from gives, then QuantizeRows.
  Status LinearInt8(const QuantizedRows& x, const PackedWeight& w, const Tensor* bias, Epilogue epilogue,
                    Tensor* y, QuantizedRows* y_codes);
  // A post-LN block's projection, its residual add and LayerNorm in one op: out =
  // LayerNorm(LinearInt8(x) + residual) * gamma + beta, all FP32 [rows, N], out's rows also
  // quantized into `codes` where given; out shares no byte with the residual. Bit for bit
  // LinearInt8 into FP32 rows, then LayerNorm (LayerNormQuantized) over them.
  Status LinearInt8AddLayerNorm(const QuantizedRows& x, const PackedWeight& w, const Tensor* bias,
                                const Tensor& residual, const Tensor& gamma, const Tensor& beta, float eps,
                                Tensor& out, QuantizedRows* codes);
  // LayerNorm (FP32) whose output rows are also quantized into `codes`.
  Status LayerNormQuantized(const Tensor& x, const Tensor* residual, const Tensor& gamma, const Tensor& beta,
                            float eps, Tensor& out, QuantizedRows& codes);
  // Attention (AttentionPacked where `offsets` is given) into FP32 `out` whose rows are
  // also quantized into `codes`, each once every head has written it: the bytes
  // QuantizeRows writes from `out`.
  Status AttentionQuantized(const Tensor& qkv, const Tensor& mask, const Tensor* offsets, int heads, Tensor& out,
                            AttentionMath math, QuantizedRows& codes);

  // Token rows a forward runs at a time, each block through every layer, for activations
  // of at most `bytes_per_row` bytes a row and `weight_bytes` of weights, which each block
  // reads again (0: the whole batch at once). A CPU's caches then hold a block's
  // activations from one op to the next; a GPU wants the whole batch.
  virtual int64_t RowBlockRows(int64_t bytes_per_row, int64_t weight_bytes) const { return 0; }
  // The most bytes a Linear (or LinearAddLayerNorm) over `rows` rows of w may still add to
  // the live bytes, by growing a workspace the backend keeps from then on (the CPU's 16-bit
  // panels widened once a launch), or 0.
  virtual int64_t LinearWorkspaceGrowth(int64_t rows, const PackedWeight& w) const { return 0; }

  // Packed sequences (a batch without padding): B sequences back to back in T tokens.
  // Whether this backend has the two packed kernels below (else they are Unimplemented).
  virtual bool SupportsPackedSequences() const { return false; }
  // Attention within each sequence: qkv [1, T, 3H], mask I32 [1, T], out [1, T, H];
  // offsets I32 [B + 1] in host-readable memory, where each sequence starts:
  // 0 = offsets[0] < offsets[1] < ... < offsets[B] = T (the kernel checks them).
  Status AttentionPacked(const Tensor& qkv, const Tensor& mask, const Tensor& offsets, int heads, Tensor& out,
                         AttentionMath math = AttentionMath::kInputDtype);
  // EmbeddingSum over ids [1, T] with each token's position id given: positions I32
  // [1, T] (its index within its sequence; the kernel checks it against pos's rows).
  Status EmbeddingSumAt(const Tensor& ids, const Tensor& type_ids, const Tensor& positions, const Tensor& word,
                        const Tensor& pos, const Tensor& type, Tensor& out);

 protected:
  // Whether DoLinear takes FP32 activations over `weights` in F16/BF16 (a backend without
  // that arithmetic: DeviceProps::HalfArithmetic false).
  virtual bool WidensHalfWeights(DType weights) const { return false; }
  // Whether float weights of `weights` go with `activations` here: the same dtype, or
  // F16/BF16 weights under FP32 activations where the backend widens them.
  bool TakesFloatWeights(DType activations, DType weights) const;
  // Attention's and AttentionPacked's contracts (shapes, dtypes, heads); `op` names the
  // call in the error.
  Status CheckAttention(const std::string& op, const Tensor& qkv, const Tensor& mask, int heads, const Tensor& out,
                        AttentionMath math) const;
  Status CheckAttentionPacked(const std::string& op, const Tensor& qkv, const Tensor& mask, const Tensor& offsets,
                              int heads, const Tensor& out, AttentionMath math) const;
  // Linear's contract (one float dtype, the weight's, the sizes); `op` names the call.
  Status CheckLinear(const std::string& op, const Tensor& x, int64_t rows, int64_t x_row_stride,
                     const PackedWeight& w, const Tensor* bias, const Tensor& y) const;
  // The residual add and LayerNorm of a Linear of weight w into `out`: the residual rows of
  // w.n(), as out, gamma and beta LayerNorm's (CheckLayerNorm), out apart from the residual.
  static Status CheckAddLayerNorm(const std::string& op, const PackedWeight& w, const Tensor& residual,
                                  const Tensor& gamma, const Tensor& beta, float eps, const Tensor& out);
  // LayerNorm's contract (shapes, one float dtype, eps > 0); `op` names the call.
  static Status CheckLayerNorm(const Tensor& x, const Tensor* residual, const Tensor& gamma, const Tensor& beta,
                               float eps, const Tensor& out, const std::string& op = "LayerNorm");
  // The backend's implementations, called only with arguments the front has checked.
  virtual StatusOr<std::unique_ptr<PackedWeight>> DoPackWeight(const HostTensor& w, DType dtype) = 0;
  virtual Status DoLinear(const Tensor& x, int64_t rows, int64_t x_row_stride, const PackedWeight& w,
                          const Tensor* bias, Epilogue epilogue, Tensor& y) = 0;
  virtual Status DoEmbeddingSum(const Tensor& ids, const Tensor& type_ids, const Tensor& word,
                                const Tensor& pos, const Tensor& type, Tensor& out) = 0;
  virtual Status DoLayerNorm(const Tensor& x, const Tensor* residual, const Tensor& gamma,
                             const Tensor& beta, float eps, Tensor& out) = 0;
  virtual Status DoAttention(const Tensor& qkv, const Tensor& mask, int heads, Tensor& out, AttentionMath math) = 0;
  virtual Status DoCopyInto(const Tensor& src, Tensor& dst, size_t dst_byte_offset) = 0;
  virtual StatusOr<QuantizedRows> DoNewQuantizedRows(int64_t, int64_t) { return NoProducerQuantization(); }
  virtual Status DoQuantizeRows(const Tensor&, int64_t, QuantizedRows&) { return NoProducerQuantization(); }
  virtual Status DoLinearInt8(const QuantizedRows&, const PackedWeight&, const Tensor*, Epilogue, Tensor*,
                              QuantizedRows*) {
    return NoProducerQuantization();
  }
  virtual Status DoLayerNormQuantized(const Tensor&, const Tensor*, const Tensor&, const Tensor&, float, Tensor&,
                                      QuantizedRows&) {
    return NoProducerQuantization();
  }
  virtual Status DoLinearAddLayerNorm(const Tensor&, int64_t, int64_t, const PackedWeight&, const Tensor*,
                                      const Tensor&, const Tensor&, const Tensor&, float, Tensor&) {
    return Unimplemented("LinearAddLayerNorm: not on this backend");
  }
  virtual Status DoLinearInt8AddLayerNorm(const QuantizedRows&, const PackedWeight&, const Tensor*, const Tensor&,
                                          const Tensor&, const Tensor&, float, Tensor&, QuantizedRows*) {
    return NoProducerQuantization();
  }
  virtual Status DoAttentionQuantized(const Tensor&, const Tensor&, const Tensor*, int, Tensor&, AttentionMath,
                                      QuantizedRows&) {
    return NoProducerQuantization();
  }
  static Status NoProducerQuantization() {
    return Unimplemented("INT8 activations quantized in their producing op: not on this backend");
  }
  virtual Status DoAttentionPacked(const Tensor&, const Tensor&, const Tensor&, int, Tensor&, AttentionMath) {
    return Unimplemented("Attention over packed sequences: not on this backend");
  }
  virtual Status DoEmbeddingSumAt(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                  const Tensor&, Tensor&) {
    return Unimplemented("EmbeddingSum with position ids: not on this backend");
  }
};

}  // namespace tierscope

#endif  // TIERSCOPE_BACKEND_KERNELS_H_
