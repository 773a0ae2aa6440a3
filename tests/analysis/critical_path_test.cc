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
  // mm launches at 5 a kernel that runs 100..1000; the host blocks in a stream sync from 20
  // to 1020, then runs add (1030..1080). The wait weighs nothing (else the host's 1070 would
  // win) and ends with the kernel (else the path would stop at the kernel's 1000).
  Builder b;
  b.Unit("ProfilerStep#1", 0, 1100);
  b.Op("aten::mm", 0, 20, 1);
  b.Launch("cudaLaunchKernel", "gemm", 5, 5, 100, 900, 1);
  b.Launch("cudaStreamSynchronize", "Stream Sync", 20, 1000, 1015, 5, 0, nullptr, EventKind::kSync);
  b.Op("aten::add", 1030, 50, 2);
  const CriticalPath p = OnlyStep(std::move(b.trace()));
  EXPECT_EQ(p.length_ns, 5 + 95 + 900 + 50);  // host to the launch, its delay, the kernel, add
  EXPECT_EQ(Cause(p, PathCause::kCpu), 55);
  EXPECT_EQ(Cause(p, PathCause::kLaunchOverhead), 95);
  EXPECT_EQ(Cause(p, PathCause::kGpuCompute), 900);
  EXPECT_LE(p.length_ns, p.span_ns);
}

TEST(CriticalPath, AKernelQueuedBehindAnotherFollowsItNotItsLaunch) {
  Builder b;
  b.Unit("ProfilerStep#1", 0, 1000);
  b.Launch("cudaLaunchKernel", "k1", 0, 3, 10, 100, 0);
  b.Launch("cudaLaunchKernel", "k2", 5, 3, 112, 100, 0);  // queued (k1 not yet started)
  const CriticalPath p = OnlyStep(std::move(b.trace()));
  // HTA's rule: a launch's delay counts only if nothing else was queued when its kernel
  // started — k2 was, so k1's path starts at k1; k2 follows k1 by its 2 ns gap.
  EXPECT_EQ(p.length_ns, 100 + 2 + 100);
  EXPECT_EQ(Cause(p, PathCause::kLaunchOverhead), 0);
  EXPECT_EQ(Cause(p, PathCause::kKernelGap), 2);
}

TEST(CriticalPath, ADeviceWaitJoinsEveryStreamOfItsDeviceOnly) {
  // A context sync waits for both streams of GPU 0 (the longer, 10..510 on stream 20), not
  // for GPU 1's kernel (10..2010): then add runs.
  Builder b;
  b.Unit("ProfilerStep#1", 0, 3000);
  b.Launch("cudaLaunchKernel", "short", 0, 2, 10, 100, 0);
  b.Launch("cudaLaunchKernel", "long", 3, 2, 10, 500, 0, nullptr, EventKind::kKernel, 20);
  b.Launch("cudaLaunchKernel", "other_gpu", 6, 2, 10, 1090, 0);  // GPU 2, same stream number
  b.trace().events.back().pid = 2;
  b.Launch("cudaDeviceSynchronize", "Context Sync", 9, 600, 600, 5, 0, nullptr, EventKind::kSync);
  b.Op("aten::add", 620, 1000, 1);
  const CriticalPath p = OnlyStep(std::move(b.trace()));
  // The host to long's launch (2), its delay (7), long (500), then add (1000); joined to GPU
  // 2's kernel the wait would put 4 + 1090 before add (2094).
  EXPECT_EQ(p.length_ns, 2 + 7 + 500 + 1000);
  EXPECT_EQ(p.negative_edges, 0);
}

TEST(CriticalPath, AnEventSyncWaitsForTheWorkLaunchedBeforeTheRecord) {
  Builder b;
  b.Unit("ProfilerStep#1", 0, 2000);
  b.Launch("cudaLaunchKernel", "A", 0, 5, 10, 800, 0);
  b.Api("cudaEventRecord", 6, 2);
  b.trace().events.back().correlation = 900;
  b.Launch("cudaEventSynchronize", "Event Sync", 9, 900, 900, 2, 0, nullptr, EventKind::kSync);
  b.trace().events.back().args =
      b.trace().strings.Intern(R"("wait_on_cuda_event_record_corr_id": 900, "wait_on_stream": 7)");
  b.Op("aten::add", 920, 100, 1);
  const CriticalPath p = OnlyStep(std::move(b.trace()));
  EXPECT_EQ(p.length_ns, 10 + 800 + 100);  // A's launch delay, A, then add after the wait
}

TEST(CriticalPath, StepsSharingATraceEachGetTheirOwnPath) {
  Builder b;
  b.Unit("ProfilerStep#1", 0, 1000);
  b.Launch("cudaLaunchKernel", "k1", 0, 5, 10, 300, 0);
  b.Unit("ProfilerStep#2", 1001, 1000);  // a window's end is in it: the next starts after
  b.Op("aten::a", 1001, 700, 1);
  const Trace t = std::move(b.trace());
  const TraceIndex x = BuildIndex(t, AnalysisOptions{});
  const std::vector<CriticalPath> paths = AnalyzeCriticalPaths(x);
  ASSERT_EQ(paths.size(), 2u);
  EXPECT_EQ(paths[0].length_ns, 310);
  EXPECT_EQ(paths[1].length_ns, 700);
  // Each the same as alone: the shared maps were reset between windows.
  EXPECT_EQ(AnalyzeCriticalPath(x, 1001, 2001, "2").length_ns, 700);
  EXPECT_EQ(AnalyzeCriticalPath(x, 0, 1000, "1").length_ns, 310);
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
  EXPECT_LE(p.length_ns, p.span_ns);
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
