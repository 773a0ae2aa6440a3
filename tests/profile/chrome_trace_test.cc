// The Chrome trace writer: escaping that any JSON parser reads back, Kineto's event
// shapes, flows that join launches to kernels, and gzip output.
#include "profile/chrome_trace.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "profile/profiler.h"
#include "test_util.h"

namespace tierscope {
namespace {

std::string Gunzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  std::string out;
  char buf[65536];
  int n;
  while ((n = gzread(f, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  gzclose(f);
  return out;
}

TEST(ChromeTraceTest, EscapedStringsReadBackExactly) {
  const std::string names[] = {"plain", "quote \" and backslash \\", "tab\tnewline\ncr\r",
                               std::string("nul\0byte", 8), "\x01\x1f control", "ünïcødé → 漢字 🚀"};
  for (const std::string& s : names) {
    std::string json;
    AppendJsonString(json, s);
    auto parsed = nlohmann::json::parse(json);
    EXPECT_EQ(parsed.get<std::string>(), s);
  }
}

TEST(ChromeTraceTest, InvalidUtf8BecomesReplacementCharacter) {
  std::string json;
  AppendJsonString(json, "bad \xff\xfe and truncated \xe2\x82");
  auto parsed = nlohmann::json::parse(json);  // must be valid JSON
  EXPECT_EQ(parsed.get<std::string>(), "bad \uFFFD\uFFFD and truncated \uFFFD\uFFFD");
}

Trace SampleTrace() {
  DeviceProps props;
  props.name = "cpu: \"test\" device";
  props.compute_units = 2;
  Profiler p(ProfilerOptions{}, props);
  p.BeginAnnotation("unit \"one\"");
  p.BeginOp("aten::linear", "\"Input Dims\": [[2, 3], [4, 3], [4]]");
  LaunchDesc d;
  d.kernel = "kernel\\with\"odd\nname";
  d.grid = Dim3{3, 1, 1};
  d.block = Dim3{64, 1, 1};
  d.flops = 100;
  std::vector<WorkerSpan> spans = {{10, 20, 10, 2}, {12, 25, 13, 1}};
  const int64_t now = MonotonicNs();
  p.OnLaunch(d, now, now + 5, now + 5, now + 40, spans);
  p.OnAllocate(0x1000, 256, 256);
  p.OnFree(0x1000, 256, 0);
  p.End();
  p.End();
  return p.trace();
}

void CheckSample(const nlohmann::json& j) {
  ASSERT_TRUE(j.contains("traceEvents"));
  EXPECT_EQ(j["deviceProperties"][0]["name"], "cpu: \"test\" device");
  std::map<std::string, int> cats;
  int64_t launch_corr = -1, kernel_corr = -2;
  int flows_s = 0, flows_f = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "s") ++flows_s;
    if (e["ph"] == "f") ++flows_f;
    if (!e.contains("cat")) continue;
    cats[e["cat"].get<std::string>()]++;
    if (e["cat"] == "cuda_runtime") launch_corr = e["args"]["correlation"];
    if (e["cat"] == "kernel") {
      kernel_corr = e["args"]["correlation"];
      EXPECT_EQ(e["name"], "kernel\\with\"odd\nname");
      EXPECT_EQ(e["args"]["grid"], nlohmann::json::array({3, 1, 1}));
      EXPECT_EQ(e["args"]["stream"], 7);
      EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 0.035);  // 35 ns in microseconds
    }
    if (e["cat"] == "cpu_op") {
      EXPECT_EQ(e["args"]["Input Dims"], nlohmann::json::parse("[[2, 3], [4, 3], [4]]"));
    }
  }
  EXPECT_EQ(cats["user_annotation"], 1);
  EXPECT_EQ(cats["cpu_op"], 1);
  EXPECT_EQ(cats["cuda_runtime"], 1);
  EXPECT_EQ(cats["kernel"], 1);
  EXPECT_EQ(cats["kernel_task"], 2);
  EXPECT_EQ(cats["cpu_instant_event"], 2);
  EXPECT_EQ(launch_corr, kernel_corr);
  EXPECT_EQ(flows_s, 1);
  EXPECT_EQ(flows_f, 1);
}

TEST(ChromeTraceTest, WrittenTraceParsesWithKinetoShapes) {
  testing::TempDir dir;
  ASSERT_TRUE(WriteChromeTrace(SampleTrace(), dir.file("t.json")).ok());
  CheckSample(nlohmann::json::parse(testing::ReadBytes(dir.file("t.json"))));
}

TEST(ChromeTraceTest, GzPathIsCompressed) {
  testing::TempDir dir;
  ASSERT_TRUE(WriteChromeTrace(SampleTrace(), dir.file("t.json.gz")).ok());
  const std::string raw = testing::ReadBytes(dir.file("t.json.gz"));
  ASSERT_GE(raw.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(raw[0]), 0x1f);
  EXPECT_EQ(static_cast<unsigned char>(raw[1]), 0x8b);
  CheckSample(nlohmann::json::parse(Gunzip(dir.file("t.json.gz"))));
}

TEST(ChromeTraceTest, UnwritablePathIsAnError) {
  Status s = WriteChromeTrace(SampleTrace(), "/nonexistent/dir/t.json");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("/nonexistent/dir/t.json"), std::string::npos);
}

}  // namespace
}  // namespace tierscope

namespace tierscope {
namespace {

TEST(ChromeTraceTest, MillionEventTraceIsWrittenCompletely) {
  Trace t;
  t.device_name = "cpu";
  const int32_t name = t.strings.Intern("cpu_sgemm_nt_f32_48x96");
  t.events.resize(1000000);
  for (size_t i = 0; i < t.events.size(); ++i) {
    Event& e = t.events[i];
    e.kind = EventKind::kKernel;
    e.name = name;
    e.ts_ns = static_cast<int64_t>(i) * 1000;
    e.dur_ns = 500;
    e.correlation = static_cast<int64_t>(i) + 1;
    e.tid = kStreamTid;
  }
  testing::TempDir dir;
  ASSERT_TRUE(WriteChromeTrace(t, dir.file("big.json")).ok());
  // One kernel event and one flow-finish per line; count them without a full parse.
  std::ifstream in(dir.file("big.json"));
  int64_t kernels = 0, flows = 0;
  std::string line, last;
  for (; std::getline(in, line); last = line) {
    if (line.find("\"cat\": \"kernel\"") != std::string::npos) ++kernels;
    if (line.find("\"ph\": \"f\"") != std::string::npos) ++flows;
  }
  EXPECT_EQ(kernels, 1000000);
  EXPECT_EQ(flows, 1000000);
  EXPECT_EQ(last, "}");
}

}  // namespace
}  // namespace tierscope
