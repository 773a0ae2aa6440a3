// LaunchCorrelator: the correlator between a GPU's activity records and the backend's
// launches, kept apart from CUPTI (whose buffers feed it) so it is tested with fake
// records, as Kineto tests its correlator. A launch is bracketed by one external id; the
// API calls it makes get correlation ids, each linked to that external id by an
// external-correlation record; kernels and copies carry a correlation id. One launch may
// run several kernels (a cuBLASLt call): its span covers them all, and its kernel info is
// the longest kernel's, with the count of kernels.
#ifndef TIERSCOPE_BACKEND_LAUNCH_CORRELATOR_H_
#define TIERSCOPE_BACKEND_LAUNCH_CORRELATOR_H_

#include <cstdint>
#include <functional>
#include <unordered_map>

#include "backend/backend.h"

namespace tierscope {

class LaunchCorrelator {
 public:
  // A kernel record (times on MonotonicNs's clock); `info.kernels` is ignored.
  void AddKernel(uint32_t correlation, int64_t begin_ns, int64_t end_ns, DeviceKernelInfo info);
  // A device copy or memset record.
  void AddCopy(uint32_t correlation, int64_t begin_ns, int64_t end_ns);
  // An external-correlation record: API call `correlation` was made inside `launch_id`.
  void AddExternal(uint32_t correlation, uint64_t launch_id);

  // Calls deliver(launch id, begin, end, info or null when the launch ran only copies) for
  // each launch with records, and forgets them. What is still unmatched (a record CUPTI
  // wrote after the flush, host copies, other libraries' work) waits one more drain, then
  // is dropped, so nothing piles up.
  using Deliver = std::function<void(uint64_t, int64_t, int64_t, const DeviceKernelInfo*)>;
  void Drain(const Deliver& deliver);

 private:
  struct Span {
    int64_t begin = INT64_MAX, end = 0;
    int64_t longest = -1;  // duration of the longest kernel, -1: copies only
    DeviceKernelInfo info;
    int drains = 0;  // drains it has waited through unmatched
  };
  // Folds `b` (one correlation id's records) into `a` (a launch's).
  static void Merge(Span& a, const Span& b);

  struct External {
    uint64_t launch_id = 0;
    int drains = 0;  // drains it has waited through unmatched
  };
  std::unordered_map<uint32_t, External> external_;  // correlation id -> launch
  std::unordered_map<uint32_t, Span> spans_;         // correlation id -> its records
};

}  // namespace tierscope

#endif  // TIERSCOPE_BACKEND_LAUNCH_CORRELATOR_H_
