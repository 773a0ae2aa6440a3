// The host readers: a CPU model name, data caches innermost first, the machine's
// last-level cache (on sysfs trees of one socket, two sockets and AMD's CCXs), available
// memory, and byte counts in binary units.
#include "core/cpu_info.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "test_util.h"

namespace tierscope {
namespace {

TEST(CpuInfo, BytesReadInBinaryUnits) {
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(48 << 10), "48 KiB");
  EXPECT_EQ(FormatBytes(1.5 * (1 << 30)), "1.5 GiB");
  EXPECT_EQ(FormatBytes(32.0 * (1 << 20)), "32 MiB");
}

TEST(CpuInfo, TheHostIsDescribed) {
  EXPECT_FALSE(CpuModelName().empty());
  int last = 0;
  for (const CacheLevel& c : CpuDataCaches()) {
    EXPECT_GE(c.level, last);  // innermost first
    EXPECT_GT(c.bytes, 0);
    EXPECT_GE(c.shared_by, 1);
    last = c.level;
  }
  // Linux always says how much memory is available.
  EXPECT_GT(AvailableMemoryBytes(), 0);
}

// A sysfs cpu/ tree: `cpus` CPUs, each with a 32 KiB L1d and L1i, a 1 MiB L2 of its own,
// and an L3 of `l3` per group of `per_l3` CPUs.
void WriteSysfs(const std::string& root, int cpus, int per_l3, const std::string& l3,
                bool online_list = true) {
  namespace fs = std::filesystem;
  if (online_list) testing::WriteBytes(root + "/online", "0-" + std::to_string(cpus - 1) + "\n");
  for (int c = 0; c < cpus; ++c) {
    const std::string me = std::to_string(c);
    const int first = c / per_l3 * per_l3;
    const std::string group = std::to_string(first) + "-" + std::to_string(first + per_l3 - 1);
    struct Index {
      const char *level, *type;
      std::string size, shared;
    };
    const Index idx[] = {{"1", "Data", "32K", me}, {"1", "Instruction", "32K", me},
                         {"2", "Unified", "1024K", me}, {"3", "Unified", l3, group}};
    for (int i = 0; i < 4; ++i) {
      const std::string dir = root + "/cpu" + me + "/cache/index" + std::to_string(i);
      fs::create_directories(dir);
      testing::WriteBytes(dir + "/level", std::string(idx[i].level) + "\n");
      testing::WriteBytes(dir + "/type", std::string(idx[i].type) + "\n");
      testing::WriteBytes(dir + "/size", idx[i].size + "\n");
      testing::WriteBytes(dir + "/shared_cpu_list", idx[i].shared + "\n");
    }
  }
}

TEST(CpuInfo, TheLastLevelCacheCountsEveryInstanceOnce) {
  constexpr int64_t kMiB = int64_t{1} << 20;
  testing::TempDir one, sockets, ccx, bare, unlisted;
  WriteSysfs(one.path(), 8, 8, "480M");  // one socket, one 480 MiB L3
  WriteSysfs(sockets.path(), 8, 4, "245760K");  // two sockets of 240 MiB
  WriteSysfs(ccx.path(), 16, 2, "32768K");      // AMD: eight CCXs of 32 MiB
  WriteSysfs(unlisted.path(), 4, 2, "16M", /*online_list=*/false);
  const LastLevelCache a = CpuLastLevelCache(one.path());
  EXPECT_EQ(a.level, 3);
  EXPECT_EQ(a.instances, 1);
  EXPECT_EQ(a.instance_bytes, 480 * kMiB);
  EXPECT_EQ(a.total_bytes, 480 * kMiB);
  const LastLevelCache b = CpuLastLevelCache(sockets.path());
  EXPECT_EQ(b.instances, 2);
  EXPECT_EQ(b.instance_bytes, 240 * kMiB);
  EXPECT_EQ(b.total_bytes, 480 * kMiB);
  const LastLevelCache c = CpuLastLevelCache(ccx.path());
  EXPECT_EQ(c.instances, 8);
  EXPECT_EQ(c.total_bytes, 256 * kMiB);
  const LastLevelCache d = CpuLastLevelCache(unlisted.path());  // cpu<N> directories found
  EXPECT_EQ(d.instances, 2);
  EXPECT_EQ(d.total_bytes, 32 * kMiB);
  const LastLevelCache none = CpuLastLevelCache(bare.path());
  EXPECT_EQ(none.level, 0);
  EXPECT_EQ(none.total_bytes, 0);
}

// On this host: the outermost of CPU 0's caches is one instance of the last level.
TEST(CpuInfo, TheHostsLastLevelCacheAgreesWithCpu0s) {
  const std::vector<CacheLevel> cpu0 = CpuDataCaches();
  const LastLevelCache llc = CpuLastLevelCache();
  if (cpu0.empty()) {
    EXPECT_EQ(llc.total_bytes, 0);
    return;
  }
  EXPECT_EQ(llc.level, cpu0.back().level);
  EXPECT_GE(llc.instance_bytes, cpu0.back().bytes);
  EXPECT_GE(llc.total_bytes, llc.instance_bytes);
  EXPECT_GE(llc.instances, 1);
}

}  // namespace
}  // namespace tierscope
