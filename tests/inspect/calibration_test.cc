// The CPU calibration's arithmetic: each peak kernel counts the operations its
// accumulators received (every variant this CPU runs), the triad's arrays are sized past
// the last-level cache (or say why not), and a measurement taken again keeps every best
// peak, INT8 included.
#include "inspect/calibration.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "core/cpu_info.h"
#include "core/text.h"
#include "inspect/peak_kernels.h"
#include "test_util.h"

namespace tierscope {
namespace {

using testing::Contains;

constexpr int64_t kMiB = int64_t{1} << 20;

const char* PipeName(PeakPipe p) {
  switch (p) {
    case PeakPipe::kFp32Fma: return "fp32_fma";
    case PeakPipe::kBf16Dot: return "bf16_dot";
    case PeakPipe::kInt8Dot: return "int8_dot";
  }
  return "?";
}

// Each kernel's count (2 per multiply-add) against the multiply-adds its accumulators
// gained on operands of 1, at two lengths (so a constant offset cannot pass either).
TEST(PeakKernels, EveryVariantThisCpuRunsCountsTheMultiplyAddsItDoes) {
  int ran = 0;
  for (const PeakKernel& listed : AllPeakKernels()) {
    const std::string what = std::string(PipeName(listed.pipe)) + " on " + listed.isa;
    StatusOr<PeakKernel> k = FindPeakKernel(listed.pipe, listed.isa);
    if (!k.ok()) {
      EXPECT_EQ(k.status().code(), StatusCode::kFailedPrecondition) << what;
      continue;  // this CPU cannot run it
    }
    const int64_t iters = listed.isa == "amx-int8" ? 200 : 1000;  // AMX: 65,536 MACs a pass
    double macs = -1, macs_twice = -1;
    const double counted = k->run(iters, &macs);
    const double counted_twice = k->run(2 * iters, &macs_twice);
    EXPECT_GT(macs, 0) << what;
    EXPECT_EQ(counted, 2 * macs) << what;
    EXPECT_EQ(counted_twice, 2 * macs_twice) << what;
    EXPECT_EQ(macs_twice, 2 * macs) << what;
    ++ran;
  }
  EXPECT_GE(ran, 1);  // the scalar FMA kernel runs everywhere
}

// The calibration measures the ISA the engine dispatches to: a kernel for each.
TEST(PeakKernels, TheHostsDispatchedVariantsHaveAPeakKernel) {
  EXPECT_TRUE(FindPeakKernel(PeakPipe::kFp32Fma, CpuVectorIsa()).ok()) << CpuVectorIsa();
  for (const std::string& isa : CpuInt8DotIsas()) {
    if (isa == "scalar") continue;  // no INT8 dot instruction: measured against FP32
    EXPECT_TRUE(FindPeakKernel(PeakPipe::kInt8Dot, isa).ok()) << isa;
  }
  EXPECT_EQ(FindPeakKernel(PeakPipe::kBf16Dot, "avx512_bf16").ok(),
            CpuRunsIsa("avx512f") && CpuHasFlag("avx512_bf16"));
  EXPECT_EQ(FindPeakKernel(PeakPipe::kInt8Dot, "sse9").status().code(), StatusCode::kNotFound);
}

TEST(TriadPlan, ArraysAreFourTimesTheWholeLastLevelCache) {
  const int64_t plenty = int64_t{256} << 30;
  // The README's host: one 480 MiB L3.
  const TriadPlan one = PlanTriad({3, 1, 480 * kMiB, 480 * kMiB}, plenty);
  EXPECT_GE(one.array_bytes, 4 * 480 * kMiB);
  EXPECT_GE(one.one_thread_bytes, 4 * 480 * kMiB);
  EXPECT_EQ(one.note, "");
  // Two sockets of 240 MiB: all threads see 480 MiB, one thread its socket's 240.
  const TriadPlan two = PlanTriad({3, 2, 240 * kMiB, 480 * kMiB}, plenty);
  EXPECT_GE(two.array_bytes, 4 * 480 * kMiB);
  EXPECT_GE(two.one_thread_bytes, 4 * 240 * kMiB);
  EXPECT_LT(two.one_thread_bytes, two.array_bytes);
  // AMD: eight CCXs of 32 MiB.
  const TriadPlan ccx = PlanTriad({3, 8, 32 * kMiB, 256 * kMiB}, plenty);
  EXPECT_GE(ccx.array_bytes, 4 * 256 * kMiB);
  EXPECT_GE(ccx.one_thread_bytes, 4 * 32 * kMiB);
  // A small cache: never under 64 MiB.
  const TriadPlan small = PlanTriad({3, 1, 8 * kMiB, 8 * kMiB}, plenty);
  EXPECT_EQ(small.array_bytes, 64 * kMiB);
  EXPECT_EQ(small.one_thread_bytes, 64 * kMiB);
  EXPECT_EQ(small.note, "");
  for (const TriadPlan& p : {one, two, ccx, small}) EXPECT_LE(3 * p.array_bytes, plenty / 2);
}

TEST(TriadPlan, ArraysTheCacheMayHoldSaySo) {
  const TriadPlan unknown = PlanTriad({}, int64_t{64} << 30);
  EXPECT_EQ(unknown.array_bytes, 256 * kMiB);
  EXPECT_TRUE(Contains(unknown.note, "last-level cache's size is unknown")) << unknown.note;
  EXPECT_TRUE(Contains(unknown.note, "may be cache bandwidth")) << unknown.note;
  // 2 GiB of memory cannot hold 3 arrays of 4 x 480 MiB: at most half of it, and a note.
  const int64_t avail = int64_t{2} << 30;
  const TriadPlan tight = PlanTriad({3, 1, 480 * kMiB, 480 * kMiB}, avail);
  EXPECT_LE(3 * tight.array_bytes, avail / 2);
  EXPECT_GT(tight.array_bytes, 0);
  EXPECT_LE(tight.one_thread_bytes, tight.array_bytes);
  EXPECT_TRUE(Contains(tight.note, "480 MiB last-level cache")) << tight.note;
  EXPECT_TRUE(Contains(tight.note, "may include cache bandwidth")) << tight.note;
  const TriadPlan no_meminfo = PlanTriad({3, 1, 480 * kMiB, 480 * kMiB}, -1);
  EXPECT_EQ(no_meminfo.array_bytes, 1024 * kMiB);
  EXPECT_TRUE(Contains(no_meminfo.note, "available memory is unknown")) << no_meminfo.note;
}

TEST(KeepBestPeaks, EveryPeakIsKeptIncludingInt8) {
  MachinePeaks low, high;
  double v = 1e9;
  for (double* f : {&high.fp32_flops, &high.fp32_flops_1t, &high.bf16_flops, &high.bf16_flops_1t,
                    &high.int8_ops, &high.int8_ops_1t, &high.fp16_tensor_flops, &high.bf16_tensor_flops,
                    &high.mem_bw, &high.mem_bw_1t}) {
    *f = (v += 1e9);
  }
  MachinePeaks p = low;
  EXPECT_TRUE(KeepBestPeaks(high, &p));
  EXPECT_EQ(p.ToJson(), high.ToJson());  // every figure the cache holds
  EXPECT_EQ(p.fp16_tensor_flops, high.fp16_tensor_flops);
  EXPECT_EQ(p.bf16_tensor_flops, high.bf16_tensor_flops);
  EXPECT_FALSE(KeepBestPeaks(low, &p));
  EXPECT_EQ(p.int8_ops, high.int8_ops);
  EXPECT_EQ(p.int8_ops_1t, high.int8_ops_1t);
}

class RemeasureTest : public testing::FreshCacheTest {};

// A machine busy while it measures again: INT8 (and every other peak) stays at its best.
TEST_F(RemeasureTest, AMeasurementAgainKeepsTheBestInt8Peak) {
  double scale = 1;
  PeakMeter meter;
  meter.measure = [&scale](int threads) -> StatusOr<MachinePeaks> {
    MachinePeaks p;
    p.threads = threads;
    p.fp32_flops = p.fp32_flops_1t = 100e9 * scale;
    p.int8_dot = "avx2";
    p.int8_ops = 400e9 * scale;
    p.int8_ops_1t = 200e9 * scale;
    p.mem_bw = p.mem_bw_1t = 10e9 * scale;
    p.trials = 7;
    p.measured_at = UtcNowIso8601();
    return p;
  };
  meter.probe = [](int) { return 0.0; };
  CpuBackend be(2);
  auto good = LoadOrMeasureDevicePeaks(be, true, meter);
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  scale = 0.25;
  auto again = RemeasurePeaks(be, *good, meter);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_DOUBLE_EQ(again->int8_ops, 400e9);
  EXPECT_DOUBLE_EQ(again->int8_ops_1t, 200e9);
  EXPECT_DOUBLE_EQ(again->fp32_flops, 100e9);
  auto cached = LoadOrMeasureDevicePeaks(be, false, meter);
  ASSERT_TRUE(cached.ok());
  EXPECT_TRUE(cached->from_cache);
  EXPECT_DOUBLE_EQ(cached->int8_ops, 400e9);
}

TEST(TimesFp32Peak, OnePeakAsAMultipleOfTheFp32FmaOneOrNothingWhenEitherIsUnknown) {
  EXPECT_EQ(TimesFp32Peak(86.0, 92.8), "0.93x the FP32 FMA peak");
  EXPECT_EQ(TimesFp32Peak(1600.0, 420.0), "3.81x the FP32 FMA peak");
  EXPECT_EQ(TimesFp32Peak(86.0, 0.0), "");
  EXPECT_EQ(TimesFp32Peak(0.0, 92.8), "");
  EXPECT_EQ(TimesFp32Peak(std::nan(""), 92.8), "");
  EXPECT_EQ(TimesFp32Peak(86.0, std::numeric_limits<double>::infinity()), "");
}

}  // namespace
}  // namespace tierscope
