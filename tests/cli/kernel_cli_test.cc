// `tierscope kernel` and `tierscope device` end to end: the report file, the sections on
// an Nsight Compute CSV and on a tier-2 trace, and exit code 2 with the valid choices for
// a bad kernel name, count or section.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "test_util.h"

namespace tierscope {
namespace {

using testing::Contains;
using testing::RunCli;
using testing::TempDir;

class KernelCliTest : public testing::FreshCacheTest {};

const char kWorkload[] = "--batch-size 2 --seq-len 16 --warmup 0 --iterations 1 --threads 2";

TEST_F(KernelCliTest, ListSectionsNamesEachOnce) {
  auto r = RunCli("kernel --list-sections");
  EXPECT_EQ(r.code, 0);
  for (const char* s : {"LaunchStats", "SpeedOfLight", "MemoryWorkloadAnalysis"}) {
    EXPECT_TRUE(Contains(r.out, s)) << r.out;
  }
}

TEST_F(KernelCliTest, WritesOneJsonReportAndATextView) {
  TempDir dir;
  const std::string path = dir.file("k.json");
  auto r = RunCli(std::string("kernel ") + kWorkload +
                  " -k regex:layer_norm -c 2 --replay-passes 4 --cache-control none"
                  " --section SpeedOfLight -o " + path);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "Section: Speed Of Light Throughput"));
  EXPECT_FALSE(Contains(r.out, "Section: Launch Statistics"));
  const auto j = nlohmann::json::parse(testing::ReadBytes(path));
  ASSERT_EQ(j["reports"].size(), 2u);
  EXPECT_EQ(j["reports"][0]["passes"], 4);
  EXPECT_EQ(j["filter"]["cache_control"], "none");
  EXPECT_TRUE(j["workload"].contains("checksum"));
  EXPECT_GT(j["launches"].get<int64_t>(), 2);
}

TEST_F(KernelCliTest, BadRequestsExitTwoAndListTheChoices) {
  auto name = RunCli(std::string("kernel ") + kWorkload + " -k cpu_no_such_kernel");
  EXPECT_EQ(name.code, 2);
  EXPECT_TRUE(Contains(name.out, "the kernels it launched are:")) << name.out;
  EXPECT_TRUE(Contains(name.out, "cpu_attn_softmax_f32_q32")) << name.out;
  auto count = RunCli(std::string("kernel ") + kWorkload + " -k regex:gemm -c 0");
  EXPECT_EQ(count.code, 2);
  EXPECT_TRUE(Contains(count.out, "--launch-count must be at least 1")) << count.out;
  auto section = RunCli(std::string("kernel ") + kWorkload + " -k regex:gemm --section Occupancy");
  EXPECT_EQ(section.code, 2);
  EXPECT_TRUE(Contains(section.out, "LaunchStats, SpeedOfLight, MemoryWorkloadAnalysis")) << section.out;
  auto none = RunCli("kernel");
  EXPECT_EQ(none.code, 2);
  EXPECT_TRUE(Contains(none.out, "-k NAME")) << none.out;
}

// The ncu CSV of the analyzer's tests: a memory-bound add and a GEMM.
const char kNcuCsv[] =
    "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\","
    "\"Block Size\",\"Grid Size\",\"Device\",\"CC\",\"Section Name\",\"Metric Name\",\"Metric Unit\","
    "\"Metric Value\"\n"
    "\"0\",\"1\",\"python\",\"h\",\"add_kernel\",\"1\",\"7\",\"(128, 1, 1)\",\"(16384, 1, 1)\",\"0\","
    "\"9.0\",\"GPU Speed Of Light Throughput\",\"Duration\",\"usecond\",\"14.05\"\n"
    "\"0\",\"1\",\"python\",\"h\",\"add_kernel\",\"1\",\"7\",\"(128, 1, 1)\",\"(16384, 1, 1)\",\"0\","
    "\"9.0\",\"GPU Speed Of Light Throughput\",\"Memory Throughput\",\"%\",\"91.27\"\n"
    "\"0\",\"1\",\"python\",\"h\",\"add_kernel\",\"1\",\"7\",\"(128, 1, 1)\",\"(16384, 1, 1)\",\"0\","
    "\"9.0\",\"GPU Speed Of Light Throughput\",\"Compute (SM) Throughput\",\"%\",\"12.84\"\n"
    "\"0\",\"1\",\"python\",\"h\",\"add_kernel\",\"1\",\"7\",\"(128, 1, 1)\",\"(16384, 1, 1)\",\"0\","
    "\"9.0\",\"Launch Statistics\",\"Waves Per SM\",\"\",\"7.76\"\n"
    "\"1\",\"1\",\"python\",\"h\",\"sgemm_1x1\",\"1\",\"7\",\"(256, 1, 1)\",\"(1, 1, 1)\",\"0\","
    "\"9.0\",\"GPU Speed Of Light Throughput\",\"Compute (SM) Throughput\",\"%\",\"1.2\"\n"
    "\"1\",\"1\",\"python\",\"h\",\"sgemm_1x1\",\"1\",\"7\",\"(256, 1, 1)\",\"(1, 1, 1)\",\"0\","
    "\"9.0\",\"Launch Statistics\",\"Waves Per SM\",\"\",\"0.02\"\n";

TEST_F(KernelCliTest, NcuCsvGivesTheSameSectionsAndSaysWhatIsMissing) {
  TempDir dir;
  testing::WriteBytes(dir.file("r.csv"), kNcuCsv);
  auto r = RunCli("kernel --ncu-csv " + dir.file("r.csv") + " -o " + dir.file("k.json"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "(not in this CSV)"));
  const auto j = nlohmann::json::parse(testing::ReadBytes(dir.file("k.json")));
  ASSERT_EQ(j["reports"].size(), 2u);
  // The one-block GEMM: the study's case, answered at a higher tier.
  EXPECT_EQ(j["reports"][1]["recommendation"]["checks"][0]["ok"], false);
  EXPECT_TRUE(Contains(j["reports"][1]["recommendation"]["verdict"].get<std::string>(), "higher tier"));
  // The add fills the GPU but the CSV cannot say whether it is a hot spot.
  EXPECT_EQ(j["reports"][0]["recommendation"]["checks"][0]["ok"], true);
  EXPECT_TRUE(j["reports"][0]["recommendation"]["checks"][1]["ok"].is_null());
  auto one = RunCli("kernel --ncu-csv " + dir.file("r.csv") + " -k sgemm_1x1 -o " + dir.file("k.json"));
  ASSERT_EQ(one.code, 0) << one.out;
  EXPECT_FALSE(Contains(one.out, "add_kernel"));
  auto bad = RunCli("kernel --ncu-csv " + dir.file("r.csv") + " -k nope -o " + dir.file("k.json"));
  EXPECT_EQ(bad.code, 2);
  EXPECT_TRUE(Contains(bad.out, "sgemm_1x1")) << bad.out;
  // A CSV cut short: what it read is reported, and that rows were skipped is said first.
  const std::string csv = kNcuCsv;
  testing::WriteBytes(dir.file("cut.csv"), csv.substr(0, csv.rfind("\n\"", csv.size() - 2) + 6));  // inside a field
  auto cut = RunCli("kernel --ncu-csv " + dir.file("cut.csv") + " -o " + dir.file("k.json"));
  ASSERT_EQ(cut.code, 0) << cut.out;
  EXPECT_EQ(cut.out.rfind("note: " + dir.file("cut.csv") + ": 1 malformed row(s) skipped (first: line ", 0), 0u)
      << cut.out;
  const auto cj = nlohmann::json::parse(testing::ReadBytes(dir.file("k.json")));
  EXPECT_EQ(cj["input_notes"].size(), 1u) << cj.dump();
}

TEST_F(KernelCliTest, ATierTwoTraceFeedsLaunchStatsFromItsKernelArgs) {
  TempDir dir;
  const std::string trace = dir.file("t.json");
  testing::WriteBytes(trace, R"({"deviceProperties": [{"name": "Test GPU", "numSms": 56}],
    "traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "gemm_small", "pid": 0, "tid": 7, "ts": 10, "dur": 30,
     "args": {"correlation": 1, "grid": [1, 1, 1], "block": [256, 1, 1]}},
    {"ph": "X", "cat": "kernel", "name": "gemm_small", "pid": 0, "tid": 7, "ts": 50, "dur": 31,
     "args": {"correlation": 2, "grid": [1, 1, 1], "block": [256, 1, 1]}},
    {"ph": "X", "cat": "kernel", "name": "gemm_small", "pid": 0, "tid": 7, "ts": 90, "dur": 30,
     "args": {"correlation": 3, "grid": [1, 1, 1], "block": [256, 1, 1]}},
    {"ph": "X", "cat": "kernel", "name": "elementwise", "pid": 0, "tid": 7, "ts": 130, "dur": 2,
     "args": {"correlation": 4, "grid": [512, 1, 1], "block": [128, 1, 1]}}]})");
  auto r = RunCli("kernel --from-trace " + trace + " -o " + dir.file("k.json"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(Contains(r.out, "gemm_small (1, 1, 1)x(256, 1, 1)")) << r.out;
  EXPECT_TRUE(Contains(r.out, "1 blocks for 56 SMs")) << r.out;
  EXPECT_TRUE(Contains(r.out, "(not in this trace)")) << r.out;
  EXPECT_TRUE(Contains(r.out, "higher tier")) << r.out;
}

// ncu profiles one launch; the same workload's trace times them all: together they give
// the rule its stable-hot-spot evidence, and DRAM bytes (--print-units base) feed the
// memory side. A CSV kernel missing from the trace is an error naming both.
TEST_F(KernelCliTest, NcuCsvWithTheRunsTraceGainsShareSpreadAndDramBytes) {
  TempDir dir;
  const std::string row = "\"0\",\"1\",\"python\",\"h\",\"gemm_big\",\"1\",\"7\",\"(128, 1, 1)\",\"(264, 1, 1)\",\"0\",\"9.0\",";
  testing::WriteBytes(dir.file("r.csv"),
                      std::string(kNcuCsv, sizeof(kNcuCsv) - 1).substr(0, std::string(kNcuCsv).find('\n') + 1) +
                          row + "\"GPU Speed Of Light Throughput\",\"Duration\",\"ns\",\"20000\"\n" +
                          row + "\"GPU Speed Of Light Throughput\",\"Compute (SM) Throughput\",\"%\",\"31.5\"\n" +
                          row + "\"GPU Speed Of Light Throughput\",\"Memory Throughput\",\"%\",\"22.0\"\n" +
                          row + "\"Command line profiler metrics\",\"dram__bytes_read.sum\",\"byte\",\"4,000,000\"\n" +
                          row + "\"Command line profiler metrics\",\"dram__bytes_write.sum\",\"byte\",\"1,000,000\"\n");
  const std::string trace = dir.file("t.json");
  std::string events;
  for (int i = 0; i < 4; ++i) {
    events += R"({"ph": "X", "cat": "kernel", "name": "gemm_big", "pid": 0, "tid": 7, "ts": )" +
              std::to_string(100 * i) + R"(, "dur": 20, "args": {"correlation": )" + std::to_string(i + 1) + "}},";
  }
  testing::WriteBytes(trace, R"({"deviceProperties": [{"name": "Test GPU", "numSms": 132}], "traceEvents": [)" +
                                 events +
                                 R"({"ph": "X", "cat": "kernel", "name": "small", "pid": 0, "tid": 7, "ts": 500,
                                     "dur": 5, "args": {"correlation": 9}}]})");
  auto r = RunCli("kernel --ncu-csv " + dir.file("r.csv") + " --from-trace " + trace + " -o " + dir.file("k.json"));
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(testing::ReadBytes(dir.file("k.json")));
  ASSERT_EQ(j["reports"].size(), 1u);
  EXPECT_EQ(j["trace"], trace);
  const auto& rep = j["reports"][0];
  EXPECT_TRUE(Contains(rep["source"].get<std::string>(), "over 4 launches")) << rep["source"];
  const auto& hot = rep["recommendation"]["checks"][1];
  EXPECT_EQ(hot["check"], "stable hot spot");
  EXPECT_EQ(hot["ok"], true) << hot;  // 80 of 85 us, no spread
  EXPECT_TRUE(Contains(hot["evidence"].get<std::string>(), "94.1% of kernel time (rank 1)")) << hot;
  EXPECT_TRUE(Contains(r.out, "5.00e+06")) << r.out;  // the DRAM bytes, read + written
  // A trace of another workload: the CSV's kernel is not in it.
  const std::string other = dir.file("o.json");
  testing::WriteBytes(other, R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "small", "pid": 0, "tid": 7,
                                 "ts": 1, "dur": 5, "args": {"correlation": 1}}]})");
  auto bad = RunCli("kernel --ncu-csv " + dir.file("r.csv") + " --from-trace " + other + " -o " + dir.file("k.json"));
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_TRUE(Contains(bad.out, "gemm_big is not in " + other)) << bad.out;
}

TEST_F(KernelCliTest, DeviceShowsPropertiesAndCachedPeaks) {
  auto r = RunCli("device --threads 1 --format json");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["kind"], "cpu");
  EXPECT_EQ(j["compute_units"], 1);
  EXPECT_GT(j["peaks"]["fp32_gflops"].get<double>(), 0);
  EXPECT_GT(j["peaks"]["mem_gbps"].get<double>(), 0);
  // The second run reads the cache, unless its quick probe finds the machine faster than
  // the cached peak (measured while the other tests held the cores): then it says so.
  // (The cache's rules themselves are pinned with a fake meter in calibration tests.)
  auto text = RunCli("device --threads 1");
  EXPECT_EQ(text.code, 0);
  EXPECT_TRUE(Contains(text.out, "measured peaks (cached") ||
              Contains(text.out, "a quick probe measured"))
      << text.out;
}

}  // namespace
}  // namespace tierscope
