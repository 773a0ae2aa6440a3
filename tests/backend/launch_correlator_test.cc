// The correlator between GPU activity records and launches, fed with fake records as
// CUPTI would deliver them: a launch's kernels found through its API calls' correlation
// ids, a library call's several kernels spanned with the longest one's info, a copy
// reached through either of its ids, and records of no launch dropped.
#include "backend/launch_correlator.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace tierscope {
namespace {

struct Delivered {
  int64_t begin = 0, end = 0;
  bool has_info = false;
  DeviceKernelInfo info;
};

std::map<uint64_t, Delivered> Drain(LaunchCorrelator& c) {
  std::map<uint64_t, Delivered> out;
  c.Drain([&](uint64_t id, int64_t begin, int64_t end, const DeviceKernelInfo* info) {
    Delivered d{begin, end, info != nullptr, info ? *info : DeviceKernelInfo{}};
    EXPECT_TRUE(out.emplace(id, d).second) << "launch " << id << " delivered twice";
  });
  return out;
}

DeviceKernelInfo Kernel(const std::string& name, int64_t grid_x) {
  DeviceKernelInfo k;
  k.name = name;
  k.grid = Dim3{grid_x, 1, 1};
  k.block = Dim3{128, 1, 1};
  k.registers_per_thread = 40;
  return k;
}

TEST(LaunchCorrelatorTest, ALibraryCallsKernelsAreSpannedWithTheLongestOnesInfo) {
  LaunchCorrelator c;
  // Launch 7 made two driver calls (correlation 11 and 12), each running a kernel.
  c.AddExternal(11, 7);
  c.AddExternal(12, 7);
  c.AddKernel(11, 1000, 1500, Kernel("splitk_reduce", 4));
  c.AddKernel(12, 1600, 4600, Kernel("sm90_xmma_gemm", 264));
  const auto got = Drain(c);
  ASSERT_EQ(got.size(), 1u);
  const Delivered& d = got.at(7);
  EXPECT_EQ(d.begin, 1000);
  EXPECT_EQ(d.end, 4600);
  ASSERT_TRUE(d.has_info);
  EXPECT_EQ(d.info.name, "sm90_xmma_gemm");
  EXPECT_EQ(d.info.grid.x, 264);
  EXPECT_EQ(d.info.kernels, 2);
  EXPECT_EQ(d.info.registers_per_thread, 40);
}

TEST(LaunchCorrelatorTest, LaunchesAreKeptApartAndCopiesHaveNoKernelInfo) {
  LaunchCorrelator c;
  c.AddExternal(21, 1);
  c.AddExternal(22, 2);
  c.AddExternal(23, 2);  // the runtime and the driver call of one copy: both in launch 2
  c.AddKernel(21, 10, 20, Kernel("ts_layer_norm_f32", 512));
  c.AddCopy(22, 30, 45);
  c.AddCopy(23, 30, 45);
  const auto got = Drain(c);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(got.at(1).has_info);
  EXPECT_EQ(got.at(1).info.kernels, 1);
  EXPECT_FALSE(got.at(2).has_info);
  EXPECT_EQ(got.at(2).begin, 30);
  EXPECT_EQ(got.at(2).end, 45);
}

TEST(LaunchCorrelatorTest, ALateRecordIsJoinedAtTheNextDrainThenUnmatchedOnesAreDropped) {
  LaunchCorrelator c;
  c.AddKernel(31, 0, 5, Kernel("someone_elses_kernel", 1));  // no external record
  c.AddExternal(32, 9);                                      // its kernel is not here yet
  c.AddExternal(33, 10);                                     // an API call with no work
  EXPECT_TRUE(Drain(c).empty());
  // The kernel CUPTI wrote after the first flush still finds its launch.
  c.AddKernel(32, 6, 8, Kernel("late", 1));
  const auto got = Drain(c);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got.at(9).info.name, "late");
  // Two drains unmatched: forgotten, so a record for 31 or 33 now joins nothing.
  c.AddExternal(31, 11);
  c.AddKernel(33, 9, 10, Kernel("too_late", 1));
  const auto third = Drain(c);
  EXPECT_TRUE(third.empty());
  // Delivered launches are forgotten too.
  c.AddKernel(32, 20, 30, Kernel("again", 1));
  EXPECT_TRUE(Drain(c).empty());
  EXPECT_TRUE(Drain(c).empty());
}

}  // namespace
}  // namespace tierscope
