// SpillFile: blocks keep what was written after their pages leave memory, across regions;
// releasing them lowers the process's resident memory; a directory that cannot hold a
// file is a one-line error, a full file gives no more blocks and says why; only a disk's
// ext4 or xfs is spilled to by default.
#include "core/spill_file.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "test_util.h"

namespace tierscope {
namespace {

using testing::TempDir;

int64_t ResidentKib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  }
  return -1;
}

TEST(SpillFile, BlocksKeepTheirBytesAfterReleaseAndAcrossRegions) {
  TempDir dir;
  // 1 MiB regions, blocks of 384 KiB: two a region, the third starts a new mapping.
  auto f = SpillFile::Create(dir.path(), size_t{1} << 20);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  std::vector<char*> blocks;
  for (int b = 0; b < 7; ++b) {
    char* p = (*f)->Block(384 << 10);
    ASSERT_NE(p, nullptr);
    for (size_t i = 0; i < (384 << 10); ++i) p[i] = static_cast<char>((i * 31 + b) & 0xff);
    SpillFile::Release(p, 384 << 10);
    blocks.push_back(p);
  }
  (*f)->ReleaseAll();
  for (int b = 0; b < 7; ++b) {
    for (size_t i = 0; i < (384 << 10); i += 4093) {
      ASSERT_EQ(blocks[b][i], static_cast<char>((i * 31 + b) & 0xff)) << "block " << b << " byte " << i;
    }
  }
  EXPECT_EQ((*f)->bytes(), int64_t{3} * (1 << 20) + (384 << 10));  // 4 regions, the last with one block
  EXPECT_EQ((*f)->Block((1 << 20) + 1), nullptr);                 // larger than a region
  EXPECT_EQ((*f)->dir(), dir.path());
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));  // the file has no name
}

// Bytes written through the file read back through the mapping, and never became this
// process's resident memory; a write outside the file's blocks is refused, and stops it.
TEST(SpillFile, WrittenBytesReadBackThroughTheMapping) {
  TempDir dir;
  auto f = SpillFile::Create(dir.path(), size_t{1} << 20);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  constexpr size_t kBytes = size_t{1} << 20;
  std::vector<char*> blocks;
  std::vector<char> data(kBytes);
  const int64_t before = ResidentKib();
  for (int b = 0; b < 24; ++b) {  // 24 MiB across 24 regions
    char* p = (*f)->Block(kBytes);
    ASSERT_NE(p, nullptr);
    for (size_t i = 0; i < kBytes; ++i) data[i] = static_cast<char>((i * 7 + b) & 0xff);
    ASSERT_TRUE((*f)->Write(p + 4096, data.data() + 4096, kBytes - 4096)) << (*f)->error();
    blocks.push_back(p);
  }
  EXPECT_LT(ResidentKib() - before, 8 << 10);  // written, not resident here
  for (int b = 0; b < 24; ++b) {
    for (size_t i = 4096; i < kBytes; i += 4001) {
      ASSERT_EQ(blocks[b][i], static_cast<char>((i * 7 + b) & 0xff)) << "block " << b << " byte " << i;
    }
  }
  char outside[16] = {};
  EXPECT_FALSE((*f)->Write(outside, outside, sizeof(outside)));
  EXPECT_NE((*f)->error().find("outside"), std::string::npos) << (*f)->error();
  EXPECT_EQ((*f)->Block(4096), nullptr);
  EXPECT_FALSE((*f)->Write(blocks[0], data.data(), 16));
}

TEST(SpillFile, ReleasedPagesLeaveResidentMemory) {
  TempDir dir;
  auto f = SpillFile::Create(dir.path());
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  constexpr size_t kBytes = size_t{64} << 20;
  char* p = (*f)->Block(kBytes);
  ASSERT_NE(p, nullptr);
  const int64_t before = ResidentKib();
  std::memset(p, 0x5a, kBytes);
  const int64_t written = ResidentKib();
  SpillFile::Release(p, kBytes);
  const int64_t released = ResidentKib();
  EXPECT_GT(written - before, 48 << 10) << before << " " << written;
  EXPECT_GT(written - released, 48 << 10) << written << " " << released;
  EXPECT_EQ(p[kBytes - 1], 0x5a);  // paged in again from the file
}

TEST(SpillFile, ADirectoryThatCannotHoldAFileIsAOneLineError) {
  TempDir dir;
  for (const std::string& where : {dir.file("missing"), std::string("/proc/self")}) {
    auto f = SpillFile::Create(where);
    ASSERT_FALSE(f.ok()) << where;
    EXPECT_EQ(f.status().code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(f.status().message().find("cannot make a spill file in " + where + ": "), std::string::npos)
        << f.status().message();
    EXPECT_EQ(f.status().message().find('\n'), std::string::npos);
  }
}

// The file system type /proc/mounts gives the mount holding `path` (the longest mount
// point that is a prefix of it): an account independent of statfs.
std::string MountType(const std::string& path) {
  std::ifstream mounts("/proc/mounts");
  std::string line, best_point, best_type;
  while (std::getline(mounts, line)) {
    std::istringstream in(line);
    std::string device, point, type;
    in >> device >> point >> type;
    const bool under = path == point || point == "/" ||
                       (path.rfind(point, 0) == 0 && path.size() > point.size() && path[point.size()] == '/');
    if (under && point.size() >= best_point.size()) {
      best_point = point;
      best_type = type;
    }
  }
  return best_type;
}

TEST(SpillFile, OnlyADisksExt4OrXfsIsSpilledToByDefault) {
  TempDir dir;
  const std::string real = std::filesystem::canonical(dir.path()).string();
  const std::string type = MountType(real);
  const std::string why = SpillFile::WhyNotSpillIn(real);
  if (type == "ext4" || type == "ext3" || type == "ext2" || type == "xfs") {
    EXPECT_EQ(why, "") << real << " on " << type;
  } else {
    EXPECT_NE(why, "") << real << " on " << type;
  }
  if (MountType("/dev/shm") == "tmpfs") EXPECT_EQ(SpillFile::WhyNotSpillIn("/dev/shm"), "is in memory (tmpfs)");
  EXPECT_NE(SpillFile::WhyNotSpillIn("/proc").find("is on a file system (type 0x9fa0)"), std::string::npos);
  EXPECT_NE(SpillFile::WhyNotSpillIn(dir.file("missing")).find("cannot be read: "), std::string::npos);
}

TEST(SpillFile, AFullFileGivesNoMoreBlocksAndSaysWhy) {
  TempDir dir;
  // 1 MiB regions, at most 2 MiB: four blocks of 384 KiB (two a region), then none.
  auto f = SpillFile::Create(dir.path(), size_t{1} << 20, int64_t{2} << 20);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  for (int b = 0; b < 4; ++b) EXPECT_NE((*f)->Block(384 << 10), nullptr) << b;
  EXPECT_EQ((*f)->error(), "");
  EXPECT_EQ((*f)->Block(384 << 10), nullptr);
  EXPECT_EQ((*f)->error(), "the spill file in " + dir.path() + " reached its limit of 2097152 bytes");
  EXPECT_EQ((*f)->Block(4096), nullptr);  // none after, even one that would fit
}

TEST(SpillFile, TheDirectoryIsTheFlagsElseTheEnvironments) {
  testing::ScopedEnv spill_dir("TIERSCOPE_SPILL_DIR", nullptr);
  SetSpillDirectory("/some/where");
  EXPECT_EQ(SpillDirectory(), "/some/where");
  SetSpillDirectory("");
  {
    testing::ScopedEnv set("TIERSCOPE_SPILL_DIR", "/spill/here");
    EXPECT_EQ(SpillDirectory(), "/spill/here");
  }
  const char* tmp = std::getenv("TMPDIR");
  EXPECT_EQ(SpillDirectory(), tmp != nullptr && *tmp != '\0' ? std::string(tmp) : std::string("/tmp"));
}

}  // namespace
}  // namespace tierscope
