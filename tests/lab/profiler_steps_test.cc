// The system-profiler check's comparison of two runs' hottest kernels: the same top, a tie
// within run-to-run drift either way, and a top the other run times well below its own.
#include "lab/profiler_steps.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace tierscope {
namespace {

using Times = std::map<std::string, double>;

TEST(CompareTops, TheSameTopAgreesWhateverTheOthersTimes) {
  const Times ours = {{"gemm", 100}, {"attention", 30}}, theirs = {{"gemm", 400}, {"attention", 10}};
  const TopComparison c = CompareTops("gemm", theirs, "gemm", ours);
  EXPECT_TRUE(c.agree);
  EXPECT_DOUBLE_EQ(c.in_ours, 1.0);
  EXPECT_DOUBLE_EQ(c.in_theirs, 1.0);
}

TEST(CompareTops, TwoTopsWithinDriftBothWaysAreATie) {
  // The Kineto run times attention at 0.84 of gemm; the export times gemm at 0.9 of attention.
  const Times ours = {{"gemm", 100}, {"attention", 84}}, theirs = {{"gemm", 90}, {"attention", 100}};
  const TopComparison c = CompareTops("attention", theirs, "gemm", ours);
  EXPECT_TRUE(c.agree);
  EXPECT_DOUBLE_EQ(c.in_ours, 0.84);
  EXPECT_DOUBLE_EQ(c.in_theirs, 0.9);
}

TEST(CompareTops, ATopTheOtherRunTimesBeyondDriftDisagreesEitherWay) {
  const Times ours = {{"gemm", 100}, {"attention", 84}};
  // The export's top is 0.84 of the Kineto top there, but the export times gemm at 0.5 of it.
  EXPECT_FALSE(CompareTops("attention", Times{{"gemm", 50}, {"attention", 100}}, "gemm", ours).agree);
  // The export ties them, but the Kineto run times its rival at 0.6 of its top.
  const TopComparison c =
      CompareTops("attention", Times{{"gemm", 95}, {"attention", 100}}, "gemm", {{"gemm", 100}, {"attention", 60}});
  EXPECT_FALSE(c.agree);
  EXPECT_DOUBLE_EQ(c.in_ours, 0.6);
  // Exactly at the drift's edge (0.8) is a tie.
  EXPECT_TRUE(CompareTops("attention", Times{{"gemm", 80}, {"attention", 100}}, "gemm",
                          {{"gemm", 100}, {"attention", 80}}).agree);
}

TEST(CompareTops, AKernelOneRunNeverRanOrNoKernelsAtAllNeverAgree) {
  const Times ours = {{"gemm", 100}};
  const TopComparison c = CompareTops("saxpy", Times{{"saxpy", 100}, {"gemm", 99}}, "gemm", ours);
  EXPECT_FALSE(c.agree);
  EXPECT_DOUBLE_EQ(c.in_ours, 0.0);
  EXPECT_FALSE(CompareTops("", Times{}, "gemm", ours).agree);
  EXPECT_FALSE(CompareTops("gemm", Times{{"gemm", 0}}, "", Times{}).agree);
}

}  // namespace
}  // namespace tierscope
