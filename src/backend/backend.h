// The narrow Backend interface: device memory with accounting, synchronisation, device
// properties, and the launch descriptor every kernel launch carries. Model code reaches
// kernels only through Kernels (kernels.h) and never includes a concrete backend.
#ifndef TIERSCOPE_BACKEND_BACKEND_H_
#define TIERSCOPE_BACKEND_BACKEND_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <string>
#include <string_view>
#include <vector>

#include "core/function_ref.h"
#include "core/tensor.h"
#include "tierscope/status.h"

namespace tierscope {

struct Dim3 {
  int64_t x = 1, y = 1, z = 1;
  int64_t count() const { return x * y * z; }
};

// A buffer a kernel writes.
struct MemRange {
  void* ptr = nullptr;
  size_t bytes = 0;
};

// What every kernel launch says about itself; profilers and tier 3 read it.
// CPU: grid = tasks (e.g. M-tiles x N-tiles), block = the work of one task.
struct LaunchDesc {
  std::string_view kernel;  // "cpu_sgemm_nt_f32_64x64_bias_gelu"
  Dim3 grid, block;
  double flops = 0;
  double bytes_read = 0;
  double bytes_written = 0;
  int64_t shared_bytes = 0;  // GPUs: shared memory per block, static + dynamic
  // The arithmetic pipe the FLOPs run on, which names the peak they are measured against
  // ("fp32_fma" or "bf16_dot").
  std::string_view pipe = "fp32_fma";
  // Every buffer the kernel writes (tier-3 replay saves and restores them).
  std::array<MemRange, 2> writes{};
};

struct DeviceProps {
  std::string name;          // "cpu: AMD EPYC (2 threads)", "cuda:0: NVIDIA H200 (132 SMs, sm_90)"
  std::string model;         // GPUs: the device's own name ("NVIDIA H200"), no ordinal
  std::string kind;          // "cpu" or "cuda"
  int compute_units = 1;     // CPU: worker threads
  int64_t total_memory = 0;  // bytes
  // GPUs: per streaming multiprocessor, and the architecture ("sm_90").
  int max_threads_per_unit = 0;
  int max_blocks_per_unit = 0;
  int regs_per_unit = 0;
  int64_t shared_per_unit = 0;
  int64_t reserved_shared_per_block = 0;  // what the runtime keeps of each block's share
  int warp_size = 0;
  int64_t l2_bytes = 0;
  std::string arch;
};

// Peaks a device measures with its own kernels (GPUs), FLOP/s and bytes/s.
struct DevicePeaks {
  double fp32_flops = 0;         // an FP32 FMA kernel over every SM
  double fp16_tensor_flops = 0;  // large FP16 / BF16 GEMMs on the tensor cores (FP32
  double bf16_tensor_flops = 0;  // accumulation, as the engine's GEMMs)
  double mem_bw = 0;             // a triad kernel over buffers far larger than L2
};

class Kernels;

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

// Live/peak bytes and allocation counts, the bookkeeping every backend's allocator
// shares (thread-safe).
class MemoryAccounting {
 public:
  // Both return the live bytes after the event.
  int64_t OnAllocate(size_t bytes) {
    const int64_t live = live_.fetch_add(static_cast<int64_t>(bytes)) + static_cast<int64_t>(bytes);
    int64_t peak = peak_.load();
    while (live > peak && !peak_.compare_exchange_weak(peak, live)) {
    }
    allocations_.fetch_add(1);
    return live;
  }
  int64_t OnFree(size_t bytes) {
    frees_.fetch_add(1);
    return live_.fetch_sub(static_cast<int64_t>(bytes)) - static_cast<int64_t>(bytes);
  }
  MemoryStats stats() const {
    return MemoryStats{live_.load(), peak_.load(), allocations_.load(), frees_.load()};
  }
  void ResetPeak() { peak_.store(live_.load()); }

 private:
  std::atomic<int64_t> live_{0}, peak_{0}, allocations_{0}, frees_{0};
};

// Freed blocks kept by (rounded) size and handed out again, as a caching allocator does,
// at most max_bytes in all (thread-safe). Shared by the CPU and CUDA backends.
class BlockCache {
 public:
  explicit BlockCache(size_t max_bytes) : max_bytes_(max_bytes) {}
  // A cached block of exactly `bytes`, or null.
  void* Take(size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = blocks_.find(bytes);
    if (it == blocks_.end() || it->second.empty()) return nullptr;
    void* p = it->second.back();
    it->second.pop_back();
    cached_bytes_ -= bytes;
    return p;
  }
  // Keeps `p`; false when that would pass max_bytes (the caller frees it then).
  bool Put(void* p, size_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    if (cached_bytes_ + bytes > max_bytes_) return false;
    blocks_[bytes].push_back(p);
    cached_bytes_ += bytes;
    return true;
  }
  // Bytes held for reuse.
  size_t cached_bytes() const {
    std::lock_guard<std::mutex> lock(mu_);
    return cached_bytes_;
  }
  // Frees every cached block with `free_block`.
  template <typename F>
  void ReleaseAll(F&& free_block) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [size, blocks] : blocks_) {
      for (void* p : blocks) free_block(p);
    }
    blocks_.clear();
    cached_bytes_ = 0;
  }

 private:
  mutable std::mutex mu_;
  std::unordered_map<size_t, std::vector<void*>> blocks_;
  size_t cached_bytes_ = 0;
  const size_t max_bytes_;
};

// Nanoseconds of a monotonic clock shared by the backend and the profiler.
int64_t MonotonicNs();

// A recorded sequence of launches (a CUDA graph), replayed as one.
class Graph {
 public:
  virtual ~Graph() = default;
};

class Backend : public Allocator {
 public:
  ~Backend() override = default;
  virtual const DeviceProps& props() const = 0;
  virtual Status CopyHostToDevice(void* dst, const void* src, size_t bytes) = 0;
  virtual Status CopyDeviceToHost(void* dst, const void* src, size_t bytes) = 0;
  // Waits until every launched kernel has finished.
  virtual Status Synchronize() = 0;
  // The op kernels of this backend.
  virtual Kernels& kernels() = 0;
  // Attaches (or with nullptr detaches) the observer. Not thread-safe against launches.
  virtual void SetObserver(BackendObserver* observer) = 0;
  // Attaches (or with nullptr detaches) a tier-3 launch hook. Not thread-safe against
  // launches.
  virtual void SetLaunchHook(LaunchHook* hook) = 0;
  // Graph capture: launches between BeginCapture and EndCapture are recorded, not run;
  // LaunchGraph replays them (same buffers, same shapes). Backends without graphs say so.
  virtual Status BeginCapture() { return Unimplemented(props().kind + " backend has no graphs"); }
  virtual StatusOr<std::unique_ptr<Graph>> EndCapture() {
    return Unimplemented(props().kind + " backend has no graphs");
  }
  virtual Status LaunchGraph(Graph& graph) {
    return Unimplemented(props().kind + " backend has no graphs");
  }
  // Evicts what kernels left in the device's caches (tier 3's --cache-control all): CPU,
  // writes over twice the last-level cache; GPU, a memset over twice L2.
  virtual Status FlushCaches() = 0;
  // Bytes new allocations can still get: the host's available memory (CPU) or the
  // device's free memory (GPU), plus what the allocator keeps cached for reuse; -1 when
  // unknown.
  virtual int64_t AvailableMemory() const = 0;
  // Measures the device's peaks with its own kernels (GPUs; ~1 s). The CPU's peaks are
  // measured by inspect/calibration.h instead, so the CPU backend says Unimplemented.
  virtual StatusOr<DevicePeaks> MeasurePeaks() {
    return Unimplemented(props().kind + " backend measures no peaks of its own");
  }
};

// Creates the CPU backend with `threads` workers (0: all hardware threads).
StatusOr<std::unique_ptr<Backend>> CreateCpuBackend(int threads);
// Creates the backend `device` names: "cpu", "cuda" (device 0) or "cuda:N" (also
// "musa[:N]" in a MUSA build). InvalidArgument for an unknown name, Unimplemented when
// this build has no GPU backend, FailedPrecondition when no such device is present.
StatusOr<std::unique_ptr<Backend>> CreateBackend(const std::string& device, int threads);
// True when this build has the CUDA (or MUSA) backend compiled in.
bool HaveGpuBackend();

}  // namespace tierscope

#endif  // TIERSCOPE_BACKEND_BACKEND_H_
