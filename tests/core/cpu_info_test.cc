// The host readers: a CPU model name, data caches innermost first, available memory,
// and byte counts in binary units.
#include "core/cpu_info.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace tierscope
