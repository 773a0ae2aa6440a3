// Status / StatusOr behaviour and the propagation macros.
#include "tierscope/status.h"

#include <gtest/gtest.h>

namespace tierscope {
namespace {

StatusOr<int> Half(int x) {
  if (x % 2) return InvalidArgument("odd: " + std::to_string(x));
  return x / 2;
}

StatusOr<int> Quarter(int x) {
  TS_ASSIGN_OR_RETURN(int h, Half(x));
  TS_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

Status CheckEven(int x) {
  TS_RETURN_IF_ERROR(Half(x).status());
  return OkStatus();
}

TEST(StatusTest, OkStatusHasNoMessage) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.ToString(), "ok");
}

TEST(StatusTest, ErrorCarriesCodeAndMessage) {
  Status s = DataLoss("file.bin: truncated");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_EQ(s.ToString(), "data loss: file.bin: truncated");
  EXPECT_EQ(s.WithContext("loading").message(), "loading: file.bin: truncated");
}

TEST(StatusTest, AssignOrReturnPropagatesTheFirstError) {
  EXPECT_EQ(*Quarter(8), 2);
  StatusOr<int> r = Quarter(6);  // 6/2 = 3 is odd
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "odd: 3");
  EXPECT_TRUE(CheckEven(4).ok());
  EXPECT_EQ(CheckEven(5).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tierscope
