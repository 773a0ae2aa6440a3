// The flags every command shares (src/cli/common.cc): sizes as users write them.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "cli/command.h"

namespace tierscope::cli {
namespace {

TEST(ByteSize, EveryUnitIsReadInPowersOfTwo) {
  const int64_t gib = int64_t{1} << 30;
  // "4G" once read a dangling list of unit names and crashed.
  for (const char* text : {"4G", "4g", "4GB", "4GiB", "4gib", "4096M", "4194304K"}) {
    StatusOr<int64_t> v = ParseByteSize(text);
    ASSERT_TRUE(v.ok()) << text << ": " << v.status().ToString();
    EXPECT_EQ(*v, 4 * gib) << text;
  }
  EXPECT_EQ(*ParseByteSize("4000000000"), 4000000000);
  EXPECT_EQ(*ParseByteSize("512B"), 512);
  EXPECT_EQ(*ParseByteSize("1.5T"), 3 * (int64_t{1} << 39));
  EXPECT_EQ(*ParseByteSize("0.5MiB"), 512 * 1024);
}

TEST(ByteSize, WhatIsNotAPositiveSizeIsRefusedInOneLine) {
  for (const char* text : {"", "G", "abc", "4Q", "4 G", "-1G", "0", "0.1", "0.5B", "nan", "inf", "1e30T", "4GG"}) {
    StatusOr<int64_t> v = ParseByteSize(text);
    ASSERT_FALSE(v.ok()) << text;
    EXPECT_EQ(v.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_NE(v.status().message().find("--memory-budget: '" + std::string(text) + "'"), std::string::npos)
        << v.status().message();
    EXPECT_EQ(v.status().message().find('\n'), std::string::npos);
  }
}

}  // namespace
}  // namespace tierscope::cli
