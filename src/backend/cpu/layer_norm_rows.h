// LayerNorm over a range of rows, for the CPU ops that run it: the LayerNorm launch
// (layer_norm.cc) and the Linears with the residual add and LayerNorm in their epilogue
// (gemm.cc, gemm_int8.cc), so all give the same bits from the same rows.
#ifndef TIERSCOPE_BACKEND_CPU_LAYER_NORM_ROWS_H_
#define TIERSCOPE_BACKEND_CPU_LAYER_NORM_ROWS_H_

#include <cstdint>
#include <vector>

#include "backend/cpu/quantize_rows.h"
#include "core/tensor.h"
#include "tierscope/dtype.h"

namespace tierscope {

// Rows of x (and of the residual, and of out) at their own strides, in elements of dtype;
// row r of the output also quantized into codes + r * kp and code_params + 2 r where codes
// is given (FP32 rows only).
struct LnRows {
  const void* x = nullptr;
  int64_t ldx = 0;
  const void* residual = nullptr;  // or null
  int64_t ldr = 0;
  void* out = nullptr;
  int64_t ldo = 0;
  DType dtype = DType::kF32;
  int64_t cols = 0;
  float eps = 0;
  uint8_t* codes = nullptr;  // or null
  float* code_params = nullptr;
  int64_t kp = 0;
  // With codes: the INT8 variant's, which the 8-lane rows use; the 16-lane rows quantize
  // from the range their last pass folds (QuantizeRowInRange16), the same bytes.
  QuantizeRowFn quantize_row = nullptr;
};

// LnRows over dense rows of `cols` (every stride `cols`), no codes.
LnRows DenseLnRows(DType dtype, int64_t cols, float eps);

// LayerNorm's gamma and beta in FP32: the tensors' own where they are FP32, else converted
// once into `storage` (not once a task).
struct LnAffine {
  const float* gamma;
  const float* beta;
};
LnAffine Fp32Affine(const Tensor& gamma, const Tensor& beta, std::vector<float>* storage);

// Floats of scratch LayerNormRowRange needs for rows of `cols`.
int64_t LayerNormRowScratchFloats(int64_t cols);

// out[r] = LayerNorm(x[r] + residual[r]) * g + bt for r in [r0, r1), statistics in FP32,
// two-pass; g and bt FP32 [cols]. out may be x (each row is read whole before it is
// written). `scratch`: LayerNormRowScratchFloats(cols) floats of the caller's.
void LayerNormRowRange(const LnRows& p, const float* g, const float* bt, int64_t r0, int64_t r1, float* scratch);

}  // namespace tierscope

#endif  // TIERSCOPE_BACKEND_CPU_LAYER_NORM_ROWS_H_
