// The engine under the profiler: the exact per-forward counts of operators, launches
// and allocations, the study's serial-vs-batched pattern, correlations, and the
// steady-state window.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

#include <nlohmann/json.hpp>

#include "workload/bench.h"
#include "profile/chrome_trace.h"
#include "profile/op_summary.h"
#include "profile/profiler.h"
#include "test_util.h"
#include "workload_util.h"

namespace tierscope {
namespace {

// Spins until the monotonic clock passes `t` (tests that hand the profiler fake times a
// little in the future close their scopes after them).
void WaitPast(int64_t t) {
  while (MonotonicNs() <= t) {
  }
}

class ProfilerTest : public testing::FreshCacheTest {
 protected:
  static BenchOptions Options(const std::string& mode) {
    BenchOptions o = testing::SmallWorkload(mode, 8, 16);
    o.warmup = 1;
    o.iterations = 2;
    o.profile = true;
    return o;
  }
};

// What one forward of the 2-layer model does: embedding + LayerNorm, then per layer
// QKV / attention / output+add+LN / intermediate(+GELU) / output+add+LN.
constexpr int64_t kLaunchesPerForward = 2 + 2 * 5;
constexpr int64_t kAllocsPerForward = 2 + 2 * 5;

TEST_F(ProfilerTest, BatchedUnitHasTheExactCountsOfOneForward) {
  testing::TempDir dir;
  BenchOptions o = Options("batch-fp32");
  o.trace_path = dir.file("batch.json");
  auto r = RunBench(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_NE(r->profile_text.find("batched_bert_forward"), std::string::npos);
  EXPECT_NE(r->profile_text.find("aten::linear"), std::string::npos);
  EXPECT_EQ(r->result.profiled_units, 2);
}

TEST_F(ProfilerTest, SerialCallsAreBatchSizeTimesBatched) {
  // Reads the counts back from the written traces through the same summaries the
  // analyzer uses; the per-unit numbers are exact.
  testing::TempDir dir;
  BenchOptions b = Options("batch-fp32"), s = Options("serial-fp32");
  b.trace_path = dir.file("b.json");
  s.trace_path = dir.file("s.json");
  auto rb = RunBench(b);
  auto rs = RunBench(s);
  ASSERT_TRUE(rb.ok() && rs.ok());
  // The summaries are printed in the profile text; check the exact numbers.
  const std::string batched = rb->profile_text, serial = rs->profile_text;
  auto expect_line = [](const std::string& text, const std::string& want) {
    EXPECT_NE(text.find(want), std::string::npos) << "missing '" << want << "' in\n" << text;
  };
  expect_line(batched, "launches " + std::to_string(kLaunchesPerForward) + ", kernels " +
                           std::to_string(kLaunchesPerForward) + ", allocations " +
                           std::to_string(kAllocsPerForward));
  expect_line(batched, "aten::linear=4 ");
  expect_line(batched, "aten::scaled_dot_product_attention=2 ");
  expect_line(batched, "aten::embedding=1 ");
  expect_line(batched, "tierscope::linear_add_layer_norm=4");
  // Serial: 8 batch-1 forwards, plus one copy into the output per sample.
  expect_line(serial, "launches " + std::to_string(8 * (kLaunchesPerForward + 1)));
  expect_line(serial, "allocations " + std::to_string(8 * kAllocsPerForward + 1));
  expect_line(serial, "aten::linear=32 ");
  expect_line(serial, "aten::scaled_dot_product_attention=16 ");
  expect_line(serial, "aten::copy_=8 ");
}

TEST_F(ProfilerTest, SteadyStateWindowSkipsAndLimitsUnits) {
  BenchOptions o = Options("batch-fp32");
  o.iterations = 5;
  o.profile_skip = 1;
  o.profile_units = 2;
  auto r = RunBench(o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->result.profiled_units, 2);
  EXPECT_NE(r->profile_text.find("2 units recorded"), std::string::npos) << r->profile_text;
}

TEST_F(ProfilerTest, WindowThatNeverOpensSaysSo) {
  BenchOptions o = Options("batch-fp32");
  o.profile_skip = 10;
  auto r = RunBench(o);
  ASSERT_TRUE(r.ok());
  EXPECT_NE(r->profile_text.find("never opened"), std::string::npos);
  EXPECT_EQ(r->result.profiled_units, 0);
}

TEST_F(ProfilerTest, TraceNeedsProfileFlag) {
  BenchOptions o = Options("batch-fp32");
  o.profile = false;
  o.trace_path = "/tmp/x.json";
  EXPECT_EQ(RunBench(o).status().code(), StatusCode::kInvalidArgument);
}

TEST(ProfilerAsyncTest, AsyncLaunchesGetTheirKernelTimesLaterUnderTheirOperator) {
  DeviceProps device;
  device.kind = "cuda";
  Profiler p(ProfilerOptions{}, device);
  LaunchDesc desc;
  desc.kernel = "ts_layer_norm_f32";
  desc.grid = Dim3{8, 1, 1};
  desc.block = Dim3{128, 1, 1};
  p.set_recording(false);
  EXPECT_EQ(p.OnLaunchAsync(desc, 10, 20), -1);  // not recording: nothing kept
  p.set_recording(true);
  p.BeginAnnotation("batched_bert_forward");
  p.BeginOp("aten::layer_norm", {});
  const int64_t t0 = MonotonicNs();  // after the unit opened: the fake times fall inside it
  const int64_t token = p.OnLaunchAsync(desc, t0 + 1000, t0 + 3000);
  WaitPast(t0 + 3000);  // and before it closes, however slow the machine
  p.End();
  p.End();
  ASSERT_GE(token, 0);
  // The device ran it long after the unit's host scope closed.
  DeviceKernelInfo info;
  info.name = "sm90_xmma_gemm_\"f32\"";
  info.grid = Dim3{132, 2, 1};
  info.block = Dim3{384, 1, 1};
  info.kernels = 2;
  info.registers_per_thread = 168;
  info.shared_bytes = 66'560;
  p.OnKernelTimes(token, t0 + 50'000'000, t0 + 80'000'000, &info);
  p.OnKernelTimes(token + 1000, 1, 2, nullptr);  // an unknown token is ignored
  const Trace& trace = p.trace();
  const Event* kernel = nullptr;
  const Event* launch = nullptr;
  const Event* op = nullptr;
  for (const Event& e : trace.events) {
    if (e.kind == EventKind::kKernel) kernel = &e;
    if (e.kind == EventKind::kRuntime) launch = &e;
    if (e.kind == EventKind::kOp) op = &e;
  }
  ASSERT_TRUE(kernel && launch && op);
  EXPECT_EQ(kernel->dur_ns, 30'000'000);
  EXPECT_EQ(kernel->ts_ns - launch->ts_ns, 49'999'000);
  EXPECT_EQ(launch->dur_ns, 2000);
  EXPECT_EQ(kernel->correlation, launch->correlation);
  EXPECT_EQ(kernel->external_id, launch->external_id);
  EXPECT_NE(kernel->external_id, 0);  // joined to the open operator
  // The device's grid and kernel name are in the args, as valid JSON members.
  const std::string args(trace.strings.Get(kernel->args));
  EXPECT_EQ(args, "\"grid\": [132, 2, 1], \"block\": [384, 1, 1], \"kernels\": 2, "
                  "\"registers per thread\": 168, \"shared memory\": 66560, "
                  "\"device_kernel\": \"sm90_xmma_gemm_\\\"f32\\\"\"");
  // The unit summary counts the kernel in the unit that launched it.
  std::string scope;
  const UnitCounts unit = CountPerUnit(trace, FindWorkUnits(trace, "batched_bert_forward", &scope), scope);
  EXPECT_EQ(unit.units, 1);
  EXPECT_EQ(unit.kernels, 1);
  EXPECT_EQ(unit.launches, 1);
  EXPECT_DOUBLE_EQ(unit.kernel_ns, 30'000'000.0);
}

TEST(ProfilerAsyncTest, SynchronisationsAreTracedButAreNotLaunches) {
  DeviceProps device;
  device.kind = "cuda";
  Profiler p(ProfilerOptions{}, device);
  p.set_recording(true);
  LaunchDesc desc;
  desc.kernel = "ts_layer_norm_f32";
  desc.grid = Dim3{8, 1, 1};
  p.BeginAnnotation("batched_bert_forward");
  const int64_t t0 = MonotonicNs();  // after the unit opened: the fake times fall inside it
  const int64_t token = p.OnLaunchAsync(desc, t0 + 1000, t0 + 2000);
  p.OnSynchronize(t0 + 2000, t0 + 9000);  // the host waits inside the unit
  p.OnKernelTimes(token, t0 + 3000, t0 + 8000, nullptr);
  WaitPast(t0 + 9000);
  p.End();
  const Trace& trace = p.trace();
  int syncs = 0, sync_calls = 0;
  for (const Event& e : trace.events) {
    if (e.kind == EventKind::kSync) {
      ++syncs;
      EXPECT_EQ(trace.strings.Get(e.name), "Stream Sync");
      EXPECT_EQ(e.dur_ns, 7000);
      EXPECT_EQ(e.tid, kStreamTid);
    }
    if (e.kind == EventKind::kRuntime && trace.strings.Get(e.name) == "cudaStreamSynchronize") ++sync_calls;
  }
  EXPECT_EQ(syncs, 1);
  EXPECT_EQ(sync_calls, 1);
  std::string scope;
  const UnitCounts unit = CountPerUnit(trace, FindWorkUnits(trace, "batched_bert_forward", &scope), scope);
  EXPECT_EQ(unit.launches, 1);  // the synchronisation is no launch
  EXPECT_EQ(unit.kernels, 1);
  // In the Chrome trace: a cuda_sync event, no flow from the synchronisation, and the
  // kernel's occupancy fields once each.
  testing::TempDir dir;
  ASSERT_TRUE(WriteChromeTrace(trace, dir.file("t.json")).ok());
  const auto j = nlohmann::json::parse(testing::ReadBytes(dir.file("t.json")));
  int cuda_sync = 0, flows = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e.value("cat", "") == "cuda_sync") {
      ++cuda_sync;
      EXPECT_EQ(e["args"]["cuda_sync_kind"], "stream_sync");
    }
    if (e.value("ph", "") == "s") ++flows;
    if (e.value("cat", "") == "cuda_runtime" && e.value("name", "") == "cudaStreamSynchronize") {
      EXPECT_EQ(e["args"]["cbid"], 131);
    }
  }
  EXPECT_EQ(cuda_sync, 1);
  EXPECT_EQ(flows, 1);
}

TEST(ProfilerAsyncTest, DeviceReportedRegistersReplaceKinetosDefaultsInTheTrace) {
  DeviceProps device;
  device.kind = "cuda";
  Profiler p(ProfilerOptions{}, device);
  p.set_recording(true);
  LaunchDesc desc;
  desc.kernel = "cublasLt_gemm_nt_f32_bias";
  desc.grid = Dim3{1, 1, 1};
  const int64_t t0 = MonotonicNs();
  const int64_t token = p.OnLaunchAsync(desc, t0, t0 + 10);
  DeviceKernelInfo info;
  info.name = "sm90_gemm";
  info.registers_per_thread = 90;
  info.shared_bytes = 1024;
  p.OnKernelTimes(token, t0 + 20, t0 + 40, &info);
  testing::TempDir dir;
  ASSERT_TRUE(WriteChromeTrace(p.trace(), dir.file("t.json")).ok());
  const std::string text = testing::ReadBytes(dir.file("t.json"));
  size_t count = 0;
  for (size_t at = text.find("\"registers per thread\""); at != std::string::npos;
       at = text.find("\"registers per thread\"", at + 1)) {
    ++count;
  }
  EXPECT_EQ(count, 1u) << text;
  const auto j = nlohmann::json::parse(text);  // held: the loop reads into it
  for (const auto& e : j["traceEvents"]) {
    if (e.value("cat", "") != "kernel") continue;
    EXPECT_EQ(e["args"]["registers per thread"], 90);
    EXPECT_EQ(e["args"]["shared memory"], 1024);
  }
}

TEST(OpSummaryTest, InputDimsAreExtractedFromArgs) {
  EXPECT_EQ(InputDimsOf("\"Input Dims\": [[2, 3], [4]], \"Input type\": [\"float\"]"), "[[2, 3], [4]]");
  EXPECT_EQ(InputDimsOf("\"Other\": 1"), "");
}

TEST(OpSummaryTest, SelfTimeExcludesChildrenAndDeviceTimeFollowsExternalId) {
  Trace t;
  auto add = [&](EventKind k, const char* name, int64_t ts, int64_t dur, int64_t ext) {
    Event& e = t.Add(k, name, ts, dur);
    e.external_id = ext;
    e.tid = 1;
  };
  add(EventKind::kOp, "outer", 0, 100, 1);
  add(EventKind::kOp, "inner", 10, 30, 2);
  add(EventKind::kKernel, "k1", 15, 20, 2);
  add(EventKind::kKernel, "k2", 60, 5, 1);
  t.events[2].tid = 7;
  t.events[3].tid = 7;
  auto stats = KeyAverages(t, false);
  ASSERT_EQ(stats.size(), 2u);
  const OpStat& inner = stats[0].name == "inner" ? stats[0] : stats[1];
  const OpStat& outer = stats[0].name == "outer" ? stats[0] : stats[1];
  EXPECT_EQ(outer.cpu_total_ns, 100);
  EXPECT_EQ(outer.self_cpu_ns, 70);
  EXPECT_EQ(outer.self_device_ns, 5);
  EXPECT_EQ(outer.device_total_ns, 25);
  EXPECT_EQ(inner.self_device_ns, 20);
}

}  // namespace
}  // namespace tierscope
