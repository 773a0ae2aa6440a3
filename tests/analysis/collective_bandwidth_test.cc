// Bus bandwidth factors: nccl-tests' formulas by collective and rank count.
#include "analysis/collective_bandwidth.h"

#include <gtest/gtest.h>

namespace tierscope {
namespace {

TEST(CollectiveBandwidth, BusFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(BusBandwidthFactor("allreduce", 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor("all_reduce", 2), 1.0);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor("_allgather_base", 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor("reduce_scatter", 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor("all_to_all", 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor("broadcast", 16), 1.0);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor("send", 2), 0);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor("allreduce", 0), 0);
}

}  // namespace
}  // namespace tierscope
