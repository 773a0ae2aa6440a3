// SplitMix64: a tiny deterministic generator, identical on every platform, for the
// built-in model's weights and the bench inputs.
#ifndef TIERSCOPE_CORE_SPLITMIX_H_
#define TIERSCOPE_CORE_SPLITMIX_H_

#include <cstdint>

namespace tierscope {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

 private:
  uint64_t state_;
};

}  // namespace tierscope

#endif  // TIERSCOPE_CORE_SPLITMIX_H_
