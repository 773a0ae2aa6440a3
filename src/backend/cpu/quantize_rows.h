// Rows of FP32 activations as the CPU's INT8 GEMM reads them: u8 codes per row, with a
// scale and a zero point each (dynamic quantization, as ONNX Runtime's quantize_dynamic
// does it), in the one layout every variant's micro-kernels share. One definition, used
// by the standalone quantization launch and by the ops that quantize what they produce
// (LayerNorm, an INT8 Linear feeding another): so their codes agree bit for bit.
#ifndef TIERSCOPE_BACKEND_CPU_QUANTIZE_ROWS_H_
#define TIERSCOPE_BACKEND_CPU_QUANTIZE_ROWS_H_

#include <immintrin.h>

#include <cstdint>

#include "backend/cpu/micro_kernel_int8.h"
#include "backend/kernels.h"
#include "core/int_math.h"

namespace tierscope {

// 4-deep groups of a panel for K inputs: rounded up to a whole AMX tile (64 inputs), so
// every variant runs on the same packing; the padding is zeros on both sides.
inline int64_t PaddedKq(int64_t k) { return RoundUp(CeilDiv(k, kQK), kAmxKq); }
// Bytes of one row of codes for K inputs.
inline int64_t PaddedCodeBytes(int64_t k) { return PaddedKq(k) * kQK; }
// Rows of codes held: whole 16-row AMX tiles (the rows past the data are zeros).
inline int64_t PaddedRows(int64_t rows) { return RoundUp(rows, kAmxRows); }

// Row x[0, k) as codes q[0, kp) in [0, 255], one byte each: x ~ scale * (q - zp), with
// 0.0 exact; q[k, kp) are zeros. params = {scale, zp}. A row holding a NaN or an infinity
// gets scale NaN, so its outputs are NaN rather than a number made up from the finite
// values.
// Whether q holds rows x k codes in this layout (as NewQuantizedRows makes them); `op`
// names the caller in the error.
Status CheckCodeLayout(const QuantizedRows& q, const char* op);

// Two widths give the same bytes: 16 lanes beside the AVX-512 micro-kernels (VNNI, AMX),
// 8 beside the others, so forcing an INT8 variant tests its quantization too (LayerNorm's
// 16-lane rows quantize with QuantizeRowInRange16 whatever the variant: the same bytes).
using QuantizeRowFn = void (*)(const float* x, int64_t k, int64_t kp, uint8_t* q, float* params);
QuantizeRowFn PickQuantizeRow(const Int8MicroKernels& mk);

// The 16-lane quantization of row x[0, k) whose range the caller folded already: lo16 and
// hi16 the lanes' min and max of the row's values and of 0, poison16 the lanes' sums of x *
// 0 (lanes past the row holding 0 in each). The bytes QuantizeRow16 writes from x (the
// fold's order moves no bit: min and max are exact, and the sum of x * 0 is 0 or NaN
// whatever the order); for an op that has the row in registers anyway (LayerNorm's last
// pass). AVX-512F hosts only.
__attribute__((target("avx512f"))) void QuantizeRowInRange16(const float* x, int64_t k, int64_t kp, __m512 lo16,
                                                              __m512 hi16, __m512 poison16, uint8_t* q,
                                                              float* params);

}  // namespace tierscope

#endif  // TIERSCOPE_BACKEND_CPU_QUANTIZE_ROWS_H_
