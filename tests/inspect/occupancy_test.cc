// Theoretical occupancy against the CUDA occupancy calculator's answers on an
// H100/H200-class SM (2048 threads, 32 blocks, 64K registers, 228 KiB shared memory with
// 1 KiB reserved per block): each limiter in turn, the waves of a grid, and the cases the
// arithmetic cannot answer.
#include "inspect/occupancy.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace tierscope {
namespace {

DeviceProps Hopper() { return testing::HopperProps(); }

TEST(OccupancyTest, FullOccupancyIsLimitedByThreads) {
  auto o = TheoreticalOccupancy(Hopper(), Dim3{1056, 1, 1}, Dim3{256, 1, 1}, 32, 0);
  ASSERT_TRUE(o.has_value());
  EXPECT_EQ(o->blocks_per_unit, 8);
  EXPECT_EQ(o->warps_per_block, 8);
  EXPECT_DOUBLE_EQ(o->theoretical_pct, 100.0);
  EXPECT_EQ(o->limiter, "threads");
  EXPECT_DOUBLE_EQ(o->waves, 1.0);  // 1056 blocks = 132 SMs x 8
}

TEST(OccupancyTest, RegistersLimitResidency) {
  // 64 registers x 256 threads: 4 blocks, 50%; 128 registers: 2 blocks, 25%.
  auto half = TheoreticalOccupancy(Hopper(), Dim3{132, 1, 1}, Dim3{256, 1, 1}, 64, 0);
  ASSERT_TRUE(half.has_value());
  EXPECT_EQ(half->blocks_per_unit, 4);
  EXPECT_DOUBLE_EQ(half->theoretical_pct, 50.0);
  EXPECT_EQ(half->limiter, "registers");
  auto quarter = TheoreticalOccupancy(Hopper(), Dim3{132, 1, 1}, Dim3{256, 1, 1}, 128, 0);
  ASSERT_TRUE(quarter.has_value());
  EXPECT_EQ(quarter->blocks_per_unit, 2);
  EXPECT_DOUBLE_EQ(quarter->theoretical_pct, 25.0);
  // 255 registers round up to 8192 per warp: two warps per sub-partition.
  auto most = TheoreticalOccupancy(Hopper(), Dim3{1, 1, 1}, Dim3{128, 1, 1}, 255, 0);
  ASSERT_TRUE(most.has_value());
  EXPECT_EQ(most->blocks_per_unit, 2);
  EXPECT_DOUBLE_EQ(most->theoretical_pct, 12.5);
}

TEST(OccupancyTest, SharedMemoryAndBlockSlotsLimitResidency) {
  // 150 KiB + 1 KiB reserved: one block of 1024 threads, 50%.
  auto big = TheoreticalOccupancy(Hopper(), Dim3{264, 1, 1}, Dim3{1024, 1, 1}, 32, 150 * 1024);
  ASSERT_TRUE(big.has_value());
  EXPECT_EQ(big->blocks_per_unit, 1);
  EXPECT_EQ(big->limiter, "shared memory");
  EXPECT_DOUBLE_EQ(big->theoretical_pct, 50.0);
  EXPECT_DOUBLE_EQ(big->waves, 2.0);
  // 32-thread blocks: the SM's 32 block slots bind first, 1024 of 2048 threads.
  auto tiny = TheoreticalOccupancy(Hopper(), Dim3{1, 1, 1}, Dim3{32, 1, 1}, 16, 0);
  ASSERT_TRUE(tiny.has_value());
  EXPECT_EQ(tiny->blocks_per_unit, 32);
  EXPECT_EQ(tiny->limiter, "blocks");
  EXPECT_DOUBLE_EQ(tiny->theoretical_pct, 50.0);
}

TEST(OccupancyTest, OneBlockIsAFractionOfAWave) {
  // The study's serial GEMM: one block on the whole device.
  auto o = TheoreticalOccupancy(Hopper(), Dim3{1, 1, 1}, Dim3{256, 1, 1}, 32, 0);
  ASSERT_TRUE(o.has_value());
  EXPECT_DOUBLE_EQ(o->waves, 1.0 / (132 * 8));
}

TEST(OccupancyTest, UnanswerableCasesAreNullopt) {
  DeviceProps cpu;
  cpu.kind = "cpu";
  cpu.compute_units = 2;
  EXPECT_FALSE(TheoreticalOccupancy(cpu, Dim3{4, 1, 1}, Dim3{1, 1, 1}, 32, 0).has_value());
  EXPECT_FALSE(TheoreticalOccupancy(Hopper(), Dim3{4, 1, 1}, Dim3{256, 1, 1}, 0, 0).has_value());
  EXPECT_FALSE(TheoreticalOccupancy(Hopper(), Dim3{4, 1, 1}, Dim3{4096, 1, 1}, 32, 0).has_value());
  EXPECT_FALSE(TheoreticalOccupancy(Hopper(), Dim3{4, 1, 1}, Dim3{256, 1, 1}, 32, 300 * 1024).has_value());
}

}  // namespace
}  // namespace tierscope
