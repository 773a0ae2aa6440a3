// Branch-free float exp, erf, tanh and GELU that compilers vectorise (libm's calls
// block vectorisation). exp: Cephes' polynomial, max rel err ~1e-7; erf: the rational
// approximation used by Eigen and XLA, max abs err ~4e-7 (checked against std::erf in
// tests/backend/vec_math_test.cc).
#ifndef TIERSCOPE_BACKEND_CPU_VEC_MATH_H_
#define TIERSCOPE_BACKEND_CPU_VEC_MATH_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace tierscope {

inline float FastExp(float x) {
  x = std::min(88.3762626647949f, std::max(-88.3762626647949f, x));
  const float fx = std::floor(x * 1.44269504088896341f + 0.5f);
  const float r = x - fx * 0.693359375f - fx * -2.12194440e-4f;
  float y = 1.9875691500e-4f;
  y = y * r + 1.3981999507e-3f;
  y = y * r + 8.3334519073e-3f;
  y = y * r + 4.1665795894e-2f;
  y = y * r + 1.6666665459e-1f;
  y = y * r + 5.0000001201e-1f;
  y = y * r * r + r + 1.0f;
  const int32_t n = static_cast<int32_t>(fx) + 127;
  const uint32_t bits = static_cast<uint32_t>(std::max(n, 0)) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof(scale));
  return y * scale;
}

inline float FastErf(float a) {
  const float x = std::min(4.0f, std::max(-4.0f, a));
  const float x2 = x * x;
  float p = x2 * -2.72614225801306e-10f + 2.77068142495902e-08f;
  p = x2 * p + -2.10102402082508e-06f;
  p = x2 * p + -5.69250639462346e-05f;
  p = x2 * p + -7.34990630326855e-04f;
  p = x2 * p + -2.95459980854025e-03f;
  p = x2 * p + -1.60960333262415e-02f;
  p = x * p;
  float q = x2 * -1.45660718464996e-05f + -2.13374055278905e-04f;
  q = x2 * q + -1.68282697438203e-03f;
  q = x2 * q + -7.37332916720468e-03f;
  q = x2 * q + -1.42647390514189e-02f;
  return p / q;
}

// Exact (erf) GELU, as BERT's "gelu".
inline float FastGelu(float x) { return 0.5f * x * (1.0f + FastErf(x * 0.70710678118654752f)); }

inline float FastTanh(float x) {
  // tanh(x) = sign(x) * (1 - e) / (1 + e) with e = exp(-2|x|): no cancellation for large |x|.
  const float e = FastExp(-2.0f * std::fabs(x));
  const float t = (1.0f - e) / (1.0f + e);
  return std::copysign(t, x);
}

}  // namespace tierscope

#endif  // TIERSCOPE_BACKEND_CPU_VEC_MATH_H_
