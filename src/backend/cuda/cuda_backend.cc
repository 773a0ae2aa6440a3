// The CUDA backend's device, memory, copies and launch path.
#include "backend/cuda/cuda_backend.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "backend/kernels.h"

namespace tierscope {
namespace {

constexpr size_t kAlignment = 256;

// Exact sizes in whole 256-byte units: a size class (memory.h) would reserve up to a
// quarter more device memory for each weight.
size_t RoundedSize(size_t bytes) { return AlignUp(bytes, kAlignment); }

}  // namespace

Status GpuStatus(gpuError_t e, const std::string& what) {
  if (e == gpuSuccess) return OkStatus();
  (void)gpuGetLastError();  // clear it, so the next launch does not report it as its own
  return Internal(std::string(TS_GPU_VENDOR) + ": " + gpuGetErrorName(e) + ": " +
                  gpuGetErrorString(e) + " (" + what + ")");
}

Status CudaBackend::Use() const {
  int current = -1;
  if (gpuGetDevice(&current) == gpuSuccess && current == ordinal_) return OkStatus();
  return GpuStatus(gpuSetDevice(ordinal_), "set device");
}

StatusOr<std::unique_ptr<CudaBackend>> CudaBackend::Create(int ordinal) {
  int count = 0;
  const gpuError_t e = gpuGetDeviceCount(&count);
  if (e != gpuSuccess || count == 0) {
    return FailedPrecondition(std::string("no ") + TS_GPU_VENDOR + " device is available" +
                              (e != gpuSuccess ? std::string(": ") + gpuGetErrorString(e) : ""));
  }
  if (ordinal < 0 || ordinal >= count) {
    return InvalidArgument("device " + std::string(TS_GPU_VENDOR) + ":" + std::to_string(ordinal) +
                           " does not exist; this machine has " + std::to_string(count));
  }
  std::unique_ptr<CudaBackend> b(new CudaBackend(ordinal));
  TS_RETURN_IF_ERROR(GpuStatus(gpuSetDevice(ordinal), "set device"));
  gpuDeviceProp p{};
  TS_RETURN_IF_ERROR(GpuStatus(gpuGetDeviceProperties(&p, ordinal), "device properties"));
  b->sm_count_ = p.multiProcessorCount;
  b->max_threads_per_sm_ = p.maxThreadsPerMultiProcessor;
  b->regs_per_sm_ = p.regsPerMultiprocessor;
  b->shared_per_sm_ = static_cast<int64_t>(p.sharedMemPerMultiprocessor);
  b->cc_ = p.major * 10 + p.minor;
  b->props_.kind = TS_GPU_VENDOR;
  b->props_.compute_units = p.multiProcessorCount;
  b->props_.total_memory = static_cast<int64_t>(p.totalGlobalMem);
  b->props_.max_threads_per_unit = p.maxThreadsPerMultiProcessor;
  b->props_.max_blocks_per_unit = p.maxBlocksPerMultiProcessor;
  b->props_.regs_per_unit = p.regsPerMultiprocessor;
  b->props_.shared_per_unit = static_cast<int64_t>(p.sharedMemPerMultiprocessor);
  b->props_.reserved_shared_per_block = static_cast<int64_t>(p.reservedSharedMemPerBlock);
  b->props_.warp_size = p.warpSize;
  b->props_.l2_bytes = p.l2CacheSize;
  b->props_.arch = "sm_" + std::to_string(b->cc_);
  b->props_.model = p.name;
  b->props_.name = std::string(TS_GPU_VENDOR) + ":" + std::to_string(ordinal) + ": " + p.name +
                   " (" + std::to_string(p.multiProcessorCount) + " SMs, sm_" +
                   std::to_string(b->cc_) + ")";
  TS_RETURN_IF_ERROR(
      GpuStatus(gpuStreamCreateWithFlags(&b->stream_, gpuStreamNonBlocking), "create stream"));
  TS_RETURN_IF_ERROR(GpuStatus(gpuEventCreate(&b->start_), "create event"));
  TS_RETURN_IF_ERROR(GpuStatus(gpuEventCreate(&b->stop_), "create event"));
  b->kernels_ = CreateCudaKernels(*b);
  return b;
}

CudaBackend::~CudaBackend() {
  (void)Use();
  hook_ = nullptr;
  if (observer_ != nullptr) SetObserver(nullptr);  // delivers what CUPTI still holds
  cupti_.reset();
  if (flush_buffer_ != nullptr) gpuFree(flush_buffer_);
  kernels_.reset();  // gives its workspace back through Deallocate first
  if (stream_ != nullptr) gpuStreamSynchronize(stream_);
  cache_.ReleaseAll([](void* p) { gpuFree(p); });
  if (start_ != nullptr) gpuEventDestroy(start_);
  if (stop_ != nullptr) gpuEventDestroy(stop_);
  if (stream_ != nullptr) gpuStreamDestroy(stream_);
}

StatusOr<void*> CudaBackend::Allocate(size_t bytes) {
  TS_RETURN_IF_ERROR(Use());
  const size_t rounded = RoundedSize(bytes);
  void* p = cache_.Take(rounded);
  if (p == nullptr) {
    gpuError_t e = gpuMalloc(&p, rounded);
    if (e != gpuSuccess && !capturing_) {
      // Out of memory with blocks of other sizes cached: give them all back and retry.
      (void)gpuGetLastError();
      gpuStreamSynchronize(stream_);
      cache_.ReleaseAll([](void* b) { gpuFree(b); });
      e = gpuMalloc(&p, rounded);
    }
    if (e != gpuSuccess) {
      (void)gpuGetLastError();
      return ResourceExhausted(std::string(TS_GPU_VENDOR) + ": cannot allocate " +
                               std::to_string(bytes) + " bytes: " + gpuGetErrorString(e));
    }
  }
  const int64_t live = accounting_.OnAllocate(bytes);
  if (observer_ != nullptr) observer_->OnAllocate(reinterpret_cast<uintptr_t>(p), bytes, live);
  return p;
}

void CudaBackend::Deallocate(void* ptr, size_t bytes) {
  if (ptr == nullptr) return;
  const int64_t live = accounting_.OnFree(bytes);
  if (observer_ != nullptr) observer_->OnFree(reinterpret_cast<uintptr_t>(ptr), bytes, live);
  // Kept for reuse, like PyTorch's caching allocator: kernels already queued on the one
  // stream that may still read it finish before any later user's kernels start. (A graph
  // captured meanwhile keeps using such blocks: only bench --graph captures, and it
  // allocates nothing between replays; a general graph API would need a private pool.)
  cache_.Put(ptr, RoundedSize(bytes));  // no size limit: always kept
}

MemoryStats CudaBackend::memory_stats() const { return accounting_.stats(); }

int64_t CudaBackend::AvailableMemory() const {
  if (!Use().ok()) return -1;
  size_t free_bytes = 0, total_bytes = 0;
  if (gpuMemGetInfo(&free_bytes, &total_bytes) != gpuSuccess) {
    gpuGetLastError();  // clear it: the next call must not see it
    return -1;
  }
  return static_cast<int64_t>(free_bytes + cache_.cached_bytes());
}

void CudaBackend::ResetPeakMemory() { accounting_.ResetPeak(); }

Status CudaBackend::CopyHostToDevice(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return OkStatus();
  if (capturing_) return FailedPrecondition("host copies cannot be captured into a graph");
  TS_RETURN_IF_ERROR(Use());
  // From pageable memory the call returns once the source has been staged.
  return GpuStatus(gpuMemcpyAsync(dst, src, bytes, gpuMemcpyHostToDevice, stream_),
                   "copy host to device");
}

Status CudaBackend::CopyDeviceToHost(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return OkStatus();
  if (capturing_) return FailedPrecondition("host copies cannot be captured into a graph");
  TS_RETURN_IF_ERROR(Use());
  TS_RETURN_IF_ERROR(GpuStatus(gpuMemcpyAsync(dst, src, bytes, gpuMemcpyDeviceToHost, stream_),
                               "copy device to host"));
  return Synchronize();
}

namespace {
class CudaGraph : public Graph {
 public:
  CudaGraph(gpuGraph_t g, gpuGraphExec_t e) : graph_(g), exec_(e) {}
  ~CudaGraph() override {
    if (exec_ != nullptr) gpuGraphExecDestroy(exec_);
    if (graph_ != nullptr) gpuGraphDestroy(graph_);
  }
  gpuGraphExec_t exec() const { return exec_; }

 private:
  gpuGraph_t graph_;
  gpuGraphExec_t exec_;
};
}  // namespace

Status CudaBackend::BeginCapture() {
  if (hook_ != nullptr || observer_ != nullptr) {
    return FailedPrecondition("a graph cannot be captured while a profiler or tier-3 hook is attached");
  }
  if (capturing_) return FailedPrecondition("a graph capture is already open");
  TS_RETURN_IF_ERROR(Use());
  // Relaxed: the caching allocator may still call cudaMalloc while the capture is open.
  TS_RETURN_IF_ERROR(GpuStatus(gpuStreamBeginCapture(stream_, gpuStreamCaptureModeRelaxed),
                               "begin graph capture"));
  capturing_ = true;
  return OkStatus();
}

StatusOr<std::unique_ptr<Graph>> CudaBackend::EndCapture() {
  if (!capturing_) return FailedPrecondition("no graph capture is open");
  capturing_ = false;
  gpuGraph_t graph = nullptr;
  TS_RETURN_IF_ERROR(GpuStatus(gpuStreamEndCapture(stream_, &graph), "end graph capture"));
  gpuGraphExec_t exec = nullptr;
  const gpuError_t e = gpuGraphInstantiate(&exec, graph, 0);
  if (e != gpuSuccess) {
    gpuGraphDestroy(graph);
    return GpuStatus(e, "instantiate graph");
  }
  return std::unique_ptr<Graph>(new CudaGraph(graph, exec));
}

Status CudaBackend::LaunchGraph(Graph& graph) {
  TS_RETURN_IF_ERROR(Use());
  return GpuStatus(gpuGraphLaunch(static_cast<CudaGraph&>(graph).exec(), stream_), "launch graph");
}

Status CudaBackend::Synchronize() {
  if (capturing_) return OkStatus();  // nothing runs while a capture is open
  TS_RETURN_IF_ERROR(Use());
  const int64_t begin = MonotonicNs();
  TS_RETURN_IF_ERROR(GpuStatus(gpuStreamSynchronize(stream_), "synchronize"));
  if (observer_ != nullptr) observer_->OnSynchronize(begin, MonotonicNs());
  return FlushTrace();
}

Status CudaBackend::FlushCaches() {
  if (capturing_) return FailedPrecondition("caches cannot be flushed inside a graph capture");
  TS_RETURN_IF_ERROR(Use());
  if (flush_buffer_ == nullptr) {
    const size_t l2 = props_.l2_bytes > 0 ? static_cast<size_t>(props_.l2_bytes) : size_t{64} << 20;
    flush_bytes_ = std::max<size_t>(2 * l2, size_t{16} << 20);
    TS_RETURN_IF_ERROR(GpuStatus(gpuMalloc(&flush_buffer_, flush_bytes_), "allocate the cache-flush buffer"));
  }
  flush_pattern_ = (flush_pattern_ + 1) & 0xff;
  return GpuStatus(gpuMemsetAsync(flush_buffer_, flush_pattern_, flush_bytes_, stream_), "flush caches");
}

Status CudaBackend::FlushTrace(uint64_t capture_id, KernelRun* captured) {
  if (cupti_ == nullptr) return OkStatus();
  // Always drained (also while the observer is not recording), so buffers do not pile up.
  Status s = cupti_->Flush([&](uint64_t id, int64_t begin, int64_t end,
                               const DeviceKernelInfo* info) {
    if (captured != nullptr && id == capture_id) {
      if (end > begin) {  // the device's own times replace the events'
        captured->begin_ns = begin;
        captured->end_ns = end;
        captured->device_timed = true;
        if (info != nullptr) captured->device = *info;
      }
      return;
    }
    auto it = pending_.find(id);
    if (it == pending_.end()) return;
    if (observer_ != nullptr) observer_->OnKernelTimes(it->second, begin, end, info);
    pending_.erase(it);
  });
  if (!s.ok()) {  // the trace loses times; the workload goes on
    std::fprintf(stderr, "tierscope: warning: %s\n", s.message().c_str());
  }
  return OkStatus();
}

void CudaBackend::SetObserver(BackendObserver* observer) {
  if (observer_ != nullptr && observer != observer_) {
    // The detached observer gets the times of everything it saw launched.
    if (Use().ok()) gpuStreamSynchronize(stream_);
    (void)FlushTrace();
    if (!pending_.empty()) {
      std::fprintf(stderr, "tierscope: warning: %zu launches got no device times from CUPTI\n",
                   pending_.size());
    }
    pending_.clear();
  }
  observer_ = observer;
  UpdateTracer();
}

void CudaBackend::SetLaunchHook(LaunchHook* hook) {
  hook_ = hook;
  UpdateTracer();
}

void CudaBackend::UpdateTracer() {
  if (observer_ == nullptr && hook_ == nullptr) {
    if (cupti_ != nullptr) {
      if (Use().ok()) gpuStreamSynchronize(stream_);
      (void)FlushTrace();
      pending_.clear();
      cupti_.reset();
    }
    return;
  }
  if (cupti_ != nullptr) return;
  StatusOr<std::unique_ptr<CuptiTracer>> t = CuptiTracer::Start();
  if (t.ok()) {
    cupti_ = std::move(*t);
  } else if (!cupti_warned_) {
    cupti_warned_ = true;
    std::fprintf(stderr,
                 "tierscope: warning: %s; kernel times come from CUDA events, one launch at a "
                 "time (they include the launch latency)\n",
                 t.status().message().c_str());
  }
}

StatusOr<KernelRun> CudaBackend::RunTimed(const LaunchDesc& desc,
                                          const std::function<Status(gpuStream_t)>& enqueue,
                                          int64_t* launch_begin_ns, int64_t* enqueued_ns) {
  const std::string what(desc.kernel);
  // Work queued before this launch (a restore, a cache flush, earlier kernels) finishes
  // first, outside the launch's span, so the events bracket this launch alone.
  TS_RETURN_IF_ERROR(GpuStatus(gpuStreamSynchronize(stream_), what));
  if (launch_begin_ns != nullptr) *launch_begin_ns = MonotonicNs();
  const uint64_t id = cupti_ != nullptr ? next_launch_id_++ : 0;
  TS_RETURN_IF_ERROR(GpuStatus(gpuEventRecord(start_, stream_), what));
  if (cupti_ != nullptr) cupti_->Push(id);
  Status s = enqueue(stream_);
  if (cupti_ != nullptr) cupti_->Pop();
  TS_RETURN_IF_ERROR(s);
  if (enqueued_ns != nullptr) *enqueued_ns = MonotonicNs();
  TS_RETURN_IF_ERROR(GpuStatus(gpuEventRecord(stop_, stream_), what));
  TS_RETURN_IF_ERROR(GpuStatus(gpuEventSynchronize(stop_), what));
  const int64_t end = MonotonicNs();
  float ms = 0;
  TS_RETURN_IF_ERROR(GpuStatus(gpuEventElapsedTime(&ms, start_, stop_), what));
  KernelRun run;
  run.end_ns = end;
  run.begin_ns = end - static_cast<int64_t>(static_cast<double>(ms) * 1e6);
  if (cupti_ != nullptr) TS_RETURN_IF_ERROR(FlushTrace(id, &run));
  return run;
}

Status CudaBackend::Launch(const LaunchDesc& desc,
                           const std::function<Status(gpuStream_t)>& enqueue) {
  if (desc.grid.count() <= 0) {
    return InvalidArgument("launch of " + std::string(desc.kernel) + " with an empty grid");
  }
  TS_RETURN_IF_ERROR(Use());
  if (hook_ != nullptr) {
    return hook_->OnLaunch(*this, desc,
                           [&]() -> StatusOr<KernelRun> { return RunTimed(desc, enqueue); });
  }
  if (observer_ == nullptr) return enqueue(stream_);
  if (cupti_ != nullptr) {  // asynchronous: the kernel's times arrive at the next flush
    const uint64_t id = next_launch_id_++;
    const int64_t launch_begin = MonotonicNs();
    cupti_->Push(id);
    Status s = enqueue(stream_);
    cupti_->Pop();
    TS_RETURN_IF_ERROR(s);
    const int64_t token = observer_->OnLaunchAsync(desc, launch_begin, MonotonicNs());
    if (token >= 0) pending_[id] = token;
    return OkStatus();
  }
  // CUDA-event timing: exact device time per launch, one launch at a time.
  int64_t launch_begin = 0, launch_end = 0;
  TS_ASSIGN_OR_RETURN(KernelRun run, RunTimed(desc, enqueue, &launch_begin, &launch_end));
  run.begin_ns = std::max(run.begin_ns, launch_begin);  // event and host clocks differ a little
  observer_->OnLaunch(desc, launch_begin, launch_end, run.begin_ns, run.end_ns, run.workers);
  return OkStatus();
}

}  // namespace tierscope
