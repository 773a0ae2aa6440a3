// A job's critical path and what-if across ranks on built jobs whose answer is known: the
// path runs through the late rank's work into a collective and on along another rank's, the
// clocks aligned first; a send joins its recv; speeding up the late rank shortens the job.
#include "analysis/job_path.h"

#include <gtest/gtest.h>

#include "analysis/job.h"
#include "analysis/rank_summary.h"
#include "analysis/whatif.h"
#include "trace_builder.h"

namespace tierscope {
namespace {

constexpr const char* kAllReduce = "ncclDevKernel_AllReduce_Sum_f32";

// One rank of a step from `begin`: `pre` ns of host work, an all-reduce launched 5 after it
// that starts on the device 10 after it and ends at `end` (710: 200 after the later rank
// arrives at 510), a stream sync until end + 5, then `post` ns of host work from end + 10;
// every time + `clock`.
Trace AllReduceRank(int rank, int64_t pre, int64_t post, int64_t clock, int64_t begin = 0, int64_t end = 710) {
  Builder b;
  const int64_t at = clock + begin;
  b.Unit("ProfilerStep#3", at, 2000);
  b.Op("aten::compute", at, pre, 1);
  b.Op("c10d::allreduce_", at + pre, 20, 2);
  b.Launch("cudaLaunchKernel", kAllReduce, at + pre + 5, 5, at + pre + 10, end - begin - pre - 10, 2);
  b.trace().events.back().args = b.trace().strings.Intern(
      R"("Collective name": "allreduce", "In msg nelems": 4096, "Process Group Name": "0")");
  b.Launch("cudaStreamSynchronize", "Stream Sync", at + pre + 25, end - begin - pre - 20, clock + end + 2, 3, 0,
           nullptr, EventKind::kSync);
  b.Op("aten::post", clock + end + 10, post, 3);
  b.trace().rank = rank;
  b.trace().world_size = 2;
  return std::move(b.trace());
}

StatusOr<JobAnalysis> JobOf(const std::vector<Trace>& traces, const RankHook& hook) {
  std::vector<RankAnalysis> ranks;
  std::vector<std::string> files;
  for (const Trace& t : traces) {
    StatusOr<RankAnalysis> r = AnalyzeRank(t, {}, hook);
    if (!r.ok()) return r.status();
    ranks.push_back(std::move(*r));
    files.push_back("rank" + std::to_string(t.rank) + ".json");
  }
  return JobFromRanks(std::move(ranks), files, {});
}

std::vector<JobCriticalPath> PathsOf(const JobAnalysis& job) {
  std::vector<int> numbers;
  for (const RankAnalysis& r : job.ranks) numbers.push_back(r.rank);
  return JobCriticalPaths(JobStepGraphs(job), numbers, job.stragglers);
}

TEST(JobCriticalPath, RunsThroughTheLateRankIntoTheCollectiveAndOnAlongTheOther) {
  // Rank 0 computes 100 and has 300 of work after the all-reduce; rank 1 computes 500 and
  // has 50 after. Rank 1's clock reads 1 ms later than rank 0's.
  auto job = JobOf({AllReduceRank(0, 100, 300, 0), AllReduceRank(1, 500, 50, 1'000'000)}, CriticalPathHook());
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->stragglers.ranks[1].offset_ns, 1'000'000);
  const std::vector<JobCriticalPath> paths = PathsOf(*job);
  ASSERT_EQ(paths.size(), 1u);
  const JobCriticalPath& p = paths[0];
  EXPECT_EQ(p.window, "ProfilerStep#3");
  EXPECT_EQ(p.ranks, 2);
  EXPECT_EQ(p.joins, 1);
  EXPECT_EQ(p.span_ns, 1020);  // 0 .. rank 0's post ending at 1020, on the aligned clock
  // Rank 1's compute (500), its all-reduce op up to the launch (5), the launch's delay (5),
  // the transfer after the last arrival (200), rank 0's post (300); the 5 the sync takes to
  // return and the host's gaps between top-level ops weigh nothing (HTA's weights).
  EXPECT_EQ(p.length_ns, 500 + 5 + 5 + 200 + 300);
  EXPECT_EQ(p.on_path, (std::vector<int>{1, 0}));
  ASSERT_EQ(p.crossings.size(), 1u);
  EXPECT_EQ(p.crossings[0].from_rank, 1);
  EXPECT_EQ(p.crossings[0].to_rank, 0);
  EXPECT_EQ(p.crossings[0].late_ns, 400);  // rank 1 arrived at 510, rank 0 at 110
  EXPECT_EQ(p.crossings[0].call, kAllReduce);
  EXPECT_EQ(p.by_cause[static_cast<size_t>(PathCause::kGpuCommunication)], 200);
  ASSERT_GE(p.events.size(), 3u);
  EXPECT_EQ(*p.events[0].name, "aten::compute");
  EXPECT_EQ(p.events[0].rank, 1);
  EXPECT_EQ(*p.events[1].name, "aten::post");
  EXPECT_EQ(p.events[1].rank, 0);
  // The tables say the same, one row per step.
  const std::vector<Table> tables = JobCriticalPathTables(*job);
  ASSERT_EQ(tables.size(), 3u);
  EXPECT_EQ(tables[0].rows.size(), 1u);
  EXPECT_EQ(tables[1].rows.size(), 1u);
}

TEST(JobCriticalPath, EntersACollectiveFromTheRankThatReachedItLastNotTheBusiest) {
  // Rank 0 computes 500 and arrives at 510; rank 1's step begins at 800, computes 100 and
  // arrives at 910: rank 1 is last, though rank 0 did more work before the all-reduce.
  auto job = JobOf({AllReduceRank(0, 500, 300, 0, 0, 1100), AllReduceRank(1, 100, 50, 0, 800, 1100)},
                   CriticalPathHook());
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  ASSERT_EQ(job->stragglers.collectives.size(), 1u);
  EXPECT_EQ(job->stragglers.collectives[0].last_rank, 1);
  const std::vector<JobCriticalPath> paths = PathsOf(*job);
  ASSERT_EQ(paths.size(), 1u);
  ASSERT_EQ(paths[0].crossings.size(), 1u);
  EXPECT_EQ(paths[0].crossings[0].from_rank, 1);
  EXPECT_EQ(paths[0].crossings[0].to_rank, 0);
  EXPECT_EQ(paths[0].crossings[0].late_ns, 400);
  // Rank 1's compute, its launch, the transfer after 910 (190), rank 0's post: rank 0's
  // 500 of compute is not on the path.
  EXPECT_EQ(paths[0].length_ns, 100 + 5 + 5 + 190 + 300);
  for (const JobCriticalPath::OnPath& e : paths[0].events) {
    EXPECT_FALSE(e.rank == 0 && *e.name == "aten::compute");
  }
}

TEST(JobCriticalPath, SendsAlignNoClockInAJobWithCollectives) {
  // The all-reduce job, plus a send from rank 0 whose recv on rank 1 ends 300 later (an
  // eager send): the collective alone aligns the clocks, and the straggler result stays.
  const auto with_pair = [](bool pair) {
    Trace a = AllReduceRank(0, 100, 300, 0), b = AllReduceRank(1, 500, 50, 1'000'000);
    if (pair) {
      const char* kSendRecv = "ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)";
      for (Trace* t : {&a, &b}) {
        const bool send = t == &a;
        const int64_t clock = send ? 0 : 1'000'000;
        Event& call = t->Add(EventKind::kRuntime, "cudaLaunchKernel", clock + 1100, 5);
        call.pid = 1;
        call.tid = 1;
        call.correlation = 900;
        Event& k = t->Add(EventKind::kKernel, kSendRecv, clock + 1110, send ? 50 : 350);
        k.tid = 9;
        k.correlation = 900;
        k.args = t->strings.Intern(send ? R"("Collective name": "send", "In msg nelems": 8, "Dst Rank": 1)"
                                        : R"("Collective name": "recv", "In msg nelems": 8, "Src Rank": 0)");
      }
    }
    auto job = JobOf({a, b}, CriticalPathHook());
    EXPECT_TRUE(job.ok());
    return std::move(*job);
  };
  const JobAnalysis plain = with_pair(false), paired = with_pair(true);
  EXPECT_EQ(paired.stragglers.p2p_paired, 2);
  EXPECT_EQ(paired.stragglers.ranks[1].offset_ns, plain.stragglers.ranks[1].offset_ns);
  EXPECT_EQ(paired.stragglers.ranks[1].offset_spread_ns, plain.stragglers.ranks[1].offset_spread_ns);
  EXPECT_EQ(paired.stragglers.alignment, plain.stragglers.alignment);
}

TEST(JobCriticalPath, WithoutAnythingJoiningTheRanksEachStepIsItsLongestRanksPath) {
  Trace a = AllReduceRank(0, 100, 300, 0), b = AllReduceRank(1, 500, 50, 0);
  b.events[4].args = b.strings.Intern(R"("Collective name": "allreduce", "In msg nelems": 8, "Process Group Name": "0")");
  ASSERT_EQ(b.strings.Get(b.events[4].name), kAllReduce);
  auto job = JobOf({a, b}, CriticalPathHook());  // the sizes differ: not matched
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  const std::vector<JobCriticalPath> paths = PathsOf(*job);
  ASSERT_EQ(paths.size(), 1u);
  EXPECT_EQ(paths[0].joins, 0);
  EXPECT_TRUE(paths[0].crossings.empty());
  EXPECT_EQ(paths[0].on_path.size(), 1u);
}

// Rank 0 sends to rank 1: the send launched at `send_at`, the recv at 10; both end at 900.
Trace P2pRank(int rank, int64_t send_at) {
  Builder b;
  b.Unit("ProfilerStep#0", 0, 1000);
  const bool send = rank == 0;
  const int64_t at = send ? send_at : 10;
  b.Op(send ? "aten::prepare" : "aten::idle", 0, at, 1);
  b.Launch("cudaLaunchKernel", "ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)", at, 2, at + 5,
           900 - at - 5, 2);
  b.trace().events.back().args = b.trace().strings.Intern(
      send ? R"("Collective name": "send", "In msg nelems": 64, "Process Group Ranks": "[0, 1]", "Dst Rank": 1)"
           : R"("Collective name": "recv", "In msg nelems": 64, "Process Group Ranks": "[0, 1]", "Src Rank": 0)");
  b.trace().rank = rank;
  b.trace().world_size = 2;
  return std::move(b.trace());
}

TEST(JobCriticalPath, ARecvWaitsForItsSendAndTheClocksAlignByThePair) {
  auto job = JobOf({P2pRank(0, 600), P2pRank(1, 0)}, CriticalPathHook());
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->stragglers.p2p_paired, 2);
  EXPECT_EQ(job->stragglers.matched, 0);
  EXPECT_TRUE(job->stragglers.ranks[1].aligned);
  const std::vector<JobCriticalPath> paths = PathsOf(*job);
  ASSERT_EQ(paths.size(), 1u);
  // The sender's 600 of preparation, its launch (5 to the kernel), the transfer after it
  // arrived (900 - 605 = 295): the recv's 890 on the device is mostly waiting.
  EXPECT_EQ(paths[0].length_ns, 600 + 5 + 295);
  EXPECT_EQ(paths[0].joins, 1);
  EXPECT_EQ(*paths[0].events[0].name, "aten::prepare");
}

TEST(JobCriticalPath, APeerIsMappedThroughTheGroupsRanksAndSurvivesASummary) {
  Builder b;
  b.Unit("ProfilerStep#0", 0, 1000);
  const char* args[] = {
      R"("Collective name": "recv", "Process Group Ranks": "[4, 7]", "Src Rank": 1)",  // group rank 1: global 7
      R"("Collective name": "send", "Dst Rank": 2)",                                   // the default group: 2
      R"("Collective name": "send", "Process Group Ranks": "[4, 7]", "Dst Rank": 5)",  // not in the group
      R"("Collective name": "send", "Dst Rank": -3)",                                  // not a rank
      R"("Collective name": "recv", "Src Rank": 1e300)",
  };
  for (int i = 0; i < 5; ++i) {
    b.Launch("cudaLaunchKernel", "ncclDevKernel_SendRecv", 10 + 100 * i, 2, 20 + 100 * i, 50, i + 1);
    b.trace().events.back().args = b.trace().strings.Intern(args[i]);
  }
  const RankCollectives c = FindCollectives(BuildIndex(b.trace(), {}));
  EXPECT_EQ(c.point_to_point, 5);
  ASSERT_EQ(c.p2p.size(), 2u);
  EXPECT_EQ(c.p2p[0].peer, 7);
  EXPECT_FALSE(c.p2p[0].send);
  EXPECT_EQ(c.p2p[1].peer, 2);
  EXPECT_TRUE(c.p2p[1].send);
  RankAnalysis r;
  r.collectives = c;
  StatusOr<RankAnalysis> back = LoadRankSummary(SaveRankSummary(r));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  ASSERT_EQ(back->collectives.p2p.size(), 2u);
  EXPECT_EQ(back->collectives.p2p[0].peer, 7);
  EXPECT_TRUE(back->collectives.p2p[1].send);
}

TEST(JobWhatIf, TheJoinedJobIsReplayedAsMeasuredAndReTimedAsOne) {
  const auto predict = [](const std::string& change) -> std::pair<int64_t, int64_t> {
    std::vector<std::vector<WhatIfChange>> scenarios = {{*ParseWhatIfChange(change)}};
    auto job = JobOf({AllReduceRank(0, 100, 300, 0), AllReduceRank(1, 500, 50, 1'000'000)},
                     [&](const TraceIndex& x, RankAnalysis& r) -> Status {
                       std::vector<ChangeNotes> notes;
                       auto g = WhatIfStepGraphs(x, &r.collectives, scenarios, std::nullopt, &notes);
                       if (!g.ok()) return g.status();
                       r.step_graphs = std::move(*g);
                       return OkStatus();
                     });
    EXPECT_TRUE(job.ok());
    StepSimulator sim(1);
    for (const auto& step : JobSteps(JobStepGraphs(*job))) sim.Add(step, ClockOffsets(job->stragglers, 2), job->stragglers.joined);
    const std::vector<WhatIfResult> r = sim.Finish();
    EXPECT_EQ(r[0].steps.size(), 1u);
    if (r[0].steps.empty()) return {0, 0};
    return {r[0].steps[0].replay_ns, r[0].steps[0].predicted_ns};
  };
  // Unchanged, the joined replay is the measured job step: 0 .. 1020 on the aligned clock.
  EXPECT_EQ(predict("cpu=1"), std::make_pair(int64_t{1020}, int64_t{1020}));
  // Host work halved on both ranks: rank 1 arrives at 250 + 10 (its allreduce op's 5 to the
  // launch halved to 2.5, the launch's delay kept), the transfer 200, then the 5 the sync
  // takes to return and the gap to post halved, post 150.
  const auto [replay, predicted] = predict("cpu=0.5");
  EXPECT_EQ(replay, 1020);
  EXPECT_LT(predicted, 1020 - 250);
  EXPECT_GT(predicted, 1020 - 250 - 150 - 20);
  // Communication overlapped: the 200 of transfer goes, the wait for rank 1 stays.
  EXPECT_EQ(predict("comm=overlap").second, 1020 - 200);
}

}  // namespace
}  // namespace tierscope
