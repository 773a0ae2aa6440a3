// The GPU plugin loader end to end: `--device cuda` (or musa) with TIERSCOPE_GPU_PLUGIN pointing at a
// plugin from another build, at a library that is not a plugin, at a file that is not a
// library, and at nothing — each refused in one line naming the file and what is wrong.
#include <gtest/gtest.h>
#include <fstream>
#include <string>

#include "backend/backend.h"
#include "test_util.h"

namespace tierscope {
namespace {

using testing::Contains;
using testing::Result;
using testing::RunCli;

// Runs `device --device <this build's GPU kind>` with the plugin path set for the child only.
Result DeviceCudaWithPlugin(const std::string& plugin) {
  return RunCli(std::string("device --device ") + GpuKind(), "TIERSCOPE_GPU_PLUGIN='" + plugin + "'");
}

int Lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

TEST(GpuPluginTest, APluginFromAnotherBuildIsRefusedNamingBothBuilds) {
  Result r = DeviceCudaWithPlugin(FAKE_PLUGIN_OTHER_BUILD);
  EXPECT_NE(r.code, 0);
  EXPECT_TRUE(Contains(r.out, "was built by another build")) << r.out;
  EXPECT_TRUE(Contains(r.out, "OtherCompiler-1.0")) << r.out;
  EXPECT_TRUE(Contains(r.out, "rebuild or reinstall them together")) << r.out;
  EXPECT_EQ(Lines(r.out), 1) << r.out;
}

TEST(GpuPluginTest, ALibraryWithoutThePluginsSymbolsIsRefused) {
  Result r = DeviceCudaWithPlugin(FAKE_PLUGIN_NO_SYMBOLS);
  EXPECT_NE(r.code, 0);
  EXPECT_TRUE(Contains(r.out, "is not a tierscope GPU plugin")) << r.out;
  EXPECT_EQ(Lines(r.out), 1) << r.out;
}

TEST(GpuPluginTest, AFileThatIsNotALibrarySaysItCannotBeLoaded) {
  testing::TempDir dir;
  const std::string path = dir.file(std::string("libtierscope_") + GpuKind() + ".so");
  std::ofstream(path) << "not an ELF file\n";
  Result r = DeviceCudaWithPlugin(path);
  EXPECT_NE(r.code, 0);
  EXPECT_TRUE(Contains(r.out, path + " cannot be loaded")) << r.out;
  EXPECT_EQ(Lines(r.out), 1) << r.out;
}

TEST(GpuPluginTest, AMissingPluginSaysWhereItLooked) {
  Result r = DeviceCudaWithPlugin("/nonexistent/libtierscope_cuda.so");
  EXPECT_NE(r.code, 0);
  if (HaveGpuBackend()) {
    EXPECT_TRUE(Contains(r.out, "is missing (looked for /nonexistent/libtierscope_cuda.so)")) << r.out;
    EXPECT_TRUE(Contains(r.out, "set TIERSCOPE_GPU_PLUGIN")) << r.out;
  } else {
    EXPECT_TRUE(Contains(r.out, "built without it")) << r.out;
  }
  EXPECT_EQ(Lines(r.out), 1) << r.out;
}

}  // namespace
}  // namespace tierscope
