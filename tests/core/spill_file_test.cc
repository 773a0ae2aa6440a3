// SpillFile: blocks keep what was written after their pages leave memory, across regions;
// releasing them lowers the process's resident memory; a directory that cannot hold a
// file is a one-line error; directories in memory are told apart from disks.
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

TEST(SpillFile, DirectoriesInMemoryAreToldApart) {
  TempDir dir;
  EXPECT_FALSE(SpillFile::InMemory(dir.file("missing")));
  // The usual tmpfs mounts /proc/mounts lists are in memory.
  std::ifstream mounts("/proc/mounts");
  std::string line;
  int checked = 0;
  while (std::getline(mounts, line)) {
    std::istringstream in(line);
    std::string device, point, type;
    in >> device >> point >> type;
    if (type == "tmpfs" && (point == "/dev/shm" || point == "/run" || point == "/tmp")) {
      EXPECT_TRUE(SpillFile::InMemory(point)) << point;
      ++checked;
    }
    if (point == "/proc") EXPECT_FALSE(SpillFile::InMemory(point));
  }
  EXPECT_GT(checked, 0) << "no tmpfs mounted: /dev/shm is one on Linux";
}

TEST(SpillFile, TheDirectoryIsTheFlagsElseTheEnvironments) {
  SetSpillDirectory("/some/where");
  EXPECT_EQ(SpillDirectory(), "/some/where");
  SetSpillDirectory("");
  setenv("TIERSCOPE_SPILL_DIR", "/spill/here", 1);
  EXPECT_EQ(SpillDirectory(), "/spill/here");
  unsetenv("TIERSCOPE_SPILL_DIR");
  const char* tmp = std::getenv("TMPDIR");
  EXPECT_EQ(SpillDirectory(), tmp != nullptr && *tmp != '\0' ? std::string(tmp) : std::string("/tmp"));
}

}  // namespace
}  // namespace tierscope
