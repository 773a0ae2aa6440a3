// The kernel front: every op's contract, checked once for every backend.
#include "backend/kernels.h"

#include <string>

namespace tierscope {
namespace {

bool IsFloatType(DType t) { return t == DType::kF32 || t == DType::kF16 || t == DType::kBF16; }

// The word, position and token-type tables: [rows, H] each, in the words' dtype.
bool EmbeddingTablesFit(const Tensor& word, const Tensor& pos, const Tensor& type, int64_t H) {
  return word.shape().size() == 2 && pos.shape().size() == 2 && type.shape().size() == 2 && word.dim(1) == H &&
         pos.dim(1) == H && type.dim(1) == H && pos.dtype() == word.dtype() && type.dtype() == word.dtype();
}

// q as rows x k activations quantized: params F32 [rows, 2], codes U8 of at least a byte
// each (their layout is the backend's to check).
Status CheckQuantizedRows(const QuantizedRows& q, const std::string& op, const char* what) {
  if (q.rows <= 0 || q.k <= 0 || q.params.dtype() != DType::kF32 || q.params.numel() != 2 * q.rows ||
      q.codes.dtype() != DType::kU8 || q.codes.numel() < q.rows * q.k) {
    return InvalidArgument(op + ": " + what + " is not " + std::to_string(q.rows) + " quantized rows of " +
                           std::to_string(q.k) + " (codes U8 " + ShapeString(q.codes.shape()) + ", params F32 " +
                           ShapeString(q.params.shape()) + ")");
  }
  return OkStatus();
}

// An INT8 Linear's weight and bias against its input rows.
Status CheckInt8Operands(const std::string& op, const QuantizedRows& x, const PackedWeight& w, const Tensor* bias) {
  TS_RETURN_IF_ERROR(CheckQuantizedRows(x, op, "the input"));
  if (w.dtype() != DType::kI8 || w.k() != x.k) {
    return InvalidArgument(op + ": a " + std::string(DTypeName(w.dtype())) + " weight [" + std::to_string(w.n()) +
                           ", " + std::to_string(w.k()) + "] over rows of " + std::to_string(x.k) +
                           " codes (it takes an INT8 weight of as many inputs)");
  }
  if (bias && (bias->dtype() != DType::kF32 || bias->numel() != w.n())) {
    return InvalidArgument(op + ": the bias is not FP32 [" + std::to_string(w.n()) + "]");
  }
  return OkStatus();
}

// An INT8 Linear's output rows quantized: as many rows as its input, as wide as its
// weight, and rows of their own.
Status CheckInt8CodesOut(const std::string& op, const QuantizedRows& x, const PackedWeight& w,
                         const QuantizedRows& y_codes) {
  TS_RETURN_IF_ERROR(CheckQuantizedRows(y_codes, op, "the output"));
  if (y_codes.codes.data() == x.codes.data() || y_codes.params.data() == x.params.data()) {
    return InvalidArgument(op + ": the output rows are the input's; give the output rows of its own");
  }
  if (y_codes.rows != x.rows || y_codes.k != w.n()) {
    return InvalidArgument(op + ": output rows of " + std::to_string(y_codes.rows) + " x " +
                           std::to_string(y_codes.k) + " codes for " + std::to_string(x.rows) + " x " +
                           std::to_string(w.n()) + " outputs");
  }
  return OkStatus();
}

// Whether two tensors' bytes overlap.
bool Overlap(const Tensor& a, const Tensor& b) {
  const auto* pa = static_cast<const std::byte*>(a.data());
  const auto* pb = static_cast<const std::byte*>(b.data());
  return pa < pb + b.bytes() && pb < pa + a.bytes();
}

}  // namespace

bool Kernels::TakesFloatWeights(DType activations, DType weights) const {
  return weights == activations || (activations == DType::kF32 && IsFloatType(weights) && WidensHalfWeights(weights));
}

StatusOr<std::unique_ptr<PackedWeight>> Kernels::PackWeight(const HostTensor& w, DType dtype) {
  if (w.shape.size() != 2 || w.shape[0] < 1 || w.shape[1] < 1) {
    return InvalidArgument("PackWeight: expected a non-empty 2-D weight, got shape " + ShapeString(w.shape));
  }
  if (!IsFloatType(w.dtype) || !(IsFloatType(dtype) || dtype == DType::kI8)) {
    return InvalidArgument("PackWeight: unsupported dtype " + std::string(DTypeName(w.dtype)) + " -> " +
                           std::string(DTypeName(dtype)));
  }
  if (w.bytes != static_cast<size_t>(w.numel()) * DTypeSize(w.dtype)) {
    return InvalidArgument("PackWeight: " + std::to_string(w.bytes) + " bytes for shape " + ShapeString(w.shape));
  }
  return DoPackWeight(w, dtype);
}

Status Kernels::CheckLinear(const std::string& op, const Tensor& x, int64_t rows, int64_t x_row_stride,
                            const PackedWeight& w, const Tensor* bias, const Tensor& y) const {
  const int64_t n = w.n(), k = w.k();
  const DType t = x.dtype();
  if (!IsFloatType(t) || y.dtype() != t || (bias && bias->dtype() != t)) {
    return InvalidArgument(op + ": operands must share one float dtype");
  }
  // INT8 weights take FP32 activations; so do F16/BF16 ones on a backend without FP16/BF16
  // arithmetic (DeviceProps::HalfArithmetic), which widens them in registers.
  if (!TakesFloatWeights(t, w.dtype()) && !(t == DType::kF32 && w.dtype() == DType::kI8)) {
    return InvalidArgument(op + ": a " + std::string(DTypeName(w.dtype())) + " weight with " +
                           std::string(DTypeName(t)) + " activations (INT8 weights take FP32 activations" +
                           (WidensHalfWeights(w.dtype()) ? ", as do " + std::string(DTypeName(w.dtype())) + " ones here)" : ")"));
  }
  if (rows <= 0 || x_row_stride < k || (rows - 1) * x_row_stride + k > x.numel()) {
    return InvalidArgument(op + ": input " + ShapeString(x.shape()) + " too small for " + std::to_string(rows) +
                           " rows of " + std::to_string(k));
  }
  if (y.numel() != rows * n) {
    return InvalidArgument(op + ": output " + ShapeString(y.shape()) + " is not [" + std::to_string(rows) + ", " +
                           std::to_string(n) + "]");
  }
  if (bias && bias->numel() != n) return InvalidArgument(op + ": bias size mismatch");
  return OkStatus();
}

Status Kernels::Linear(const Tensor& x, int64_t rows, int64_t x_row_stride, const PackedWeight& w,
                       const Tensor* bias, Epilogue epilogue, Tensor& y) {
  TS_RETURN_IF_ERROR(CheckLinear("Linear", x, rows, x_row_stride, w, bias, y));
  return DoLinear(x, rows, x_row_stride, w, bias, epilogue, y);
}

Status Kernels::CheckAddLayerNorm(const std::string& op, const PackedWeight& w, const Tensor& residual,
                                  const Tensor& gamma, const Tensor& beta, float eps, const Tensor& out) {
  if (residual.shape().empty() || residual.dim(-1) != w.n()) {
    return InvalidArgument(op + ": residual " + ShapeString(residual.shape()) + " is not rows of " +
                           std::to_string(w.n()));
  }
  // The residual (LayerNorm's x), gamma and beta against the output.
  TS_RETURN_IF_ERROR(CheckLayerNorm(residual, &residual, gamma, beta, eps, out, op));
  // The output is written before the residual is read: they must not share bytes.
  if (Overlap(out, residual)) {
    return InvalidArgument(op + ": the output overlaps the residual; give an output of its own");
  }
  return OkStatus();
}

Status Kernels::LinearAddLayerNorm(const Tensor& x, int64_t rows, int64_t x_row_stride, const PackedWeight& w,
                                   const Tensor* bias, const Tensor& residual, const Tensor& gamma,
                                   const Tensor& beta, float eps, Tensor& out) {
  const std::string op = "LinearAddLayerNorm";
  if (!FusesAddLayerNorm()) {
    return Unimplemented(op + ": the residual add and LayerNorm in a Linear's epilogue: not on this backend");
  }
  TS_RETURN_IF_ERROR(CheckLinear(op, x, rows, x_row_stride, w, bias, out));
  if (out.shape().empty() || out.dim(-1) != w.n()) {
    return InvalidArgument(op + ": output " + ShapeString(out.shape()) + " is not rows of " + std::to_string(w.n()));
  }
  TS_RETURN_IF_ERROR(CheckAddLayerNorm(op, w, residual, gamma, beta, eps, out));
  if (Overlap(out, x)) return InvalidArgument(op + ": the output overlaps the input; give an output of its own");
  return DoLinearAddLayerNorm(x, rows, x_row_stride, w, bias, residual, gamma, beta, eps, out);
}

StatusOr<QuantizedRows> Kernels::NewQuantizedRows(int64_t rows, int64_t k) {
  if (!QuantizesInProducer()) return NoProducerQuantization();
  if (rows <= 0 || k <= 0) {
    return InvalidArgument("NewQuantizedRows: " + std::to_string(rows) + " rows of " + std::to_string(k) +
                           " activations");
  }
  return DoNewQuantizedRows(rows, k);
}

Status Kernels::QuantizeRows(const Tensor& x, int64_t x_row_stride, QuantizedRows& q) {
  if (!QuantizesInProducer()) return NoProducerQuantization();
  TS_RETURN_IF_ERROR(CheckQuantizedRows(q, "QuantizeRows", "the output"));
  if (x.dtype() != DType::kF32 || x_row_stride < q.k || (q.rows - 1) * x_row_stride + q.k > x.numel()) {
    return InvalidArgument("QuantizeRows: input " + std::string(DTypeName(x.dtype())) + " " +
                           ShapeString(x.shape()) + " is not " + std::to_string(q.rows) + " FP32 rows of " +
                           std::to_string(q.k) + " at stride " + std::to_string(x_row_stride));
  }
  return DoQuantizeRows(x, x_row_stride, q);
}

Status Kernels::LinearInt8(const QuantizedRows& x, const PackedWeight& w, const Tensor* bias, Epilogue epilogue,
                           Tensor* y, QuantizedRows* y_codes) {
  if (!QuantizesInProducer()) return NoProducerQuantization();
  TS_RETURN_IF_ERROR(CheckInt8Operands("LinearInt8", x, w, bias));
  if ((y == nullptr) == (y_codes == nullptr)) {
    return InvalidArgument("LinearInt8: give one output, FP32 rows or quantized rows");
  }
  if (y != nullptr && ((y->dtype() != DType::kF32 && (y->dtype() != DType::kBF16 || !Int8RunsBf16Rows())) ||
                       y->numel() != x.rows * w.n())) {
    return InvalidArgument("LinearInt8: output " + std::string(DTypeName(y->dtype())) + " " +
                           ShapeString(y->shape()) + " is not [" + std::to_string(x.rows) + ", " +
                           std::to_string(w.n()) + "] FP32" + (Int8RunsBf16Rows() ? " or BF16" : ""));
  }
  if (y_codes != nullptr) TS_RETURN_IF_ERROR(CheckInt8CodesOut("LinearInt8", x, w, *y_codes));
  return DoLinearInt8(x, w, bias, epilogue, y, y_codes);
}

Status Kernels::LinearInt8AddLayerNorm(const QuantizedRows& x, const PackedWeight& w, const Tensor* bias,
                                       const Tensor& residual, const Tensor& gamma, const Tensor& beta, float eps,
                                       Tensor& out, QuantizedRows* codes) {
  const std::string op = "LinearInt8AddLayerNorm";
  if (!QuantizesInProducer() || !FusesAddLayerNorm()) {
    return Unimplemented(op + ": the residual add and LayerNorm in an INT8 Linear's epilogue: not on this backend");
  }
  TS_RETURN_IF_ERROR(CheckInt8Operands(op, x, w, bias));
  if (out.dtype() != DType::kF32 || out.shape().empty() || out.dim(-1) != w.n() || out.numel() != x.rows * w.n()) {
    return InvalidArgument(op + ": output " + std::string(DTypeName(out.dtype())) + " " + ShapeString(out.shape()) +
                           " is not FP32 rows [" + std::to_string(x.rows) + ", " + std::to_string(w.n()) + "]");
  }
  TS_RETURN_IF_ERROR(CheckAddLayerNorm(op, w, residual, gamma, beta, eps, out));
  if (codes != nullptr) TS_RETURN_IF_ERROR(CheckInt8CodesOut(op, x, w, *codes));
  return DoLinearInt8AddLayerNorm(x, w, bias, residual, gamma, beta, eps, out, codes);
}

Status Kernels::LayerNormQuantized(const Tensor& x, const Tensor* residual, const Tensor& gamma, const Tensor& beta,
                                   float eps, Tensor& out, QuantizedRows& codes) {
  if (!QuantizesInProducer()) return NoProducerQuantization();
  TS_RETURN_IF_ERROR(CheckLayerNorm(x, residual, gamma, beta, eps, out));
  TS_RETURN_IF_ERROR(CheckQuantizedRows(codes, "LayerNormQuantized", "the codes"));
  const int64_t C = x.dim(-1);
  if (x.dtype() != DType::kF32 || codes.k != C || codes.rows != x.numel() / C) {
    return InvalidArgument("LayerNormQuantized: " + std::string(DTypeName(x.dtype())) + " rows " +
                           ShapeString(x.shape()) + " into " + std::to_string(codes.rows) + " quantized rows of " +
                           std::to_string(codes.k) + " (FP32 rows, as many, as wide)");
  }
  return DoLayerNormQuantized(x, residual, gamma, beta, eps, out, codes);
}

Status Kernels::EmbeddingSum(const Tensor& ids, const Tensor& type_ids, const Tensor& word,
                             const Tensor& pos, const Tensor& type, Tensor& out) {
  if (ids.shape().size() != 2 || ids.dtype() != DType::kI32 || type_ids.dtype() != DType::kI32 ||
      type_ids.numel() != ids.numel() || out.shape().size() != 3 || word.shape().size() != 2 ||
      pos.shape().size() != 2 || type.shape().size() != 2) {
    return InvalidArgument("EmbeddingSum: ids must be I32 [B, S], the tables [rows, H] and out [B, S, H]");
  }
  const int64_t B = ids.dim(0), S = ids.dim(1), H = out.dim(2);
  const DType t = out.dtype();
  if (!IsFloatType(t) || out.dim(0) != B || out.dim(1) != S || !EmbeddingTablesFit(word, pos, type, H) ||
      pos.dim(0) < S || !TakesFloatWeights(t, word.dtype())) {
    return InvalidArgument("EmbeddingSum: inconsistent shapes ids " + ShapeString(ids.shape()) + ", word " +
                           ShapeString(word.shape()) + ", pos " + ShapeString(pos.shape()) + ", out " +
                           ShapeString(out.shape()));
  }
  return DoEmbeddingSum(ids, type_ids, word, pos, type, out);
}

Status Kernels::LayerNorm(const Tensor& x, const Tensor* residual, const Tensor& gamma,
                          const Tensor& beta, float eps, Tensor& out) {
  TS_RETURN_IF_ERROR(CheckLayerNorm(x, residual, gamma, beta, eps, out));
  return DoLayerNorm(x, residual, gamma, beta, eps, out);
}

Status Kernels::CheckLayerNorm(const Tensor& x, const Tensor* residual, const Tensor& gamma, const Tensor& beta,
                               float eps, const Tensor& out, const std::string& op) {
  const int64_t C = x.shape().empty() ? 0 : x.dim(-1);
  if (C == 0 || gamma.numel() != C || beta.numel() != C || out.numel() != x.numel() ||
      (residual && residual->numel() != x.numel())) {
    return InvalidArgument(op + ": inconsistent shapes x " + ShapeString(x.shape()) + ", gamma " +
                           ShapeString(gamma.shape()) + ", out " + ShapeString(out.shape()));
  }
  const DType t = x.dtype();
  if (!IsFloatType(t) || out.dtype() != t || gamma.dtype() != t || beta.dtype() != t ||
      (residual && residual->dtype() != t)) {
    return InvalidArgument(op + ": operands must share one float dtype");
  }
  if (!(eps > 0)) return InvalidArgument(op + ": eps must be > 0");
  return OkStatus();
}

// Attention's dtypes: qkv's and out's alike, or BF16 rows into FP32 where Int8RunsBf16Rows.
static bool AttentionDtypesAgree(DType qkv, DType out, AttentionMath math, bool bf16_rows) {
  if (qkv == out) return true;
  return bf16_rows && qkv == DType::kBF16 && out == DType::kF32 && math == AttentionMath::kBf16WhereNative;
}

Status Kernels::Attention(const Tensor& qkv, const Tensor& mask, int heads, Tensor& out, AttentionMath math) {
  TS_RETURN_IF_ERROR(CheckAttention("Attention", qkv, mask, heads, out, math));
  return DoAttention(qkv, mask, heads, out, math);
}

Status Kernels::CheckAttention(const std::string& op, const Tensor& qkv, const Tensor& mask, int heads,
                               const Tensor& out, AttentionMath math) const {
  if (qkv.shape().size() != 3 || out.shape().size() != 3) {
    return InvalidArgument(op + ": qkv and out must be [B, S, *]");
  }
  const int64_t B = qkv.dim(0), S = qkv.dim(1), H = out.dim(2);
  if (heads <= 0 || H % heads != 0 || qkv.dim(2) != 3 * H || out.dim(0) != B || out.dim(1) != S ||
      mask.dtype() != DType::kI32 || mask.numel() != B * S ||
      !AttentionDtypesAgree(qkv.dtype(), out.dtype(), math, Int8RunsBf16Rows()) || !IsFloatType(qkv.dtype())) {
    return InvalidArgument(op + ": inconsistent shapes qkv " + ShapeString(qkv.shape()) + ", out " +
                           ShapeString(out.shape()) + ", mask " + ShapeString(mask.shape()) + ", heads " +
                           std::to_string(heads));
  }
  return OkStatus();
}

Status Kernels::AttentionPacked(const Tensor& qkv, const Tensor& mask, const Tensor& offsets, int heads,
                                Tensor& out, AttentionMath math) {
  TS_RETURN_IF_ERROR(CheckAttentionPacked("AttentionPacked", qkv, mask, offsets, heads, out, math));
  return DoAttentionPacked(qkv, mask, offsets, heads, out, math);
}

Status Kernels::CheckAttentionPacked(const std::string& op, const Tensor& qkv, const Tensor& mask,
                                     const Tensor& offsets, int heads, const Tensor& out, AttentionMath math) const {
  if (qkv.shape().size() != 3 || out.shape().size() != 3 || qkv.dim(0) != 1 || out.dim(0) != 1) {
    return InvalidArgument(op + ": qkv and out must be [1, T, *]");
  }
  const int64_t T = qkv.dim(1), H = out.dim(2);
  if (heads <= 0 || H % heads != 0 || qkv.dim(2) != 3 * H || out.dim(1) != T || mask.dtype() != DType::kI32 ||
      mask.numel() != T || offsets.dtype() != DType::kI32 || offsets.numel() < 2 ||
      !AttentionDtypesAgree(qkv.dtype(), out.dtype(), math, Int8RunsBf16Rows()) || !IsFloatType(qkv.dtype())) {
    return InvalidArgument(op + ": inconsistent shapes qkv " + ShapeString(qkv.shape()) + ", out " +
                           ShapeString(out.shape()) + ", mask " + ShapeString(mask.shape()) + ", offsets " +
                           ShapeString(offsets.shape()) + ", heads " + std::to_string(heads));
  }
  return OkStatus();
}

Status Kernels::AttentionQuantized(const Tensor& qkv, const Tensor& mask, const Tensor* offsets, int heads,
                                   Tensor& out, AttentionMath math, QuantizedRows& codes) {
  if (!QuantizesInProducer()) return NoProducerQuantization();
  TS_RETURN_IF_ERROR(offsets != nullptr
                         ? CheckAttentionPacked("AttentionQuantized", qkv, mask, *offsets, heads, out, math)
                         : CheckAttention("AttentionQuantized", qkv, mask, heads, out, math));
  TS_RETURN_IF_ERROR(CheckQuantizedRows(codes, "AttentionQuantized", "the codes"));
  const int64_t H = out.dim(2);
  if (out.dtype() != DType::kF32 || codes.k != H || codes.rows != out.numel() / H) {
    return InvalidArgument("AttentionQuantized: " + std::string(DTypeName(out.dtype())) + " output " +
                           ShapeString(out.shape()) + " into " + std::to_string(codes.rows) + " quantized rows of " +
                           std::to_string(codes.k) + " (FP32 rows, as many, as wide)");
  }
  return DoAttentionQuantized(qkv, mask, offsets, heads, out, math, codes);
}

Status Kernels::EmbeddingSumAt(const Tensor& ids, const Tensor& type_ids, const Tensor& positions,
                               const Tensor& word, const Tensor& pos, const Tensor& type, Tensor& out) {
  if (positions.dtype() != DType::kI32 || positions.numel() != ids.numel() || ids.shape().size() != 2 ||
      ids.dim(0) != 1) {
    return InvalidArgument("EmbeddingSumAt: ids must be I32 [1, T] and positions I32 [1, T], got ids " +
                           ShapeString(ids.shape()) + ", positions " + ShapeString(positions.shape()));
  }
  if (ids.dtype() != DType::kI32 || type_ids.dtype() != DType::kI32 || type_ids.numel() != ids.numel() ||
      out.shape().size() != 3 || out.dim(0) != 1 || out.dim(1) != ids.dim(1) ||
      !EmbeddingTablesFit(word, pos, type, out.dim(2)) || !TakesFloatWeights(out.dtype(), word.dtype())) {
    return InvalidArgument("EmbeddingSumAt: inconsistent shapes ids " + ShapeString(ids.shape()) + ", word " +
                           ShapeString(word.shape()) + ", out " + ShapeString(out.shape()));
  }
  return DoEmbeddingSumAt(ids, type_ids, positions, word, pos, type, out);
}

Status Kernels::CopyInto(const Tensor& src, Tensor& dst, size_t dst_byte_offset) {
  const size_t n = src.bytes();
  if (dst_byte_offset > dst.bytes() || n > dst.bytes() - dst_byte_offset) {
    return OutOfRange("CopyInto: " + std::to_string(n) + " bytes at offset " + std::to_string(dst_byte_offset) +
                      " exceed the destination's " + std::to_string(dst.bytes()));
  }
  if (n == 0) return OkStatus();
  return DoCopyInto(src, dst, dst_byte_offset);
}

}  // namespace tierscope
