// How the GPU's FP32 peak kernel (calibrate.cu's FmaPeakKernel) is sized: a grid of
// several full residencies of 256-thread blocks on every SM, and FMA steps enough for one
// launch to take about 20 ms at the device's nominal FP32 rate (SMs x FP32 lanes x 2 x
// clock), so the whole measurement (peaks.cc: a warm-up, then the best of 5 batches of 2)
// stays near a quarter of a second on any device. Plain host arithmetic, tested without a
// GPU.
#ifndef TIERSCOPE_BACKEND_CUDA_FMA_PEAK_PLAN_H_
#define TIERSCOPE_BACKEND_CUDA_FMA_PEAK_PLAN_H_

#include <algorithm>
#include <cstdint>

namespace tierscope {

inline constexpr int kFmaPeakChains = 8;       // independent FMA chains a thread (calibrate.cu)
inline constexpr int kFmaPeakUnroll = 16;      // the kernel's #pragma unroll
inline constexpr int kFmaPeakThreads = 256;    // threads a block
inline constexpr int kFmaPeakWaves = 4;        // full residencies of every SM a launch
inline constexpr double kFmaPeakLaunchSeconds = 0.02;
inline constexpr int kFmaPeakLaunches = 11;    // peaks.cc: 1 warm-up + 5 trials x 2 runs
inline constexpr int kFmaPeakAssumedClockKhz = 2'000'000;  // when the device does not say

struct FmaPeakPlan {
  int blocks = 0;
  int threads = kFmaPeakThreads;
  int iters = 0;               // FMA steps of each chain
  double flops = 0;            // a launch's FLOPs: chains x 2 x iters a thread
  double nominal_flops = 0;    // the FP32 rate the plan assumed (FLOP/s)
  double launch_seconds = 0;   // one launch at that rate
};

// FP32 lanes per SM by compute capability (major * 10 + minor): 64 on sm_60, sm_7x and
// sm_80 (P100, V100, T4, A100), 128 on the others (sm_61, sm_86, sm_89, sm_90, sm_10x,
// sm_12x; and on a device this table does not know, so a launch is shorter, not longer).
inline int Fp32LanesPerSm(int cc) {
  if (cc == 60 || (cc >= 70 && cc <= 80)) return 64;
  return 128;
}

// The plan for a device of `sm_count` SMs of `max_threads_per_sm` threads, compute
// capability `cc` and clock `clock_khz` (0: unknown) for launches of `target_seconds`.
inline FmaPeakPlan PlanFmaPeak(int sm_count, int max_threads_per_sm, int cc, int clock_khz,
                               double target_seconds = kFmaPeakLaunchSeconds) {
  FmaPeakPlan plan;
  sm_count = std::max(sm_count, 1);
  const int resident = std::max(max_threads_per_sm / kFmaPeakThreads, 1);
  plan.blocks = sm_count * resident * kFmaPeakWaves;
  const double clock_hz = 1e3 * (clock_khz > 0 ? clock_khz : kFmaPeakAssumedClockKhz);
  plan.nominal_flops = static_cast<double>(sm_count) * Fp32LanesPerSm(cc) * 2.0 * clock_hz;
  const double thread_flops_per_iter = 2.0 * kFmaPeakChains;
  const double want = target_seconds * plan.nominal_flops /
                      (thread_flops_per_iter * plan.blocks * static_cast<double>(plan.threads));
  const int64_t steps = (static_cast<int64_t>(want) + kFmaPeakUnroll - 1) / kFmaPeakUnroll * kFmaPeakUnroll;
  plan.iters = static_cast<int>(std::clamp<int64_t>(steps, 16 * kFmaPeakUnroll, int64_t{1} << 24));
  plan.flops = thread_flops_per_iter * plan.iters * plan.blocks * static_cast<double>(plan.threads);
  plan.launch_seconds = plan.flops / plan.nominal_flops;
  return plan;
}

}  // namespace tierscope

#endif  // TIERSCOPE_BACKEND_CUDA_FMA_PEAK_PLAN_H_
