// ParseDecimal and ParseSizeList: numbers written as a user writes them are read; hex, inf,
// nan, trailing text and sizes above the cap are refused, each saying which.
#include "core/text.h"

#include <gtest/gtest.h>

#include <string>

namespace tierscope {
namespace {

TEST(Text, ParseDecimalReadsWholeDecimalNumbers) {
  EXPECT_EQ(ParseDecimal("0.5"), 0.5);
  EXPECT_EQ(ParseDecimal("-2"), -2.0);
  EXPECT_EQ(ParseDecimal("+3"), 3.0);
  EXPECT_EQ(ParseDecimal("1e-3"), 1e-3);
  EXPECT_EQ(ParseDecimal(".25"), 0.25);
  EXPECT_EQ(ParseDecimal("7."), 7.0);
}

TEST(Text, ParseDecimalRefusesWhatIsNotADecimalNumber) {
  for (const char* bad : {"", " 1", "1 ", "0x10", "0x1p-1", "inf", "-inf", "nan", "infinity", "1e999", "1,5", "1.2.3",
                          "e", "-", "1e", "12G"}) {
    EXPECT_FALSE(ParseDecimal(bad).has_value()) << bad;
  }
}

TEST(Text, ParseSizeListSaysWhenASizeIsAboveTheCap) {
  EXPECT_EQ(*ParseSizeList("1000000", "--batch-sizes"), (std::vector<int64_t>{1'000'000}));
  for (const char* big : {"1000001", "99999999999999999999"}) {
    const auto r = ParseSizeList(big, "--batch-sizes");
    ASSERT_FALSE(r.ok()) << big;
    EXPECT_EQ(r.status().message(), std::string("--batch-sizes: '") + big + "' is above 1000000, the most it takes");
  }
  for (const char* bad : {"0", "-3", "1.5", "x", "0x10"}) {
    const auto r = ParseSizeList(bad, "--seq-lens");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().message(), std::string("--seq-lens: '") + bad + "' is not a positive integer");
  }
}

}  // namespace
}  // namespace tierscope
