// Reports, rules and diff on hand-built traces with known numbers.
#include "analysis/reports.h"

#include <gtest/gtest.h>

#include "analysis/diff.h"
#include "analysis/rules.h"
#include "analysis/trace_builder.h"

namespace tierscope {
namespace {


const Cell& At(const Table& t, size_t row, const std::string& col) {
  for (size_t c = 0; c < t.columns.size(); ++c) {
    if (t.columns[c] == col) return t.rows.at(row).at(c);
  }
  throw std::runtime_error("no column " + col);
}
double Num(const Cell& c) {
  if (const auto* i = std::get_if<int64_t>(&c)) return static_cast<double>(*i);
  return std::get<double>(c);
}

TEST(ReportsTest, KernelSummaryHasNsysColumnsAndArithmetic) {
  Builder b;
  b.Launch("cudaLaunchKernel", "A", 0, 5, 10, 10, 1);
  b.Launch("cudaLaunchKernel", "A", 100, 5, 110, 20, 1);
  b.Launch("cudaLaunchKernel", "A", 200, 5, 210, 30, 1);
  b.Launch("cudaLaunchKernel", "B", 300, 5, 310, 140, 1);
  TraceIndex x = BuildIndex(b.trace(), {});
  auto t = RunReport(x, "cuda_gpu_kern_sum", {});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->columns, (std::vector<std::string>{"Time (%)", "Total Time (ns)", "Instances", "Avg (ns)",
                                                   "Med (ns)", "Min (ns)", "Max (ns)", "StdDev (ns)", "Name"}));
  ASSERT_EQ(t->rows.size(), 2u);
  EXPECT_EQ(std::get<std::string>(At(*t, 0, "Name")), "B");
  EXPECT_DOUBLE_EQ(Num(At(*t, 0, "Time (%)")), 70.0);
  EXPECT_DOUBLE_EQ(Num(At(*t, 1, "Total Time (ns)")), 60);
  EXPECT_DOUBLE_EQ(Num(At(*t, 1, "Instances")), 3);
  EXPECT_DOUBLE_EQ(Num(At(*t, 1, "Med (ns)")), 20);
  EXPECT_DOUBLE_EQ(Num(At(*t, 1, "StdDev (ns)")), 10);
}

TEST(ReportsTest, MusaAndHipNamesAreAliases) {
  Builder b;
  b.Launch("musaLaunchKernel", "K", 0, 5, 10, 10, 1);
  TraceIndex x = BuildIndex(b.trace(), {});
  EXPECT_TRUE(RunReport(x, "musa_gpu_kern_sum", {}).ok());
  EXPECT_TRUE(RunReport(x, "hip_api_sum", {}).ok());
  auto bad = RunReport(x, "cuda_nope", {});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("cuda_gpu_kern_sum"), std::string::npos);
}

TEST(ReportsTest, InUseIsTheUnionOfDeviceIntervals) {
  Builder b;
  b.Launch("cudaLaunchKernel", "A", 0, 1, 0, 50, 1);
  b.Launch("cudaLaunchKernel", "B", 1, 1, 25, 50, 1);   // overlaps A: union 0..75
  b.Launch("cudaLaunchKernel", "C", 2, 1, 175, 25, 1);  // gap of 100, then 175..200
  TraceIndex x = BuildIndex(b.trace(), {});
  InUse u = DeviceInUse(x);
  EXPECT_EQ(u.busy_ns, 100);
  EXPECT_EQ(u.window_ns, 200);
  EXPECT_DOUBLE_EQ(u.percent(), 50.0);
  EXPECT_EQ(DeviceGaps(x), (std::vector<int64_t>{100}));
}

TEST(ReportsTest, KernelExecSummarySplitsApiQueueAndKernelTime) {
  Builder b;
  b.Launch("cudaLaunchKernel", "A", 0, 10, 30, 5, 1);  // queue = 30 - 10 = 20
  TraceIndex x = BuildIndex(b.trace(), {});
  auto t = RunReport(x, "cuda_kern_exec_sum", {});
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->rows.size(), 1u);
  EXPECT_DOUBLE_EQ(Num(At(*t, 0, "API Avg (ns)")), 10);
  EXPECT_DOUBLE_EQ(Num(At(*t, 0, "Queue Avg (ns)")), 20);
  EXPECT_DOUBLE_EQ(Num(At(*t, 0, "Kernel Avg (ns)")), 5);
}

TEST(ReportsTest, UnitsAreFoundAndCountedPerUnit) {
  Builder b;
  for (int u = 0; u < 2; ++u) {
    const int64_t base = u * 1000;
    b.Unit("ProfilerStep#" + std::to_string(u), base, 900);
    for (int i = 0; i < 3; ++i) {
      b.Op("aten::linear", base + 10 + i * 100, 50, u * 10 + i + 1);
      b.Launch("cudaLaunchKernel", "gemm", base + 20 + i * 100, 5, base + 30 + i * 100, 10, u * 10 + i + 1);
    }
  }
  TraceIndex x = BuildIndex(b.trace(), {});
  EXPECT_EQ(x.unit_name, "ProfilerStep#N");
  ASSERT_EQ(x.units.size(), 2u);
  auto t = RunReport(x, "units", {});
  ASSERT_TRUE(t.ok());
  EXPECT_DOUBLE_EQ(Num(At(*t, 0, "Per unit")), 3);  // launches
  bool saw_linear = false;
  for (size_t r = 0; r < t->rows.size(); ++r) {
    if (std::get<std::string>(At(*t, r, "Event")) == "aten::linear") {
      saw_linear = true;
      EXPECT_DOUBLE_EQ(Num(At(*t, r, "Per unit")), 3);
    }
  }
  EXPECT_TRUE(saw_linear);
}

TEST(RulesTest, ManyShortKernelsWithCostlyLaunchesAreLaunchBound) {
  Builder b;
  for (int i = 0; i < 100; ++i) b.Launch("cudaLaunchKernel", "tiny", i * 20, 8, i * 20 + 9, 4, 1, "[1, 1, 1]");
  TraceIndex x = BuildIndex(b.trace(), {});
  auto f = Diagnose(x, {});
  ASSERT_FALSE(f.empty());
  bool launch_bound = false, granularity = false;
  for (const Finding& g : f) {
    if (g.rule == "launch_bound") {
      launch_bound = true;
      EXPECT_FALSE(g.evidence.empty());
      EXPECT_NE(g.threshold.find("short kernels"), std::string::npos);
      EXPECT_NE(g.next_step.find("batch"), std::string::npos);
    }
    if (g.rule == "granularity") {
      granularity = true;
      EXPECT_NE(g.evidence[1].find("1 blocks"), std::string::npos) << g.evidence[1];
      EXPECT_NE(g.evidence[1].find("56 compute units"), std::string::npos);
    }
  }
  EXPECT_TRUE(launch_bound);
  EXPECT_TRUE(granularity);
}

// The finding's "launches per work unit" is the units table's count: launches outside
// every unit (warm-up) are not spread over the units.
TEST(RulesTest, LaunchBoundPerUnitCountIsTheUnitsTablesCount) {
  Builder b;
  for (int i = 0; i < 50; ++i) b.Launch("cudaLaunchKernel", "tiny", i * 20, 8, i * 20 + 9, 4, 1, "[1, 1, 1]");
  for (int u = 0; u < 2; ++u) {
    const int64_t base = 10000 + u * 1000;
    b.Unit("ProfilerStep#" + std::to_string(u), base, 900);
    for (int i = 0; i < 40; ++i) {
      b.Launch("cudaLaunchKernel", "tiny", base + i * 20, 8, base + i * 20 + 9, 4, 1, "[1, 1, 1]");
    }
  }
  TraceIndex x = BuildIndex(b.trace(), {});
  ASSERT_EQ(x.units.size(), 2u);
  auto t = RunReport(x, "units", {});
  ASSERT_TRUE(t.ok());
  EXPECT_DOUBLE_EQ(Num(At(*t, 0, "Per unit")), 40);
  bool seen = false;
  for (const Finding& g : Diagnose(x, {})) {
    if (g.rule != "launch_bound") continue;
    for (const std::string& e : g.evidence) {
      if (e.find("launches per work unit") == std::string::npos) continue;
      seen = true;
      EXPECT_EQ(e, "40.0 launches per work unit");
    }
  }
  EXPECT_TRUE(seen);
}

TEST(RulesTest, BusyDeviceWithBigKernelsSuggestsATier3Look) {
  Builder b;
  for (int i = 0; i < 10; ++i) b.Launch("cudaLaunchKernel", "big_gemm", i * 1000, 5, i * 1000 + 6, 1000, 1, "[256, 1, 1]");
  TraceIndex x = BuildIndex(b.trace(), {});
  auto f = Diagnose(x, {});
  ASSERT_EQ(f.size(), 1u) << RenderFindings(f);
  EXPECT_EQ(f[0].rule, "hot_kernel");
  EXPECT_NE(f[0].next_step.find("tierscope kernel -k 'big_gemm'"), std::string::npos);
}

TEST(RulesTest, AHotCollectiveIsWaitingNotATier3Target) {
  Builder b;
  const char* nccl = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
  for (int i = 0; i < 10; ++i) b.Launch("cudaLaunchKernel", nccl, i * 1000, 5, i * 1000 + 6, 1000, 1, "[4, 1, 1]");
  TraceIndex x = BuildIndex(b.trace(), {});
  auto f = Diagnose(x, {});
  ASSERT_EQ(f.size(), 1u) << RenderFindings(f);
  EXPECT_EQ(f[0].rule, "comm_dominant");
  EXPECT_EQ(f[0].next_step.find("tierscope kernel"), std::string::npos) << f[0].next_step;
  EXPECT_NE(f[0].next_step.find("stragglers"), std::string::npos);
}

TEST(RulesTest, HealthyTraceHasNoFindings) {
  Builder b;
  for (int i = 0; i < 10; ++i) b.Launch("cudaLaunchKernel", i % 2 ? "a" : "b", i * 1000, 5, i * 1000 + 6, 995, 1, "[256, 1, 1]");
  b.trace().events.push_back(b.trace().events.back());  // harmless duplicate
  RuleOptions r;
  r.hot_share_percent = 60;  // two kernels at 50% each: none dominates
  auto f = Diagnose(BuildIndex(b.trace(), {}), {}, r);
  EXPECT_TRUE(f.empty()) << RenderFindings(f);
  EXPECT_NE(RenderFindings(f).find("no problem found"), std::string::npos);
}

TEST(RulesTest, SynchronousCopiesAndSyncCallsAreFlaggedWithTheirEvents) {
  Builder b;
  b.Api("cudaMemcpy", 0, 500);
  b.Api("cudaMemcpyAsync", 600, 5);
  b.Api("cudaStreamSynchronize", 700, 300);
  auto f = RunRules(BuildIndex(b.trace(), {}), {});
  std::map<std::string, const Finding*> by_rule;
  for (const auto& g : f) by_rule[g.rule] = &g;
  ASSERT_TRUE(by_rule.count("sync_memcpy"));
  EXPECT_EQ(by_rule["sync_memcpy"]->examples, (std::vector<std::string>{"cudaMemcpy x1"}));
  ASSERT_TRUE(by_rule.count("sync_api"));
  EXPECT_DOUBLE_EQ(by_rule["sync_api"]->explained_ns, 300);
}

TEST(DiffTest, PerUnitOperatorAndLaunchDeltasMatchTheStudyShape) {
  Builder serial, batch;
  serial.Unit("serial_bert_forward", 0, 100000);
  for (int i = 0; i < 64; ++i) {
    serial.Op("aten::linear", i * 1000, 500, i + 1);
    serial.Launch("cudaLaunchKernel", "gemm_small", i * 1000 + 10, 5, i * 1000 + 20, 100, i + 1, "[1, 1, 1]");
  }
  batch.Unit("batched_bert_forward", 0, 10000);
  batch.Op("aten::linear", 0, 500, 1);
  batch.Launch("cudaLaunchKernel", "gemm_big", 10, 5, 20, 800, 1, "[256, 1, 1]");
  TraceDiff d = DiffTraces(BuildIndex(serial.trace(), {}), BuildIndex(batch.trace(), {}));
  EXPECT_TRUE(d.per_unit);
  bool linear = false;
  for (const auto& h : d.headline) {
    if (h == "aten::linear 64 -> 1") linear = true;
  }
  EXPECT_TRUE(linear) << ::testing::PrintToString(d.headline);
  EXPECT_EQ(d.headline.front(), "launches 64 -> 1 per work unit");
  EXPECT_EQ(d.headline.back(), "hottest kernel: gemm_small -> gemm_big");
}

}  // namespace
}  // namespace tierscope
