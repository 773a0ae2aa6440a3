// Integer rounding shared by the kernels and the reports: a count of whole blocks, and a
// size rounded up to whole blocks (of any positive size, not only powers of two).
#ifndef TIERSCOPE_CORE_INT_MATH_H_
#define TIERSCOPE_CORE_INT_MATH_H_

#include <cstdint>

namespace tierscope {

// Blocks of `unit` that hold `v` (v >= 0, unit > 0).
constexpr int64_t CeilDiv(int64_t v, int64_t unit) { return (v + unit - 1) / unit; }

// `v` rounded up to a multiple of `unit` (v >= 0, unit > 0); 0 stays 0.
constexpr int64_t RoundUp(int64_t v, int64_t unit) { return CeilDiv(v, unit) * unit; }

}  // namespace tierscope

#endif  // TIERSCOPE_CORE_INT_MATH_H_
