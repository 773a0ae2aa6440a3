// safetensors: round trips, and every kind of corruption gives an error naming the
// file and tensor instead of a crash or an out-of-bounds read.
#include "model/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>

#include "test_util.h"

namespace tierscope {
namespace {

using testing::Contains;
using testing::TempDir;
using testing::WriteBytes;

std::string LE64(uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return s;
}

// A file with the given header JSON and data bytes.
std::string File(const std::string& header, const std::string& data) {
  return LE64(header.size()) + header + data;
}

std::string LoadError(const TempDir& dir, const std::string& bytes) {
  const std::string path = dir.file("model.safetensors");
  WriteBytes(path, bytes);
  auto r = LoadSafetensors(path);
  EXPECT_FALSE(r.ok());
  std::string msg = r.ok() ? "" : r.status().message();
  EXPECT_TRUE(Contains(msg, path)) << msg;
  return msg;
}

TEST(SafetensorsTest, WrittenFileReadsBackWithDtypesAndShapes) {
  TempDir dir;
  const float f[6] = {1, 2, 3, 4, 5, 6};
  const uint16_t h[2] = {0x3c00, 0x4000};
  std::vector<SafetensorsEntry> in = {
      {"a.weight", DType::kF32, {2, 3}, std::string(reinterpret_cast<const char*>(f), 24)},
      {"b", DType::kF16, {2}, std::string(reinterpret_cast<const char*>(h), 4)},
      {"c", DType::kBF16, {0}, ""}};
  ASSERT_TRUE(WriteSafetensors(dir.file("m.safetensors"), in).ok());
  auto m = LoadSafetensors(dir.file("m.safetensors"));
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  ASSERT_EQ(m->tensors.size(), 3u);
  const HostTensor& a = m->tensors.at("a.weight");
  EXPECT_EQ(a.dtype, DType::kF32);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(std::memcmp(a.data, f, 24), 0);
  EXPECT_EQ(m->tensors.at("b").dtype, DType::kF16);
  EXPECT_EQ(m->tensors.at("c").numel(), 0);
}

TEST(SafetensorsTest, FileShorterThanTheLengthPrefixIsTruncated) {
  TempDir dir;
  EXPECT_TRUE(Contains(LoadError(dir, "abc"), "truncated"));
}

TEST(SafetensorsTest, HeaderLengthPastTheEndIsAnError) {
  TempDir dir;
  EXPECT_TRUE(Contains(LoadError(dir, LE64(1000) + "{}"), "header length 1000"));
}

TEST(SafetensorsTest, HeaderThatIsNotJsonIsAnError) {
  TempDir dir;
  EXPECT_TRUE(Contains(LoadError(dir, File("{\"a\": [", "")), "not a valid JSON"));
}

TEST(SafetensorsTest, OffsetsPastTheDataNameTheTensor) {
  TempDir dir;
  std::string msg = LoadError(
      dir, File(R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})", std::string(8, '\0')));
  EXPECT_TRUE(Contains(msg, "tensor 'w'"));
  EXPECT_TRUE(Contains(msg, "past the end"));
}

TEST(SafetensorsTest, ByteCountThatDisagreesWithShapeIsAnError) {
  TempDir dir;
  std::string msg = LoadError(
      dir, File(R"({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}})", std::string(8, '\0')));
  EXPECT_TRUE(Contains(msg, "tensor 'w'"));
  EXPECT_TRUE(Contains(msg, "needs 12"));
}

TEST(SafetensorsTest, OverlappingTensorsAreAnError) {
  TempDir dir;
  std::string msg = LoadError(
      dir, File(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                   "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
                std::string(12, '\0')));
  EXPECT_TRUE(Contains(msg, "overlap"));
  EXPECT_TRUE(Contains(msg, "'a'"));
  EXPECT_TRUE(Contains(msg, "'b'"));
}

TEST(SafetensorsTest, UnknownDtypeNamesTheTensor) {
  TempDir dir;
  std::string msg = LoadError(
      dir, File(R"({"w": {"dtype": "F8_E4M3", "shape": [2], "data_offsets": [0, 2]}})", std::string(2, '\0')));
  EXPECT_TRUE(Contains(msg, "tensor 'w'"));
  EXPECT_TRUE(Contains(msg, "unknown dtype 'F8_E4M3'"));
}

TEST(SafetensorsTest, NegativeOrReversedOffsetsAreAnError) {
  TempDir dir;
  EXPECT_TRUE(Contains(LoadError(dir, File(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [8, 4]}})",
                                           std::string(8, '\0'))),
                       "bad data_offsets"));
  EXPECT_TRUE(Contains(LoadError(dir, File(R"({"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})",
                                           std::string(8, '\0'))),
                       "bad dimension"));
}

TEST(SafetensorsTest, MissingFileIsNotFound) {
  EXPECT_EQ(LoadSafetensors("/nonexistent/model.safetensors").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace tierscope

namespace tierscope {
namespace {

TEST(SafetensorsTest, AShapeWhoseByteSizeOverflowsIsAnError) {
  // 2^62 floats are 2^64 bytes, which wraps to 0 and so once matched offsets [0, 0].
  TempDir dir;
  const std::string msg = LoadError(
      dir, File(R"({"w":{"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,0]}})", ""));
  EXPECT_TRUE(Contains(msg, "tensor 'w'")) << msg;
  EXPECT_TRUE(Contains(msg, "too large")) << msg;
  // Dimensions whose product overflows say so too.
  const std::string two = LoadError(
      dir, File(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}})", ""));
  EXPECT_TRUE(Contains(two, "too large")) << two;
}

TEST(SafetensorsTest, MisalignedDataIsCopiedSoEveryElementReadsAligned) {
  // A header of odd length puts the data at an odd file offset: the F32 and F16 tensors
  // are misaligned in the mapping (the format allows it); their values must still come
  // back, from aligned memory.
  TempDir dir;
  const float w[3] = {1.5f, -2.25f, 3.0f};
  const uint16_t h[2] = {0x3c00, 0xc000};  // 1.0, -2.0 in FP16
  std::string data(reinterpret_cast<const char*>(w), sizeof(w));
  data += std::string(reinterpret_cast<const char*>(h), sizeof(h));
  std::string header = R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,12]},)"
                       R"("h":{"dtype":"F16","shape":[2],"data_offsets":[12,16]}})";
  if ((8 + header.size()) % 2 == 0) header += ' ';  // an odd data offset
  const std::string path = dir.file("model.safetensors");
  WriteBytes(path, File(header, data));
  auto r = LoadSafetensors(path);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->realigned, 2);
  const HostTensor& tw = r->tensors.at("w");
  ASSERT_EQ(reinterpret_cast<uintptr_t>(tw.data) % alignof(float), 0u);
  EXPECT_EQ(reinterpret_cast<const float*>(tw.data)[1], -2.25f);
  const HostTensor& th = r->tensors.at("h");
  ASSERT_EQ(reinterpret_cast<uintptr_t>(th.data) % alignof(uint16_t), 0u);
  EXPECT_EQ(reinterpret_cast<const uint16_t*>(th.data)[1], 0xc000);
}

}  // namespace
}  // namespace tierscope
