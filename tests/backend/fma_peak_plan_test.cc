// The GPU FP32 peak kernel's sizing, without a GPU: a grid of whole waves on every SM,
// a launch of about 20 ms at the device's nominal FP32 rate, the FLOPs counted as the
// kernel's loops do them, and the whole measurement well under 2 s on an H200.
#include "backend/cuda/fma_peak_plan.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace tierscope {
namespace {

struct Gpu {
  const char* name;
  int sms, threads_per_sm, cc, clock_khz;
  double fp32_flops;  // the datasheet's non-tensor FP32 peak
};

TEST(FmaPeakPlan, EachLaunchTakesAboutTwentyMillisecondsOnEveryWaveOfEverySm) {
  const DeviceProps hopper = testing::HopperProps();
  const Gpu gpus[] = {
      {"H200", hopper.compute_units, hopper.max_threads_per_unit, 90, 1'980'000, 66.9e12},
      {"A100", 108, 2048, 80, 1'410'000, 19.5e12},
      {"L4", 58, 1536, 89, 2'040'000, 30.3e12},
      {"T4", 40, 1024, 75, 1'590'000, 8.1e12},
  };
  for (const Gpu& g : gpus) {
    const FmaPeakPlan plan = PlanFmaPeak(g.sms, g.threads_per_sm, g.cc, g.clock_khz);
    // The grid: whole residencies of 256-thread blocks on every SM, several waves of them.
    const int resident = g.threads_per_sm / 256;
    EXPECT_EQ(plan.threads, 256) << g.name;
    EXPECT_EQ(plan.blocks % (g.sms * resident), 0) << g.name;
    EXPECT_GE(plan.blocks / (g.sms * resident), 2) << g.name;
    EXPECT_EQ(plan.iters % 16, 0) << g.name;  // the kernel's unroll
    // The FLOPs as the kernel does them: 8 chains of one FMA (2 FLOPs) per step, per thread.
    const double threads = static_cast<double>(plan.blocks) * plan.threads;
    EXPECT_EQ(plan.flops, threads * plan.iters * 8 * 2) << g.name;
    // The nominal rate is the datasheet's (within its rounding), so is the launch's time.
    EXPECT_NEAR(plan.nominal_flops / g.fp32_flops, 1.0, 0.02) << g.name;
    const double launch_s = plan.flops / g.fp32_flops;
    EXPECT_GT(launch_s, 0.015) << g.name;
    EXPECT_LT(launch_s, 0.03) << g.name;
  }
}

TEST(FmaPeakPlan, TheWholeMeasurementOnAnH200IsWellUnderTwoSeconds) {
  const DeviceProps h200 = testing::HopperProps();
  const FmaPeakPlan plan = PlanFmaPeak(h200.compute_units, h200.max_threads_per_unit, 90, 1'980'000);
  const double total_flops = plan.flops * kFmaPeakLaunches;
  EXPECT_LT(total_flops, 3e13);
  EXPECT_LT(total_flops / 66.9e12, 0.5);  // seconds at the H200's FP32 peak
  // Even at half the rated clock (power-capped), the launches stay under a second.
  EXPECT_LT(total_flops / (66.9e12 / 2), 1.0);
}

TEST(FmaPeakPlan, AnUnknownClockOrDeviceStillGivesABoundedLaunch) {
  const FmaPeakPlan unknown_clock = PlanFmaPeak(132, 2048, 90, 0);
  EXPECT_GT(unknown_clock.iters, 0);
  EXPECT_NEAR(unknown_clock.launch_seconds, kFmaPeakLaunchSeconds, 0.002);
  const FmaPeakPlan unknown_arch = PlanFmaPeak(32, 0, 0, 1'500'000);  // no threads-per-SM either
  EXPECT_EQ(unknown_arch.blocks, 32 * kFmaPeakWaves);
  EXPECT_GT(unknown_arch.flops, 0);
  EXPECT_LT(unknown_arch.launch_seconds, 2 * kFmaPeakLaunchSeconds);
}

}  // namespace
}  // namespace tierscope
