// nvtx_sum and nvtx_kern_sum on hand-built traces: nested host ranges take every kernel
// their thread launched while they were open, another thread's ranges take none, device
// ranges take the kernels that started inside them on their stream.
#include "analysis/nvtx.h"

#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>
#include <tuple>

#include "analysis/trace_builder.h"

namespace tierscope {
namespace {

using Key = std::tuple<std::string, std::string, std::string>;  // range, side, kernel

std::map<Key, std::pair<int64_t, double>> Rows(const Table& t) {  // -> (kernel inst, total)
  std::map<Key, std::pair<int64_t, double>> out;
  for (const auto& r : t.rows) {
    out[{std::get<std::string>(r[0]), std::get<std::string>(r[1]), std::get<std::string>(r.back())}] = {
        std::get<int64_t>(r[3]), std::get<double>(r[4])};
  }
  return out;
}

TEST(Nvtx, KernelsAreProjectedOntoEveryRangeOpenAtTheirLaunch) {
  Builder b;
  b.Unit("outer", 0, 1000);
  b.Unit("inner", 100, 200);
  b.Unit("elsewhere", 0, 1000, /*tid=*/2);  // another thread: launches nothing here
  b.Launch("cudaLaunchKernel", "gemm", 150, 5, 400, 50, 1);     // outer + inner
  b.Launch("cudaLaunchKernel", "gemm", 300, 5, 500, 60, 2);     // at inner's end: both
  b.Launch("cudaLaunchKernel", "relu", 700, 5, 800, 10, 3);     // outer only
  b.Launch("cudaLaunchKernel", "relu", 1500, 5, 1600, 10, 4);   // no range
  b.Launch("cudaLaunchKernel", "copyk", 150, 5, 450, 7, 5, nullptr, EventKind::kKernel, 7, /*tid=*/3);
  b.DeviceRange("step", 390, 200);  // stream 7: gemm at 400 and 500, copyk at 450
  const TraceIndex x = BuildIndex(b.trace(), {});
  const auto rows = Rows(NvtxKernSum(x));
  const std::map<Key, std::pair<int64_t, double>> want = {
      {{"outer", "host", "gemm"}, {2, 110}}, {{"outer", "host", "relu"}, {1, 10}},
      {{"inner", "host", "gemm"}, {2, 110}}, {{"step", "device", "gemm"}, {2, 110}},
      {{"step", "device", "copyk"}, {1, 7}}};
  EXPECT_EQ(rows, want);

  const Table sum = NvtxSum(x);
  ASSERT_EQ(sum.columns.back(), "Range");
  std::map<std::string, std::string> side;
  for (const auto& r : sum.rows) side[std::get<std::string>(r.back())] = std::get<std::string>(r[r.size() - 2]);
  EXPECT_EQ(side, (std::map<std::string, std::string>{
                      {"outer", "host"}, {"inner", "host"}, {"elsewhere", "host"}, {"step", "device"}}));
}

TEST(Nvtx, OverlappingStartEndRangesEachTakeTheKernel) {
  // Start/end ranges need not nest: a launch inside two crossing ranges belongs to both;
  // one after the first ended belongs to the second only.
  Builder b;
  b.Unit("a", 0, 100);
  b.Unit("b", 50, 100);
  b.Launch("cudaLaunchKernel", "k", 60, 1, 200, 5, 1);
  b.Launch("cudaLaunchKernel", "k", 120, 1, 210, 5, 2);
  const auto rows = Rows(NvtxKernSum(BuildIndex(b.trace(), {})));
  EXPECT_EQ(rows.at({"a", "host", "k"}).first, 1);
  EXPECT_EQ(rows.at({"b", "host", "k"}).first, 2);
}

TEST(Nvtx, RangeKernelMapKeepsEachTripleOnceInTheOrderAdded) {
  RangeKernelMap m;
  m.At("step", "host", "gemm").kernels.Add(5);
  m.At("step", "device", "gemm").kernels.Add(7);
  m.At("fwd", "host", "gemm").range_instances = 3;
  m.At("step", "host", "gemm").kernels.Add(6);  // the same triple: one entry
  EXPECT_EQ(m.size(), 3u);
  std::vector<std::tuple<std::string, std::string, std::string, int64_t, int64_t>> seen;
  m.ForEach([&](std::string_view r, std::string_view side, std::string_view k, const RangeKernels& rk) {
    seen.emplace_back(std::string(r), std::string(side), std::string(k), rk.kernels.count, rk.range_instances);
  });
  using Row = std::tuple<std::string, std::string, std::string, int64_t, int64_t>;
  EXPECT_EQ(seen, (std::vector<Row>{Row{"step", "host", "gemm", 2, 0}, Row{"step", "device", "gemm", 1, 0},
                                    Row{"fwd", "host", "gemm", 0, 3}}));
  RangeKernelMap copy = m;  // a copy is its own
  copy.At("new", "host", "k");
  EXPECT_EQ(m.size(), 3u);
  EXPECT_EQ(copy.At("step", "host", "gemm").kernels.total_ns, 11);
  m.At("a", "s3", "k");
  m.At("a", "s4", "k");
  EXPECT_THROW(m.At("a", "s5", "k"), std::length_error);  // sides are few: host, device
}

TEST(Nvtx, ACompactedRangeKernelMapFindsItsEntriesAgainAndAddsAfterThem) {
  RangeKernelMap m;
  for (int i = 0; i < 1000; ++i) m.At("step#" + std::to_string(i), i % 2 ? "host" : "device", "k").kernels.Add(i);
  m.Compact();
  EXPECT_EQ(m.size(), 1000u);
  EXPECT_EQ(m.IndexOf("step#7", "host", "k"), 7u);  // found, not added again
  EXPECT_EQ(m.at(7).kernels.total_ns, 7);
  EXPECT_EQ(m.IndexOf("step#7", "device", "k"), 1000u);  // another side: a new entry, last
  m.At("step#999", "host", "k").kernels.Add(1);
  EXPECT_EQ(m.size(), 1001u);
  EXPECT_EQ(m.at(999).kernels.total_ns, 1000);
}

}  // namespace
}  // namespace tierscope
