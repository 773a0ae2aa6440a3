// The one clock: nanoseconds of the monotonic (steady) clock, which the backends, the
// profiler, the benchmark, the server and the load generator all read, so that their
// times can be compared and subtracted.
#ifndef TIERSCOPE_CORE_CLOCK_H_
#define TIERSCOPE_CORE_CLOCK_H_

#include <chrono>
#include <cstdint>

namespace tierscope {

using MonotonicClock = std::chrono::steady_clock;

inline int64_t MonotonicNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             MonotonicClock::now().time_since_epoch())
      .count();
}

}  // namespace tierscope

#endif  // TIERSCOPE_CORE_CLOCK_H_
