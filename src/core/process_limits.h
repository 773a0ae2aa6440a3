// The process limits servers and clients size themselves by: open file descriptors.
#ifndef TIERSCOPE_CORE_PROCESS_LIMITS_H_
#define TIERSCOPE_CORE_PROCESS_LIMITS_H_

#include <sys/resource.h>

#include <algorithm>
#include <cstdint>

namespace tierscope {

// This process's soft RLIMIT_NOFILE (2^20 when unlimited or unknown).
inline int64_t DescriptorLimit() {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return int64_t{1} << 20;
  return static_cast<int64_t>(r.rlim_cur);
}

// Descriptors kept for everything but sockets (the model's files, the gRPC server's
// sockets and pipes, logs): the larger of 16 and a quarter of the limit.
inline int64_t ReservedDescriptors(int64_t descriptor_limit) { return std::max<int64_t>(16, descriptor_limit / 4); }

}  // namespace tierscope

#endif  // TIERSCOPE_CORE_PROCESS_LIMITS_H_
