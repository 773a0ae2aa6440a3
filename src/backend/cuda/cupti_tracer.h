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
#include "backend/launch_correlator.h"
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
  using Deliver = LaunchCorrelator::Deliver;
  Status Flush(const Deliver& deliver);

 private:
  CuptiTracer() = default;
  int64_t clock_offset_ns_ = 0;  // 0 when CUPTI uses MonotonicNs's clock (the usual case)
  LaunchCorrelator correlator_;
};

}  // namespace tierscope

#endif  // TIERSCOPE_BACKEND_CUDA_CUPTI_TRACER_H_
