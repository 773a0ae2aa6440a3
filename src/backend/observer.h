// What watches launches: the observer the profiler implements (tier 2) — each worker's
// share of a kernel, what the device reported — and the hook the inspector implements to
// replay a launch (tier 3).
#ifndef TIERSCOPE_BACKEND_OBSERVER_H_
#define TIERSCOPE_BACKEND_OBSERVER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backend/launch.h"
#include "core/function_ref.h"
#include "tierscope/status.h"

namespace tierscope {

// One worker's share of one kernel, measured only while an observer is attached.
struct WorkerSpan {
  int64_t begin_ns = 0, end_ns = 0;  // first task start, last task end (0/0: no task)
  int64_t busy_ns = 0;               // sum of its task durations
  int64_t tasks = 0;
};

// What the device itself reported for a launch (CUPTI): the longest kernel it ran, with
// its real name and grid (a library call such as a cuBLASLt GEMM picks its own), and how
// many kernels the launch ran.
struct DeviceKernelInfo {
  std::string name;
  Dim3 grid, block;
  int kernels = 1;
  int registers_per_thread = 0;  // 0: not reported
  int64_t shared_bytes = 0;      // static + dynamic shared memory per block
};

// Receives what the backend does, for the profiler (tier 2). Times are MonotonicNs().
class BackendObserver {
 public:
  virtual ~BackendObserver() = default;
  virtual void OnAllocate(uintptr_t addr, size_t bytes, int64_t live_bytes) = 0;
  virtual void OnFree(uintptr_t addr, size_t bytes, int64_t live_bytes) = 0;
  // launch_*: the host call that started the kernel (until its first task began);
  // kernel_*: first task start to last task end; workers: one span per worker.
  virtual void OnLaunch(const LaunchDesc& desc, int64_t launch_begin_ns, int64_t launch_end_ns,
                        int64_t kernel_begin_ns, int64_t kernel_end_ns,
                        const std::vector<WorkerSpan>& workers) = 0;
  // Asynchronous devices (CUDA with CUPTI): the launch is reported when it is enqueued,
  // while the operator that issued it is still open; its kernel's device times follow
  // later through OnKernelTimes with the returned token (-1: not recorded) and, when the
  // device reported them, its real kernel name and grid (else null).
  virtual int64_t OnLaunchAsync(const LaunchDesc& desc, int64_t launch_begin_ns,
                                int64_t launch_end_ns) {
    return -1;
  }
  virtual void OnKernelTimes(int64_t token, int64_t kernel_begin_ns, int64_t kernel_end_ns,
                             const DeviceKernelInfo* info) {}
  // The host waited for the device (a stream synchronisation) from begin to end.
  virtual void OnSynchronize(int64_t begin_ns, int64_t end_ns) {}
};

// One run of a kernel over its whole grid: first task start to last task end, and each
// worker's share.
// GPUs: begin/end are the device's (CUPTI's) when it reported them, and `device` says
// what it ran (when it said); workers stay empty.
struct KernelRun {
  int64_t begin_ns = 0, end_ns = 0;
  std::vector<WorkerSpan> workers;
  // begin/end are the kernel's own (CPU task times, GPU activity records); false: CUDA
  // events around the launch, which add the host's launch latency to a short kernel.
  bool device_timed = false;
  std::optional<DeviceKernelInfo> device;
};

class Backend;

// Tier 3: sees every launch and decides how it runs. `run` runs the kernel once over
// its grid; the hook must call it at least once (the workload needs the result) and
// may call it again (replay) after restoring the buffers in desc.writes, which it reads
// and writes through `backend`'s copies (they may be device memory). While a hook is
// attached, the observer is not told of launches.
class LaunchHook {
 public:
  virtual ~LaunchHook() = default;
  virtual Status OnLaunch(Backend& backend, const LaunchDesc& desc,
                          FunctionRef<StatusOr<KernelRun>()> run) = 0;
};

}  // namespace tierscope

#endif  // TIERSCOPE_BACKEND_OBSERVER_H_
