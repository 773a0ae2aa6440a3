// .npy / .npz writers produce files in NumPy's format.
#include "core/npy.h"

#include <gtest/gtest.h>
#include <zip.h>

#include <cstring>

#include "test_util.h"

namespace tierscope {
namespace {

using testing::Contains;

TEST(NpyTest, HeaderIsAlignedAndDescribesFloat32CArray) {
  const float data[6] = {1, 2, 3, 4, 5, 6};
  std::string b = NpyBytes({2, 3}, data);
  ASSERT_GE(b.size(), 10u);
  EXPECT_EQ(b.substr(0, 6), "\x93NUMPY");
  const size_t hlen = static_cast<uint8_t>(b[8]) | (static_cast<uint8_t>(b[9]) << 8);
  EXPECT_EQ((10 + hlen) % 64, 0u);
  const std::string header = b.substr(10, hlen);
  EXPECT_TRUE(Contains(header, "'descr': '<f4'"));
  EXPECT_TRUE(Contains(header, "'shape': (2, 3)"));
  EXPECT_EQ(header.back(), '\n');
  ASSERT_EQ(b.size(), 10 + hlen + sizeof(data));
  EXPECT_EQ(std::memcmp(b.data() + 10 + hlen, data, sizeof(data)), 0);
}

TEST(NpyTest, OneDimensionalShapeHasTrailingComma) {
  const float data[3] = {0, 0, 0};
  EXPECT_TRUE(Contains(NpyBytes({3}, data), "'shape': (3,)"));
}

TEST(NpyTest, NpzHoldsOneMemberPerArray) {
  testing::TempDir dir;
  const float a[2] = {1, 2}, b[1] = {3};
  ASSERT_TRUE(WriteNpz(dir.file("x.npz"), {{"a", {2}, a}, {"b", {1, 1}, b}}).ok());
  int err = 0;
  zip_t* z = zip_open(dir.file("x.npz").c_str(), ZIP_RDONLY, &err);
  ASSERT_NE(z, nullptr);
  EXPECT_EQ(zip_get_num_entries(z, 0), 2);
  EXPECT_GE(zip_name_locate(z, "a.npy", 0), 0);
  EXPECT_GE(zip_name_locate(z, "b.npy", 0), 0);
  zip_close(z);
}

}  // namespace
}  // namespace tierscope
