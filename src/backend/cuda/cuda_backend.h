// CudaBackend: device memory (cudaMalloc with a size-keyed block cache and live/peak
// accounting), one non-blocking stream, device properties, and Launch, which enqueues a
// kernel with its descriptor. With a tier-2 observer attached, launches are traced by
// CUPTI (asynchronous). With a tier-3 hook attached, each launch runs alone and is
// waited for, timed by its CUPTI kernel records (the device's own start and end, with
// the kernel the device ran) or, when CUPTI cannot be used, by CUDA events around it.
#ifndef TIERSCOPE_BACKEND_CUDA_CUDA_BACKEND_H_
#define TIERSCOPE_BACKEND_CUDA_CUDA_BACKEND_H_

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/cupti_tracer.h"
#include "backend/kernels.h"
#include "backend/cuda/cuda_vendor.h"

namespace tierscope {

// "cuda: <name>: <message> (<what>)" for a failed runtime call.
Status GpuStatus(gpuError_t e, const std::string& what);

class CudaBackend : public Backend {
 public:
  static StatusOr<std::unique_ptr<CudaBackend>> Create(int ordinal);
  ~CudaBackend() override;

  StatusOr<void*> Allocate(size_t bytes) override;
  void Deallocate(void* ptr, size_t bytes) override;
  MemoryStats memory_stats() const override;
  int64_t AvailableMemory() const override;
  void ResetPeakMemory() override;

  const DeviceProps& props() const override { return props_; }
  Status CopyHostToDevice(void* dst, const void* src, size_t bytes) override;
  Status CopyDeviceToHost(void* dst, const void* src, size_t bytes) override;
  Status Synchronize() override;
  Kernels& kernels() override { return *kernels_; }
  // With an observer, launches are traced by CUPTI where it can be used (asynchronous,
  // device timestamps), else timed one by one with CUDA events (a warning says so).
  void SetObserver(BackendObserver* observer) override;
  void SetLaunchHook(LaunchHook* hook) override;
  // A memset over twice the L2 cache (a buffer kept for it, outside the accounting).
  Status FlushCaches() override;
  // FP32 FMA kernel, FP16/BF16 tensor-core GEMMs (cuBLASLt), triad kernel (peaks.cc).
  StatusOr<DevicePeaks> MeasurePeaks() override;
  Status BeginCapture() override;
  StatusOr<std::unique_ptr<Graph>> EndCapture() override;
  Status LaunchGraph(Graph& graph) override;

  // Enqueues one kernel: `enqueue` launches it on the stream and returns the launch's
  // status. `desc` describes it (grid and block as launched).
  Status Launch(const LaunchDesc& desc, const std::function<Status(gpuStream_t)>& enqueue);

  gpuStream_t stream() const { return stream_; }
  int ordinal() const { return ordinal_; }
  // Streaming multiprocessors, max threads per SM, registers per SM, shared memory per SM.
  int sm_count() const { return sm_count_; }
  int max_threads_per_sm() const { return max_threads_per_sm_; }
  int regs_per_sm() const { return regs_per_sm_; }
  int64_t shared_per_sm() const { return shared_per_sm_; }
  int compute_capability() const { return cc_; }

 private:
  explicit CudaBackend(int ordinal) : ordinal_(ordinal) {}
  // Makes this backend's device current on the calling thread (the current device is
  // per thread: serve loads on one thread and runs on another).
  Status Use() const;
  // Waits for queued work, then runs the launch bracketed by events and waits for it;
  // with CUPTI on, its times and the device's kernel come from the activity records
  // where they arrived. *launch_begin_ns / *enqueued_ns: when the host call began / ended.
  StatusOr<KernelRun> RunTimed(const LaunchDesc& desc,
                               const std::function<Status(gpuStream_t)>& enqueue,
                               int64_t* launch_begin_ns = nullptr, int64_t* enqueued_ns = nullptr);
  // Starts CUPTI while an observer or a hook is attached and stops it when neither is
  // (a warning when it cannot be used: CUDA events time the launches then).
  void UpdateTracer();

  int ordinal_ = 0;
  DeviceProps props_;
  gpuStream_t stream_ = nullptr;
  gpuEvent_t start_ = nullptr, stop_ = nullptr;
  std::unique_ptr<Kernels> kernels_;
  BackendObserver* observer_ = nullptr;
  LaunchHook* hook_ = nullptr;
  bool capturing_ = false;
  // CUPTI tracing while an observer is attached (null: the CUDA-event fallback).
  std::unique_ptr<CuptiTracer> cupti_;
  uint64_t next_launch_id_ = 1;
  std::unordered_map<uint64_t, int64_t> pending_;  // launch id -> observer token
  // Delivers the observer's pending kernel times; `capture_id`'s record (a tier-3 run)
  // replaces *captured's event times and gives its device kernel instead.
  Status FlushTrace(uint64_t capture_id = 0, KernelRun* captured = nullptr);
  bool cupti_warned_ = false;
  void* flush_buffer_ = nullptr;  // FlushCaches' target
  size_t flush_bytes_ = 0;
  int flush_pattern_ = 0;
  int sm_count_ = 0, max_threads_per_sm_ = 0, regs_per_sm_ = 0, cc_ = 0;
  int64_t shared_per_sm_ = 0;
  MemoryAccounting accounting_;
  BlockCache cache_{SIZE_MAX};  // freed blocks; released and retried on out-of-memory
};

// The CUDA op kernels (cuda_kernels.cc), over cuBLASLt for GEMMs (gemm.cc).
std::unique_ptr<Kernels> CreateCudaKernels(CudaBackend& backend);

}  // namespace tierscope

#endif  // TIERSCOPE_BACKEND_CUDA_CUDA_BACKEND_H_
