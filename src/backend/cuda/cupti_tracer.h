// CUPTI activity tracing, tier 2 on CUDA (and tier 3's device timing of replays): kernel,
// memcpy and memset records with device timestamps, matched
// to the backend's launches through external correlation ids (one per launch; a
// cuBLASLt call that runs several kernels spans them all). Timestamps are moved onto
// MonotonicNs's clock. Only one tracer can be active in a process.
#ifndef TIERSCOPE_BACKEND_CUDA_CUPTI_TRACER_H_
#define TIERSCOPE_BACKEND_CUDA_CUPTI_TRACER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>

#include "backend/backend.h"
#include "tierscope/status.h"

namespace tierscope {

class CuptiTracer {
 public:
  // Enables kernel and external-correlation activity. FailedPrecondition when CUPTI cannot
  // be used (another profiler holds it, no permission, no CUPTI in this build).
  static StatusOr<std::unique_ptr<CuptiTracer>> Start();
  ~CuptiTracer();

  // Brackets one launch: its kernels get `id`.
  void Push(uint64_t id);
  void Pop();
  // Flushes CUPTI's buffers; calls deliver(id, begin_ns, end_ns, info) for every launch
  // whose records have arrived (info: its longest kernel, null for a copy). Call after
  // the stream has synchronised.
  using Deliver = std::function<void(uint64_t, int64_t, int64_t, const DeviceKernelInfo*)>;
  Status Flush(const Deliver& deliver);

 private:
  CuptiTracer() = default;
  struct Span {
    int64_t begin = INT64_MAX, end = 0;
    int64_t longest = -1;  // duration of the longest kernel, -1: copies only
    DeviceKernelInfo info;
  };
  // Folds `b` (one correlation id's records) into `a` (a launch's).
  static void Merge(Span& a, const Span& b);
  int64_t clock_offset_ns_ = 0;  // 0 when CUPTI uses MonotonicNs's clock (the usual case)
  std::unordered_map<uint32_t, uint64_t> external_;   // correlation id -> launch id
  std::unordered_map<uint32_t, Span> kernels_;        // correlation id -> kernel span
};

}  // namespace tierscope

#endif  // TIERSCOPE_BACKEND_CUDA_CUPTI_TRACER_H_
