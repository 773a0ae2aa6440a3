// Bus bandwidth factors: nccl-tests' formulas by collective and rank count.
#include "analysis/collective_bandwidth.h"

#include <gtest/gtest.h>

#include "trace_builder.h"

namespace tierscope {
namespace {

TEST(CollectiveBandwidth, BusFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(BusBandwidthFactor("allreduce", 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor("all_reduce", 2), 1.0);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor("_allgather_base", 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor("reduce_scatter", 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor("all_to_all", 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor("broadcast", 16), 1.0);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor("send", 2), 1.0);  // nccl-tests' sendrecv: busbw = algbw
  EXPECT_DOUBLE_EQ(BusBandwidthFactor("barrier", 2), 0);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor("allreduce", 0), 0);
}

TEST(CollectiveBandwidth, NcclSumGivesBusBandwidthAndFlagsWhatIsAboveTheLink) {
  // Two all-reduces of 64 MiB in BF16 over 8 H100s: 1 ms each is 67.1 GB/s algorithm and
  // 117.4 GB/s bus bandwidth (26% of 450 GB/s); 0.1 ms would be 1,174 GB/s: ABOVE the link.
  Builder b;
  b.trace().device_name = "NVIDIA H100 80GB HBM3";
  const std::string args = R"("Collective name": "allreduce", "In msg nelems": 33554432, "Out msg nelems": 33554432,
      "Group size": 8, "dtype": "BFloat16")";
  b.Launch("cudaLaunchKernel", "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 0, 5, 10, 1'000'000, 1);
  b.trace().events.back().args = b.trace().strings.Intern(args);
  b.Launch("cudaLaunchKernel", "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 2'000'000, 5, 2'000'010, 1'000'000, 2);
  b.trace().events.back().args = b.trace().strings.Intern(args);
  const TraceIndex x = BuildIndex(b.trace(), AnalysisOptions{});
  const Table t = NcclSumTable(x, std::nullopt);
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(std::get<int64_t>(t.rows[0][0]), 2);
  EXPECT_NEAR(std::get<double>(t.rows[0][5]), 67.108864, 1e-6);            // algbw, GB/s
  EXPECT_NEAR(std::get<double>(t.rows[0][6]), 67.108864 * 1.75, 1e-6);     // busbw
  EXPECT_NEAR(std::get<double>(t.rows[0][7]), 100 * 67.108864 * 1.75 / 450, 1e-6);
  Builder fast;
  fast.trace().device_name = "NVIDIA H100 80GB HBM3";
  fast.Launch("cudaLaunchKernel", "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 0, 5, 10, 100'000, 1);
  fast.trace().events.back().args = fast.trace().strings.Intern(args);
  const TraceIndex y = BuildIndex(fast.trace(), AnalysisOptions{});
  const Table above = NcclSumTable(y, std::nullopt);
  ASSERT_EQ(above.rows.size(), 1u);
  EXPECT_NE(std::get<std::string>(above.rows[0][7]).find("ABOVE"), std::string::npos);
  bool noted = false;
  for (const std::string& n : above.notes) noted |= n.find("ABOVE the link peak") != std::string::npos;
  EXPECT_TRUE(noted);
}

}  // namespace
}  // namespace tierscope
