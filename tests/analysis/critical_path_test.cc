// The critical path on built traces whose path is known: host-bound, device-bound behind a
// launch, a blocking wait, two streams joined by an event wait, a graph's replay, and a
// clock that runs backwards.
#include "analysis/critical_path.h"

#include <gtest/gtest.h>

#include "trace_builder.h"

namespace tierscope {
namespace {

int64_t Cause(const CriticalPath& p, PathCause c) { return p.by_cause[static_cast<size_t>(c)]; }

CriticalPath OnlyStep(const Trace& t) {
  const TraceIndex x = BuildIndex(t, AnalysisOptions{});
  const std::vector<CriticalPath> paths = AnalyzeCriticalPaths(x);
  EXPECT_EQ(paths.size(), 1u);
  return paths.empty() ? CriticalPath{} : paths[0];
}

TEST(CriticalPath, HostOpsInProgramOrderAndTheIdleTimeBetweenThemIsNotOnIt) {
  Builder b;
  b.Unit("ProfilerStep#1", 0, 2000);
  b.Op("aten::a", 0, 400, 1);
  b.Op("aten::b", 500, 300, 2);  // 100 idle before it: a dependency, not time
  b.Op("aten::b_inner", 600, 100, 3);
  const CriticalPath p = OnlyStep(std::move(b.trace()));
  EXPECT_EQ(p.window, "ProfilerStep#1");
  EXPECT_EQ(p.length_ns, 700);
  EXPECT_EQ(Cause(p, PathCause::kCpu), 700);
  ASSERT_FALSE(p.events.empty());
  EXPECT_EQ(p.events[0].ns, 400);  // aten::a's own span
}

TEST(CriticalPath, AKernelBehindItsLaunchAndABlockingWait) {
  // mm launches at 5 a kernel that runs 12..1012; the host then blocks in a stream sync
  // until 1020: the wait weighs nothing, the path goes through the kernel.
  Builder b;
  b.Unit("ProfilerStep#1", 0, 1100);
  b.Op("aten::mm", 0, 20, 1);
  b.Launch("cudaLaunchKernel", "gemm", 5, 5, 12, 1000, 1);
  b.Launch("cudaStreamSynchronize", "Stream Sync", 30, 990, 1015, 5, 0, nullptr, EventKind::kSync);
  const CriticalPath p = OnlyStep(std::move(b.trace()));
  EXPECT_EQ(p.length_ns, 5 + 7 + 1000);  // host up to the launch, the launch delay, the kernel
  EXPECT_EQ(p.span_ns, 1020);  // to the sync call's end
  EXPECT_EQ(Cause(p, PathCause::kCpu), 5);
  EXPECT_EQ(Cause(p, PathCause::kLaunchOverhead), 7);
  EXPECT_EQ(Cause(p, PathCause::kGpuCompute), 1000);
}

TEST(CriticalPath, AnEventWaitJoinsTwoStreams) {
  // Stream 7 runs A (10..510); the host records an event after launching A, makes stream
  // 20 wait for it, and launches B there (520..620): B waits for A, not for its launch.
  Builder b;
  b.Unit("ProfilerStep#1", 0, 1000);
  b.Launch("cudaLaunchKernel", "A", 0, 5, 10, 500, 0);
  b.Api("cudaEventRecord", 6, 2);
  b.trace().events.back().correlation = 900;
  b.Launch("cudaStreamWaitEvent", "Stream Wait Event", 9, 2, 11, 1, 0, nullptr, EventKind::kSync, 20);
  b.trace().events.back().args =
      b.trace().strings.Intern(R"("wait_on_cuda_event_record_corr_id": 900, "wait_on_stream": 7)");
  b.Launch("cudaLaunchKernel", "B", 12, 5, 520, 100, 0, nullptr, EventKind::kKernel, 20);
  const CriticalPath p = OnlyStep(std::move(b.trace()));
  EXPECT_EQ(p.length_ns, 10 + 500 + 100);  // A's launch delay, A, then B right after the wait
  EXPECT_EQ(Cause(p, PathCause::kGpuCompute), 600);
  EXPECT_EQ(Cause(p, PathCause::kKernelGap), 0);
}

TEST(CriticalPath, AGraphsReplayedKernelsAreOnThePath) {
  Builder b;
  b.Unit("ProfilerStep#1", 0, 1000);
  b.Launch("cudaGraphLaunch", "k1", 0, 10, 20, 100, 0);
  for (auto [kts, name] : {std::pair<int64_t, const char*>{125, "k2"}, {230, "k3"}}) {
    Event& k = b.trace().Add(EventKind::kKernel, name, kts, 100);
    k.pid = 0;
    k.tid = 7;
    k.correlation = 1;  // the graph launch's
  }
  const CriticalPath p = OnlyStep(std::move(b.trace()));
  EXPECT_EQ(p.graph_kernels, 3);
  EXPECT_EQ(p.length_ns, 20 + 300 + 10);  // the launch's delay, three kernels, two 5 ns gaps
  EXPECT_EQ(Cause(p, PathCause::kLaunchOverhead), 20);
  EXPECT_EQ(Cause(p, PathCause::kKernelGap), 10);
  EXPECT_EQ(Cause(p, PathCause::kGpuCompute), 300);
}

TEST(CriticalPath, AnEdgeBackwardsInTimeIsCountedAndWeighsNothing) {
  Builder b;
  b.Unit("ProfilerStep#1", 0, 1000);
  // The second kernel starts 10 ns before the first ends on the same stream.
  b.Launch("cudaLaunchKernel", "first", 0, 5, 10, 100, 0);
  b.Launch("cudaLaunchKernel", "second", 20, 5, 100, 50, 0);
  const CriticalPath p = OnlyStep(std::move(b.trace()));
  EXPECT_EQ(p.negative_edges, 1);
  EXPECT_GE(p.length_ns, 0);
  const Table t = CriticalPathTable({p});
  bool said = false;
  for (const std::string& n : t.notes) said = said || n.find("end before they start") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(CriticalPath, NoStepsGiveOnePathOverTheWholeTraceAndAnEmptyTraceNone) {
  Builder b;
  b.Op("aten::a", 0, 400, 1);
  const Trace t = std::move(b.trace());
  const std::vector<CriticalPath> paths = AnalyzeCriticalPaths(BuildIndex(t, AnalysisOptions{}));
  ASSERT_EQ(paths.size(), 1u);
  EXPECT_EQ(paths[0].window, "whole trace");
  EXPECT_EQ(paths[0].length_ns, 400);
  const Trace empty;
  EXPECT_TRUE(AnalyzeCriticalPaths(BuildIndex(empty, AnalysisOptions{})).empty());
}

}  // namespace
}  // namespace tierscope
