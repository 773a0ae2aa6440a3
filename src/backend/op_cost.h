// The cost model of every op: FLOPs and bytes, one definition for every backend, so that
// speed-of-light figures from the CPU and a GPU measure the same work. An op split into
// several launches on one backend (a GEMM, then its activation) sums to the same FLOPs as
// the fused launch on another; its bytes do not (the split launch really moves the
// activation's values once more), and each launch counts what it moves.
#ifndef TIERSCOPE_BACKEND_OP_COST_H_
#define TIERSCOPE_BACKEND_OP_COST_H_

#include <cstdint>

#include "backend/launch.h"
#include "tierscope/dtype.h"

namespace tierscope {

enum class Epilogue { kNone, kGelu, kTanh };

struct OpCost {
  double flops = 0, bytes_read = 0, bytes_written = 0;
  void Into(LaunchDesc& d) const {
    d.flops = flops;
    d.bytes_read = bytes_read;
    d.bytes_written = bytes_written;
  }
};

inline double Es(DType t) { return static_cast<double>(DTypeSize(t)); }

// y[rows, n] = x[rows, k] . W[n, k]^T (+ bias): 2 FLOPs per multiply-add, the bias add
// counted in the GEMM; x, W, bias read once, y written once.
// `w`: the weight's dtype where it differs from the activations' (16-bit weights under
// FP32 activations, widened to FP32 by the kernels: the widened copy, where a CPU launch
// keeps one, is not counted, as no kernel's scratch is).
inline OpCost GemmCost(int64_t rows, int64_t n, int64_t k, bool bias, DType t, DType w) {
  const double r = static_cast<double>(rows), nn = static_cast<double>(n), kk = static_cast<double>(k);
  return {2.0 * r * nn * kk + (bias ? r * nn : 0.0), Es(t) * (r * kk + (bias ? nn : 0.0)) + Es(w) * nn * kk,
          Es(t) * r * nn};
}
inline OpCost GemmCost(int64_t rows, int64_t n, int64_t k, bool bias, DType t) {
  return GemmCost(rows, n, k, bias, t, t);
}

// The activation after a GEMM over `count` values: exact-erf GELU 8 FLOPs a value, tanh
// 4. No bytes of its own when fused into the GEMM's epilogue; read and written once when
// it is a launch of its own.
inline double EpilogueFlops(Epilogue e, int64_t count) {
  return e == Epilogue::kGelu ? 8.0 * static_cast<double>(count)
         : e == Epilogue::kTanh ? 4.0 * static_cast<double>(count)
                                : 0.0;
}
inline OpCost ActivationCost(Epilogue e, int64_t count, DType t) {
  return {EpilogueFlops(e, count), Es(t) * static_cast<double>(count), Es(t) * static_cast<double>(count)};
}

// Linear with its epilogue fused: the GEMM plus the activation's FLOPs.
inline OpCost LinearCost(int64_t rows, int64_t n, int64_t k, bool bias, Epilogue e, DType t, DType w) {
  OpCost c = GemmCost(rows, n, k, bias, t, w);
  c.flops += EpilogueFlops(e, rows * n);
  return c;
}
inline OpCost LinearCost(int64_t rows, int64_t n, int64_t k, bool bias, Epilogue e, DType t) {
  return LinearCost(rows, n, k, bias, e, t, t);
}

// INT8 Linear (dynamic quantization): x[rows, k] as u8 codes with an FP32 scale and zero
// point a row, W as int8 with an FP32 scale and an int32 column sum a channel, y FP32.
// The multiply-adds count 2 operations each, as FLOPs do; the dequantization 3 a value.
inline OpCost QuantizedLinearCost(int64_t rows, int64_t n, int64_t k, bool bias, Epilogue e) {
  const double r = static_cast<double>(rows), nn = static_cast<double>(n), kk = static_cast<double>(k);
  return {2.0 * r * nn * kk + 3.0 * r * nn + (bias ? r * nn : 0.0) + EpilogueFlops(e, rows * n),
          r * kk + nn * kk + 8.0 * r + 8.0 * nn + (bias ? 4.0 * nn : 0.0), 4.0 * r * nn};
}

// Per-row quantization of FP32 x[rows, k] to u8 codes padded to kp: the range (2
// comparisons a value), then a multiply, a round and a clamp — 5 operations a value.
inline OpCost QuantizeRowsCost(int64_t rows, int64_t k, int64_t kp) {
  const double r = static_cast<double>(rows);
  return {5.0 * r * static_cast<double>(k), 4.0 * r * static_cast<double>(k), r * static_cast<double>(kp) + 8.0 * r};
}

// An op whose FP32 output rows [rows, n] are quantized where they are produced (u8 codes
// padded to np bytes a row, a scale and a zero point each): QuantizeRowsCost's operations
// added, and its codes written instead of the FP32 rows (`keep_fp32`: besides them); the
// FP32 values are not read back from memory.
inline OpCost WithQuantizedOutput(OpCost c, int64_t rows, int64_t n, int64_t np, bool keep_fp32) {
  const OpCost q = QuantizeRowsCost(rows, n, np);
  c.flops += q.flops;
  c.bytes_written = (keep_fp32 ? c.bytes_written : 0.0) + q.bytes_written;
  return c;
}

// Self-attention over [B, S] with `heads` heads of `head_dim`: QK^T and PV for every
// (query, key) pair of the padded batch — 4 FLOPs per pair and head dimension — whatever
// a kernel skips for masked keys. qkv and the I32 mask read once, the output written once.
inline OpCost AttentionCost(int64_t batch, int64_t seq, int64_t heads, int64_t head_dim, DType t) {
  const double b = static_cast<double>(batch), s = static_cast<double>(seq);
  const double h = static_cast<double>(heads * head_dim);
  return {4.0 * b * s * s * h, Es(t) * b * s * 3.0 * h + 4.0 * b * s, Es(t) * b * s * h};
}

// LayerNorm (optionally of x + residual) over `rows` rows of `cols`: 8 FLOPs a value.
inline OpCost LayerNormCost(int64_t rows, int64_t cols, bool residual, DType t) {
  const double n = static_cast<double>(rows) * static_cast<double>(cols);
  return {8.0 * n, Es(t) * (n * (residual ? 2.0 : 1.0) + 2.0 * static_cast<double>(cols)), Es(t) * n};
}

// An op whose output rows [rows, n] (in t) then go through LayerNorm(y + residual) in the
// same op (a Linear with the residual add and LayerNorm in its epilogue): LayerNormCost's
// operations added, the residual and gamma and beta read; y itself is never read back from
// memory, and the normalised rows are written in its place.
inline OpCost WithAddLayerNorm(OpCost c, int64_t rows, int64_t n, DType t) {
  const OpCost ln = LayerNormCost(rows, n, /*residual=*/true, t);
  c.flops += ln.flops;
  c.bytes_read += ln.bytes_read - Es(t) * static_cast<double>(rows) * static_cast<double>(n);  // not y
  return c;
}

// Embedding sum of `tokens` tokens of `hidden`: two adds a value; three table rows and the
// I32 ids and token types read.
// `table`: the tables' dtype where it differs from the output's (16-bit tables, FP32 out).
inline OpCost EmbeddingCost(int64_t tokens, int64_t hidden, DType t, DType table) {
  const double n = static_cast<double>(tokens) * static_cast<double>(hidden);
  return {2.0 * n, 3.0 * Es(table) * n + 8.0 * static_cast<double>(tokens), Es(t) * n};
}
inline OpCost EmbeddingCost(int64_t tokens, int64_t hidden, DType t) { return EmbeddingCost(tokens, hidden, t, t); }

// A copy of `bytes`.
inline OpCost CopyCost(size_t bytes) { return {0, static_cast<double>(bytes), static_cast<double>(bytes)}; }

}  // namespace tierscope

#endif  // TIERSCOPE_BACKEND_OP_COST_H_
