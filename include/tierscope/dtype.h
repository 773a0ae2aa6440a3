// Element types and the FP16/BF16 <-> FP32 conversions every backend shares.
#ifndef TIERSCOPE_DTYPE_H_
#define TIERSCOPE_DTYPE_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "tierscope/status.h"

namespace tierscope {

enum class DType : uint8_t { kF32, kF16, kBF16, kF64, kI64, kI32, kI16, kI8, kU8, kBool };

size_t DTypeSize(DType t);
// "float32", "float16", "bfloat16", ...
std::string_view DTypeName(DType t);
// Parses "fp32"/"float32"/"f32", "fp16"/"float16"/"f16", "bf16"/"bfloat16".
StatusOr<DType> ParseFloatDType(std::string_view s);
// Parses a run precision: a float dtype as ParseFloatDType, or "int8" (kI8: dynamic
// quantization, INT8 weights with FP32 activations).
StatusOr<DType> ParseRunDType(std::string_view s);
// The dtype a run of precision `run` keeps its activations in: FP32 for an INT8 run, and
// for an FP16/BF16 run on a device without FP16/BF16 arithmetic
// (DeviceProps::HalfArithmetic), whose weights alone are 16-bit; else the precision.
inline DType ActivationDType(DType run, bool half_arithmetic = true) {
  if (run == DType::kI8) return DType::kF32;
  if ((run == DType::kF16 || run == DType::kBF16) && !half_arithmetic) return DType::kF32;
  return run;
}

// IEEE binary16 stored as raw bits.
struct Half { uint16_t bits; };
// bfloat16 stored as raw bits.
struct BFloat16 { uint16_t bits; };

inline float BF16ToFloat(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Round to nearest even; NaN stays NaN.
inline uint16_t FloatToBF16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

float HalfToFloat(uint16_t h);
uint16_t FloatToHalf(float f);  // round to nearest even, overflow to inf

// Bulk conversions (vectorised where the CPU allows).
void HalfToFloat(const uint16_t* src, float* dst, size_t n);
void FloatToHalf(const float* src, uint16_t* dst, size_t n);
void BF16ToFloat(const uint16_t* src, float* dst, size_t n);
void FloatToBF16(const float* src, uint16_t* dst, size_t n);

// Converts n elements of `src_type` (F32, F16 or BF16) to float.
void ToFloat(DType src_type, const void* src, float* dst, size_t n);
// Converts n floats to `dst_type` (F32, F16 or BF16).
void FromFloat(const float* src, DType dst_type, void* dst, size_t n);

}  // namespace tierscope

#endif  // TIERSCOPE_DTYPE_H_
