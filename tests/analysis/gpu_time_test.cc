// HTA's analyses on hand-built traces with known answers: the temporal breakdown and the
// exclusive time of each combination of kernel types, the overlap of communication with
// computation, idle gaps by cause, launch statistics and queue depth.
#include "analysis/gpu_time.h"

#include <gtest/gtest.h>

#include <cmath>

#include "analysis/trace_builder.h"

namespace tierscope {
namespace {

constexpr int kComp = 1 << static_cast<int>(KernelType::kComputation);
constexpr int kComm = 1 << static_cast<int>(KernelType::kCommunication);
constexpr int kMem = 1 << static_cast<int>(KernelType::kMemory);

TEST(GpuTime, KernelTypesFollowHtaAndNameTheNewCollectives) {
  EXPECT_EQ(ClassifyDeviceEvent(EventKind::kKernel, "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*)"),
            KernelType::kCommunication);
  EXPECT_EQ(ClassifyDeviceEvent(EventKind::kKernel, "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"),
            KernelType::kCommunication);
  EXPECT_EQ(ClassifyDeviceEvent(EventKind::kKernel, "void vllm::cross_device_reduce_1stage<c10::BFloat16, 8>"),
            KernelType::kCommunication);
  EXPECT_EQ(ClassifyDeviceEvent(EventKind::kKernel, "void c10d::symmetric_memory::multimem_all_reduce_kernel<16>"),
            KernelType::kCommunication);
  EXPECT_EQ(ClassifyDeviceEvent(EventKind::kKernel, "Memcpy DtoD (Device -> Device)"), KernelType::kMemory);
  EXPECT_EQ(ClassifyDeviceEvent(EventKind::kMemset, "anything"), KernelType::kMemory);
  EXPECT_EQ(ClassifyDeviceEvent(EventKind::kKernel, "cudaStreamSynchronizeKernel"), KernelType::kOther);
  EXPECT_EQ(ClassifyDeviceEvent(EventKind::kKernel, "void at::native::vectorized_elementwise_kernel<4>"),
            KernelType::kComputation);
  EXPECT_EQ(ClassifyDeviceEvent(EventKind::kKernel, "ampere_sgemm_128x64_nn"), KernelType::kComputation);
}

TEST(GpuTime, TemporalBreakdownAndTypeOverlapAreUnionsOverEveryStream) {
  Builder b;
  b.Launch("cudaLaunchKernel", "gemm", 0, 5, 100, 100, 1, nullptr, EventKind::kKernel, 7);  // [100, 200)
  b.Launch("cudaLaunchKernel", "gemm", 0, 5, 150, 100, 2, nullptr, EventKind::kKernel, 8);  // [150, 250)
  b.Launch("cudaLaunchKernel", "ncclDevKernel_AllReduce_Sum_f32", 0, 5, 200, 200, 3, nullptr, EventKind::kKernel, 9);
  b.Launch("cudaMemcpyAsync", "Memcpy HtoD", 0, 5, 500, 20, 4, nullptr, EventKind::kMemcpy, 7);
  const TraceIndex x = BuildIndex(b.trace(), {});
  const GpuTime g = AnalyzeGpuTime(x);
  ASSERT_TRUE(g.has_device_events);
  EXPECT_EQ(g.temporal.span_ns, 420);    // 100 .. 520
  EXPECT_EQ(g.temporal.busy_ns, 320);    // [100, 400) and [500, 520)
  EXPECT_EQ(g.temporal.idle_ns(), 100);
  EXPECT_EQ(g.temporal.compute_ns, 150);  // [100, 250)
  EXPECT_EQ(g.temporal.non_compute_ns(), 170);
  EXPECT_EQ(g.by_mask[kComp], 100);
  EXPECT_EQ(g.by_mask[kComp | kComm], 50);
  EXPECT_EQ(g.by_mask[kComm], 150);
  EXPECT_EQ(g.by_mask[kMem], 20);
  EXPECT_EQ(g.communication_ns, 200);
  EXPECT_EQ(g.overlap_ns, 50);
  EXPECT_DOUBLE_EQ(g.CommCompOverlapPct(), 25.0);
  EXPECT_EQ(g.kernels.at("gemm").count, 2);
  EXPECT_EQ(g.kernels.at("gemm").total_ns, 200);

  const Table t = TemporalBreakdownTable({{3, &g}});
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(std::get<int64_t>(t.rows[0][0]), 3);
  EXPECT_DOUBLE_EQ(std::get<double>(t.rows[0][5]), 23.81);  // idle 100 / 420
}

TEST(GpuTime, NoCommunicationMeansNoOverlapFigureAndNoDeviceMeansDashes) {
  Builder b;
  b.Launch("cudaLaunchKernel", "gemm", 0, 5, 100, 100, 1);
  const GpuTime g = AnalyzeGpuTime(BuildIndex(b.trace(), {}));
  EXPECT_TRUE(std::isnan(g.CommCompOverlapPct()));
  EXPECT_EQ(std::get<std::string>(CommCompOverlapTable({{0, &g}}).rows[0][3]), "-");
  Builder cpu_only;
  cpu_only.Op("aten::mm", 0, 10, 1);
  const GpuTime none = AnalyzeGpuTime(BuildIndex(cpu_only.trace(), {}));
  EXPECT_FALSE(none.has_device_events);
  EXPECT_EQ(std::get<std::string>(TemporalBreakdownTable({{0, &none}}).rows[0][5]), "-");
}

TEST(GpuTime, IdleGapsAreHostWaitKernelWaitOrOther) {
  Builder b;
  // Stream 7: k2 follows k1 after 5 us (kernel wait); k3's launch began after the stream
  // went idle (host wait, 75 us); k4 was launched early but starts 90 us later (other).
  b.Launch("cudaLaunchKernel", "k", 0, 1000, 0, 10'000, 1);
  b.Launch("cudaLaunchKernel", "k", 1000, 1000, 15'000, 10'000, 2);
  b.Launch("cudaLaunchKernel", "k", 90'000, 1000, 100'000, 10'000, 3);
  b.Launch("cudaLaunchKernel", "k", 50'000, 1000, 200'000, 10'000, 4);
  const GpuTime g = AnalyzeGpuTime(BuildIndex(b.trace(), {}));
  ASSERT_EQ(g.idle.size(), 1u);
  EXPECT_EQ(g.idle[0].stream, 7);
  EXPECT_EQ(g.idle[0].kernel_wait_ns, 5'000);
  EXPECT_EQ(g.idle[0].host_wait_ns, 75'000);
  EXPECT_EQ(g.idle[0].other_ns, 90'000);
  // Launches: every call lasted 1 us; k1..k4 started 0, 14, 9 and 149 us after their call ended.
  EXPECT_EQ(g.launch.launches, 4);
  EXPECT_DOUBLE_EQ(g.launch.cpu_ns.mean, 1000);
  EXPECT_DOUBLE_EQ(g.launch.delay_ns.max, 149'000);
  EXPECT_EQ(g.launch.long_delay, 1);
  EXPECT_EQ(g.launch.shorter_than_launch, 0);
  // Queue: +1 at each call, -1 at each start. Depth 0 on [0, 1000) (k1 started at once),
  // 1 on [1000, 15000) (k2 pending), 0, 1 on [50000, 90000) (k4), 2 on [90000, 100000)
  // (k3 too), 1 on [100000, 200000) (k4 again).
  ASSERT_EQ(g.queues.size(), 1u);
  EXPECT_EQ(g.queues[0].launches, 4);
  EXPECT_EQ(g.queues[0].max_depth, 2);
  const double weighted = 1.0 * 14'000 + 1.0 * 40'000 + 2.0 * 10'000 + 1.0 * 100'000;
  EXPECT_NEAR(g.queues[0].mean_depth, weighted / 200'000, 1e-9);
}

TEST(GpuTime, KernelTotalsSpreadIsExactForLargeEqualDurationsAndMerges) {
  KernelTotals a, b;
  for (int i = 0; i < 3; ++i) a.Add(645'678'983);  // nsys's MPI_Init, the same on every rank
  for (int i = 0; i < 2; ++i) b.Add(645'678'983);
  a.Merge(b);
  EXPECT_EQ(a.count, 5);
  EXPECT_EQ(a.stddev(), 0.0);
  KernelTotals c, d, whole;
  for (int64_t v : {1, 2, 3}) {
    c.Add(v);
    whole.Add(v);
  }
  for (int64_t v : {10, 20}) {
    d.Add(v);
    whole.Add(v);
  }
  c.Merge(d);
  EXPECT_NEAR(c.stddev(), whole.stddev(), 1e-12);
  EXPECT_NEAR(whole.stddev(), 7.981227976, 1e-9);  // numpy.std([1, 2, 3, 10, 20], ddof=1)
}

}  // namespace
}  // namespace tierscope
