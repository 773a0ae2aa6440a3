// DType names and FP16/BF16 conversions.
#include "tierscope/dtype.h"

#include <string>

#if defined(__F16C__) || defined(__AVX2__)
#include <immintrin.h>
#endif

namespace tierscope {

size_t DTypeSize(DType t) {
  switch (t) {
    case DType::kF32: return 4;
    case DType::kF16: return 2;
    case DType::kBF16: return 2;
    case DType::kF64: return 8;
    case DType::kI64: return 8;
    case DType::kI32: return 4;
    case DType::kI16: return 2;
    case DType::kI8: return 1;
    case DType::kU8: return 1;
    case DType::kBool: return 1;
  }
  return 0;
}

std::string_view DTypeName(DType t) {
  switch (t) {
    case DType::kF32: return "float32";
    case DType::kF16: return "float16";
    case DType::kBF16: return "bfloat16";
    case DType::kF64: return "float64";
    case DType::kI64: return "int64";
    case DType::kI32: return "int32";
    case DType::kI16: return "int16";
    case DType::kI8: return "int8";
    case DType::kU8: return "uint8";
    case DType::kBool: return "bool";
  }
  return "unknown";
}

StatusOr<DType> ParseFloatDType(std::string_view s) {
  if (s == "fp32" || s == "float32" || s == "f32") return DType::kF32;
  if (s == "fp16" || s == "float16" || s == "f16" || s == "half") return DType::kF16;
  if (s == "bf16" || s == "bfloat16") return DType::kBF16;
  return InvalidArgument("unknown dtype '" + std::string(s) +
                         "' (valid: fp32, fp16, bf16)");
}

StatusOr<DType> ParseRunDType(std::string_view s) {
  if (s == "int8" || s == "i8") return DType::kI8;
  StatusOr<DType> t = ParseFloatDType(s);
  if (!t.ok()) return InvalidArgument("unknown dtype '" + std::string(s) + "' (valid: fp32, fp16, bf16, int8)");
  return t;
}

float HalfToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t u;
  if (exp == 0) {
    if (mant == 0) {
      u = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      mant &= 0x3ffu;
      u = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | (mant << 13);
    }
  } else if (exp == 0x1f) {
    u = sign | 0x7f800000u | (mant << 13);
  } else {
    u = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

uint16_t FloatToHalf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);  // NaN
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // inf
  if (abs < 0x38800000u) {  // result is subnormal or zero
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);  // < 2^-25
    uint32_t exp = abs >> 23;                                 // 102..112
    uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - exp;                               // 14..24
    uint32_t half_mant = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half_mant & 1u))) ++half_mant;
    return static_cast<uint16_t>(sign | half_mant);
  }
  uint32_t exp = (abs >> 23) - 127 + 15;
  uint32_t mant = abs & 0x7fffffu;
  uint32_t h = (exp << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // may carry into exp: fine
  return static_cast<uint16_t>(sign | h);
}

void HalfToFloat(const uint16_t* src, float* dst, size_t n) {
  size_t i = 0;
#if defined(__F16C__) && defined(__AVX__)
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
#endif
  for (; i < n; ++i) dst[i] = HalfToFloat(src[i]);
}

void FloatToHalf(const float* src, uint16_t* dst, size_t n) {
  size_t i = 0;
#if defined(__F16C__) && defined(__AVX__)
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
  }
#endif
  for (; i < n; ++i) dst[i] = FloatToHalf(src[i]);
}

void BF16ToFloat(const uint16_t* src, float* dst, size_t n) {
  size_t i = 0;
#if defined(__AVX2__)
  for (; i + 8 <= n; i += 8) {  // widen to 32 bits, the BF16 bits on top
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
    _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)));
  }
#endif
  for (; i < n; ++i) dst[i] = BF16ToFloat(src[i]);
}

void FloatToBF16(const float* src, uint16_t* dst, size_t n) {
  size_t i = 0;
#if defined(__AVX2__)
  // FloatToBF16(float) on 8 lanes: round to nearest even, a NaN stays a (quiet) NaN.
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
  const __m256i one = _mm256_set1_epi32(1), bias = _mm256_set1_epi32(0x7fff), quiet = _mm256_set1_epi32(0x40);
  for (; i + 8 <= n; i += 8) {
    const __m256i u = _mm256_castps_si256(_mm256_loadu_ps(src + i));
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs_mask), inf);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), one);
    const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(bias, lsb)), 16);
    const __m256i quieted = _mm256_or_si256(_mm256_srli_epi32(u, 16), quiet);
    const __m256i v = _mm256_blendv_epi8(rounded, quieted, nan);  // each lane <= 0xffff
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(v, v), 0x08);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), _mm256_castsi256_si128(packed));
  }
#endif
  for (; i < n; ++i) dst[i] = FloatToBF16(src[i]);
}

void ToFloat(DType t, const void* src, float* dst, size_t n) {
  if (n == 0) return;  // an empty tensor's pointers may be null
  switch (t) {
    case DType::kF32: std::memcpy(dst, src, n * 4); return;
    case DType::kF16: HalfToFloat(static_cast<const uint16_t*>(src), dst, n); return;
    case DType::kBF16: BF16ToFloat(static_cast<const uint16_t*>(src), dst, n); return;
    default: assert(false && "ToFloat: not a float dtype");
  }
}

void FromFloat(const float* src, DType t, void* dst, size_t n) {
  if (n == 0) return;
  switch (t) {
    case DType::kF32: std::memcpy(dst, src, n * 4); return;
    case DType::kF16: FloatToHalf(src, static_cast<uint16_t*>(dst), n); return;
    case DType::kBF16: FloatToBF16(src, static_cast<uint16_t*>(dst), n); return;
    default: assert(false && "FromFloat: not a float dtype");
  }
}

}  // namespace tierscope
