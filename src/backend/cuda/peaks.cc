// CudaBackend::MeasurePeaks: the device's own peaks for tier 3's speed of light — an
// FP32 FMA kernel over every SM (sized by fma_peak_plan.h to ~20 ms a launch), FP16 and
// BF16 tensor-core GEMMs through cuBLASLt (the engine's GEMM path, FP32 accumulation) and
// a triad kernel over buffers far larger than L2. Each is the best of several event-timed
// batches of back-to-back runs, after one warm-up run. Buffers are the measurement's own
// (plain cudaMalloc, outside the workload's accounting).
#include <algorithm>
#include <cstdio>
#include <functional>
#include <limits>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/fma_peak_plan.h"
#include "backend/cuda/gemm.h"

namespace tierscope {
namespace {

// Device memory owned by the measurement.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (p_ != nullptr) gpuFree(p_);
  }
  Status Allocate(size_t bytes, const char* what) {
    return GpuStatus(gpuMalloc(&p_, bytes), std::string("peak measurement: allocate ") + what);
  }
  void* get() const { return p_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(p_);
  }

 private:
  void* p_ = nullptr;
};

constexpr int kTrials = 5;

}  // namespace

StatusOr<DevicePeaks> CudaBackend::MeasurePeaks() {
  if (capturing_) return FailedPrecondition("peaks cannot be measured inside a graph capture");
  if (hook_ != nullptr || observer_ != nullptr) {
    return FailedPrecondition("peaks are measured with no profiler or tier-3 hook attached");
  }
  TS_RETURN_IF_ERROR(Use());
  TS_RETURN_IF_ERROR(GpuStatus(gpuStreamSynchronize(stream_), "synchronize"));
  // The workload's freed blocks go back first: the measurement needs room of its own.
  cache_.ReleaseAll([](void* p) { gpuFree(p); });
  // Best seconds per run of kTrials event-timed batches of `reps` back-to-back runs of
  // `enqueue` (so the host's launch latency is paid once per batch), after a warm-up run.
  const auto best_seconds = [&](const char* what, int reps,
                                const std::function<Status()>& enqueue) -> StatusOr<double> {
    TS_RETURN_IF_ERROR(enqueue());
    TS_RETURN_IF_ERROR(GpuStatus(gpuStreamSynchronize(stream_), what));
    double best = std::numeric_limits<double>::infinity();
    for (int t = 0; t < kTrials; ++t) {
      TS_RETURN_IF_ERROR(GpuStatus(gpuEventRecord(start_, stream_), what));
      for (int r = 0; r < reps; ++r) TS_RETURN_IF_ERROR(enqueue());
      TS_RETURN_IF_ERROR(GpuStatus(gpuEventRecord(stop_, stream_), what));
      TS_RETURN_IF_ERROR(GpuStatus(gpuEventSynchronize(stop_), what));
      float ms = 0;
      TS_RETURN_IF_ERROR(GpuStatus(gpuEventElapsedTime(&ms, start_, stop_), what));
      if (ms > 0) best = std::min(best, static_cast<double>(ms) * 1e-3 / reps);
    }
    if (!(best < std::numeric_limits<double>::infinity())) {
      return Internal(std::string("peak measurement: ") + what + " was not timed");
    }
    return best;
  };
  DevicePeaks peaks;

  // FP32: several full residencies of 256-thread blocks on every SM, each launch about
  // 20 ms at the device's nominal rate (fma_peak_plan.h).
  {
    int clock_khz = 0;
    if (gpuDeviceGetAttribute(&clock_khz, gpuDevAttrClockRate, ordinal_) != gpuSuccess) {
      clock_khz = 0;
      (void)gpuGetLastError();  // not sticky: the kernel's launch must not report it
    }
    const FmaPeakPlan plan = PlanFmaPeak(sm_count_, max_threads_per_sm_, cc_, clock_khz);
    DeviceBuffer sink;
    TS_RETURN_IF_ERROR(sink.Allocate(sizeof(float) * static_cast<size_t>(plan.blocks), "the FMA sink"));
    TS_ASSIGN_OR_RETURN(const double s, best_seconds("FP32 FMA kernel", 2, [&] {
                          return GpuStatus(cuda::FmaPeak(stream_, sink.as<float>(), plan.blocks,
                                                         plan.threads, plan.iters),
                                           "FP32 FMA kernel");
                        }));
    peaks.fp32_flops = plan.flops / s;
  }

  // Tensor cores: square GEMMs as the engine runs them (y = x W^T, FP32 accumulation).
  {
    const int64_t n = props_.total_memory >= (int64_t{8} << 30) ? 8192 : 4096;
    const size_t bytes = static_cast<size_t>(n * n) * 2;
    DeviceBuffer x, w, y;
    TS_RETURN_IF_ERROR(x.Allocate(bytes, "the GEMM operands"));
    TS_RETURN_IF_ERROR(w.Allocate(bytes, "the GEMM operands"));
    TS_RETURN_IF_ERROR(y.Allocate(bytes, "the GEMM operands"));
    StatusOr<std::unique_ptr<LtGemm>> gemm = LtGemm::Create(*this);
    if (!gemm.ok()) {
      std::fprintf(stderr, "tierscope: warning: cuBLASLt: %s; FP16/BF16 GEMMs are measured "
                   "against the FP32 peak\n", gemm.status().message().c_str());
    }
    for (cuda::ElemType t : {cuda::ElemType::kF16, cuda::ElemType::kBF16}) {
      if (!gemm.ok()) break;
      const char* what = t == cuda::ElemType::kF16 ? "FP16 GEMM" : "BF16 GEMM";
      TS_RETURN_IF_ERROR(GpuStatus(cuda::FillRandom(stream_, t, x.get(), n * n, 1), what));
      TS_RETURN_IF_ERROR(GpuStatus(cuda::FillRandom(stream_, t, w.get(), n * n, 2), what));
      StatusOr<double> s = best_seconds(what, 3, [&] {
        return (*gemm)->Run(stream_, t, x.get(), n, n, w.get(), n, n, nullptr, y.get());
      });
      if (!s.ok()) {  // the pipe is then measured against the FP32 peak, with a warning
        std::fprintf(stderr, "tierscope: warning: %s: %s; its kernels are measured against the FP32 peak\n",
                     what, s.status().message().c_str());
        continue;
      }
      const double flops = 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) / *s;
      (t == cuda::ElemType::kF16 ? peaks.fp16_tensor_flops : peaks.bf16_tensor_flops) = flops;
    }
  }

  // Memory: three arrays, each at least 4x L2 (256 MiB where the device has room).
  {
    const int64_t l2 = std::max<int64_t>(props_.l2_bytes, int64_t{8} << 20);
    int64_t bytes = std::max<int64_t>(int64_t{256} << 20, 4 * l2);
    bytes = std::min<int64_t>(bytes, props_.total_memory / 8);
    const int64_t n = bytes / 16 * 4;  // floats, a multiple of 4
    DeviceBuffer a, b, c;
    TS_RETURN_IF_ERROR(a.Allocate(static_cast<size_t>(n) * 4, "the triad arrays"));
    TS_RETURN_IF_ERROR(b.Allocate(static_cast<size_t>(n) * 4, "the triad arrays"));
    TS_RETURN_IF_ERROR(c.Allocate(static_cast<size_t>(n) * 4, "the triad arrays"));
    TS_RETURN_IF_ERROR(GpuStatus(cuda::FillRandom(stream_, cuda::ElemType::kF32, b.get(), n, 3), "triad"));
    TS_RETURN_IF_ERROR(GpuStatus(cuda::FillRandom(stream_, cuda::ElemType::kF32, c.get(), n, 4), "triad"));
    const int blocks = sm_count_ * 8;
    TS_ASSIGN_OR_RETURN(const double s, best_seconds("triad kernel", 10, [&] {
                          return GpuStatus(cuda::Triad(stream_, a.as<float>(), b.as<float>(),
                                                       c.as<float>(), n, blocks),
                                           "triad kernel");
                        }));
    peaks.mem_bw = 12.0 * static_cast<double>(n) / s;
  }
  TS_RETURN_IF_ERROR(GpuStatus(gpuStreamSynchronize(stream_), "synchronize"));
  return peaks;
}

}  // namespace tierscope
