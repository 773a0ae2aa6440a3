// The output checksum every report prints (bench's RESULT_JSON, the lab): a weighted
// mean of the values whose weights depend on each value's position, so reordering
// samples (or any two different values) changes it, unlike a plain mean.
#ifndef TIERSCOPE_CORE_CHECKSUM_H_
#define TIERSCOPE_CORE_CHECKSUM_H_

#include <cstddef>
#include <cstdint>

namespace tierscope {

// The weight of position i: in [0.5, 1.5), from a splitmix64 hash of i (no period, so
// no two sample offsets share a weight pattern).
inline double ChecksumWeight(uint64_t i) {
  uint64_t z = i * 0x9e3779b97f4a7c15ull + 0x6a09e667f3bcc909ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return 0.5 + static_cast<double>(z >> 11) * 0x1.0p-53;
}

// sum_i w(i) * v[i] / sum_i w(i), in double; NaN when any value is NaN (or infinities
// of both signs), so a non-finite output cannot hide.
inline double OrderSensitiveChecksum(const float* v, size_t n) {
  double num = 0, den = 0;
  for (size_t i = 0; i < n; ++i) {
    const double w = ChecksumWeight(i);
    num += w * static_cast<double>(v[i]);
    den += w;
  }
  return den > 0 ? num / den : 0.0;
}

}  // namespace tierscope

#endif  // TIERSCOPE_CORE_CHECKSUM_H_
