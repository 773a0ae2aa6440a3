// Stragglers on hand-made collectives: clocks that disagree by milliseconds are aligned by
// the ends of the collectives that end together, the rank that arrives late is named, noise
// is not, process groups are compared apart, and ranks whose sequences differ are compared
// only where they agree.
#include "analysis/stragglers.h"

#include <gtest/gtest.h>

#include "analysis/trace_builder.h"
#include "core/splitmix.h"

namespace tierscope {
namespace {

CollectiveCall Call(int64_t iteration, const char* name, int64_t arrive, int64_t end, const char* group = "") {
  return {iteration, name, group, -1, arrive - 1000, arrive, end};
}

// 4 ranks, `iterations` of (all_reduce, broadcast). Rank r's clock reads r ms ahead; rank
// 2 reaches every all_reduce 5 ms after the others, which all arrive within 0.1 ms.
std::vector<RankCollectives> Job(bool rank2_late = true, int iterations = 8) {
  std::vector<RankCollectives> ranks(4);
  for (int r = 0; r < 4; ++r) {
    const int64_t skew = r * 1'000'000;
    for (int64_t it = 1; it <= iterations; ++it) {
      const int64_t base = it * 100'000'000;
      const int64_t arrive = base + (r == 2 && rank2_late ? 5'000'000 : r * 30'000);
      const int64_t end = base + 6'000'000;  // every rank leaves the all-reduce together
      ranks[r].calls.push_back(Call(it, "ncclDevKernel_AllReduce_Sum_f32", arrive + skew, end + skew));
      // The broadcast: the root ends first, receivers at scattered times.
      ranks[r].calls.push_back(Call(it, "ncclDevKernel_Broadcast_RING_LL", base + 7'000'000 + skew,
                                    base + 7'500'000 + r * 400'000 + skew));
    }
    ranks[r].device = true;
  }
  return ranks;
}

std::vector<RankCollectivesOf> Of(const std::vector<RankCollectives>& v) {
  std::vector<RankCollectivesOf> out;
  for (size_t r = 0; r < v.size(); ++r) out.push_back({static_cast<int>(r), &v[r]});
  return out;
}

TEST(Stragglers, ClocksAlignAtCollectiveEndsAndTheLateRankIsNamed) {
  const auto ranks = Job();
  const Stragglers s = FindStragglers(Of(ranks));
  EXPECT_EQ(s.matched, 16);
  EXPECT_TRUE(s.mismatch.empty());
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(s.ranks[r].offset_ns, r * 1'000'000) << r;
    EXPECT_EQ(s.ranks[r].offset_spread_ns, 0) << r;
  }
  EXPECT_NE(s.alignment.find("8 all-reduce"), std::string::npos) << s.alignment;
  EXPECT_EQ(s.ranks[2].times_last, 8);  // every all_reduce (broadcast arrivals tie)
  EXPECT_EQ(s.ranks[2].collectives, 16);
  EXPECT_EQ(s.ranks[2].late_ns, 8 * (5'000'000 - 90'000));  // vs rank 3 at +0.09 ms
  ASSERT_EQ(s.iterations.size(), 8u);
  for (const StragglerIteration& i : s.iterations) {
    EXPECT_EQ(i.last_rank, 2);
    EXPECT_EQ(i.collectives, 2);
    EXPECT_DOUBLE_EQ(i.mean_late_ns, 4'910'000);
  }
  EXPECT_LT(s.p_value, 0.01);
  ASSERT_EQ(s.collectives.size(), 16u);
  const Table per = StragglerCollectiveTable(s, 5);
  ASSERT_EQ(per.rows.size(), 5u);
  EXPECT_EQ(std::get<int64_t>(per.rows[0][4]), 2);  // the latest first: rank 2's
  const auto findings = StragglerFindings(s);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].rule, "straggler");
  EXPECT_NE(findings[0].title.find("rank 2"), std::string::npos);
}

TEST(Stragglers, AFewLateCollectivesAreNotEnoughToNameARank) {
  // Rank 2 last in the only 2 all-reduces: 4 ranks make that a 1 in 16 chance.
  const auto ranks = Job(/*rank2_late=*/true, /*iterations=*/2);
  const Stragglers s = FindStragglers(Of(ranks));
  EXPECT_EQ(s.ranks[2].times_last, 2);
  EXPECT_GT(s.p_value, 0.01);
  EXPECT_TRUE(StragglerFindings(s).empty());
}

TEST(Stragglers, NoStragglerWhenArrivalsAreEven) {
  // Rank 3 is last at every all-reduce, but by 30 us of a 6 ms collective: not a straggler.
  const auto ranks = Job(/*rank2_late=*/false);
  const Stragglers s = FindStragglers(Of(ranks));
  EXPECT_EQ(s.ranks[3].times_last, 8);
  EXPECT_TRUE(StragglerFindings(s).empty());
}

TEST(Stragglers, TwoRanksTakingTurnsByNoiseAreNotAStraggler) {
  // Two ranks whose arrivals jitter alike by up to 300 us around a 1 ms all-reduce: one of
  // them always carries more of the waiting, but by chance.
  int named = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    SplitMix64 rng(seed);
    std::vector<RankCollectives> ranks(2);
    for (int64_t it = 1; it <= 10; ++it) {
      const int64_t base = it * 10'000'000;
      for (int r = 0; r < 2; ++r) {
        const int64_t jitter = static_cast<int64_t>(rng.Next() % 300'000);
        ranks[r].calls.push_back(Call(it, "ncclKernel_AllReduce_RING_LL_Sum_float", base + jitter, base + 1'300'000));
      }
    }
    named += StragglerFindings(FindStragglers(Of(ranks))).empty() ? 0 : 1;
  }
  EXPECT_LE(named, 1);
}

TEST(Stragglers, ProcessGroupsAreMatchedAndAlignedApart) {
  // Groups {0,1} and {2,3} on one clock; rank 3 reaches its group's all-reduce 300 us late.
  std::vector<RankCollectives> ranks(4);
  for (int r = 0; r < 4; ++r) {
    const char* group = r < 2 ? "1" : "2";
    for (int64_t it = 1; it <= 10; ++it) {
      const int64_t base = it * 10'000'000 + (r < 2 ? 0 : 2'000'000);
      ranks[r].calls.push_back(Call(it, "ncclKernel_AllReduce_RING_LL_Sum_float", base + (r == 3 ? 300'000 : 0),
                                    base + 1'000'000, group));
    }
  }
  const Stragglers s = FindStragglers(Of(ranks));
  EXPECT_EQ(s.matched, 20);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(s.ranks[r].offset_ns, 0) << r;
  EXPECT_NE(s.alignment.find("aligned among themselves"), std::string::npos) << s.alignment;
  EXPECT_EQ(s.ranks[3].times_last, 10);
  EXPECT_EQ(s.ranks[3].collectives, 10);
  const auto findings = StragglerFindings(s);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_NE(findings[0].title.find("rank 3"), std::string::npos);
}

TEST(Stragglers, ChainedAndOverlappingGroupsAlignExactly) {
  // Groups {0,1} x2, {1,2}, {2,3} x2 per iteration (a chain, unequal call counts); clocks
  // skewed 0 / 3 / 6 / 9 ms; nobody late.
  const std::vector<std::vector<int>> groups = {{0, 1}, {0, 1}, {1, 2}, {2, 3}, {2, 3}};
  std::vector<RankCollectives> ranks(4);
  for (int64_t it = 1; it <= 10; ++it) {
    for (size_t g = 0; g < groups.size(); ++g) {
      const std::string name = "g" + std::to_string(groups[g][0]) + std::to_string(groups[g][1]);
      const int64_t base = it * 10'000'000 + static_cast<int64_t>(g) * 1'000'000;
      for (int r : groups[g]) {
        CollectiveCall c = Call(it, "ncclKernel_AllReduce_RING_LL_Sum_float", base + r * 3'000'000,
                                base + 500'000 + r * 3'000'000);
        c.group = name;
        ranks[static_cast<size_t>(r)].calls.push_back(c);
      }
    }
  }
  const Stragglers s = FindStragglers(Of(ranks));
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(s.ranks[r].offset_ns, r * 3'000'000) << r;
    EXPECT_EQ(s.ranks[r].times_last, 0) << r;
  }
  EXPECT_TRUE(StragglerFindings(s).empty());
}

TEST(Stragglers, ARankSlowForWholeIterationsByChanceIsNotAStraggler) {
  // 2 ranks, 5 iterations of 10 collectives; in each iteration one rank, drawn at random,
  // is 300 us behind in every collective (a slow step, not a slow rank).
  int named = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    SplitMix64 rng(seed);
    std::vector<RankCollectives> ranks(2);
    for (int64_t it = 1; it <= 5; ++it) {
      const int slow = static_cast<int>(rng.Next() % 2);
      for (int64_t k = 0; k < 10; ++k) {
        const int64_t base = it * 100'000'000 + k * 2'000'000;
        for (int r = 0; r < 2; ++r) {
          const int64_t jitter = static_cast<int64_t>(rng.Next() % 20'000);
          ranks[r].calls.push_back(Call(it, "ncclKernel_AllReduce_RING_LL_Sum_float",
                                        base + jitter + (r == slow ? 300'000 : 0), base + 1'300'000));
        }
      }
    }
    named += StragglerFindings(FindStragglers(Of(ranks))).empty() ? 0 : 1;
  }
  EXPECT_LE(named, 1);
}

TEST(Stragglers, ARankWithoutCollectivesIsNotAlignedAndSaysSo) {
  auto ranks = Job();
  ranks[0].calls.clear();
  const Stragglers s = FindStragglers(Of(ranks));
  EXPECT_FALSE(s.ranks[0].aligned);
  EXPECT_TRUE(s.ranks[1].aligned);
  EXPECT_EQ(s.ranks[1].offset_ns, 0);  // the first rank with collectives anchors
  EXPECT_EQ(s.ranks[3].offset_ns, 2'000'000);
  EXPECT_NE(s.alignment.find("ranks 0: no matched collective"), std::string::npos) << s.alignment;
  const Table t = StragglerRankTable(s);
  EXPECT_EQ(std::get<std::string>(t.rows[0][1]), "-");
}

TEST(Stragglers, DifferentCountsInAnIterationAreNotPaired) {
  // 3 ranks, 4 identical all-reduces per step, all on time; rank 1's trace lost one in step 2.
  std::vector<RankCollectives> ranks(3);
  for (int r = 0; r < 3; ++r) {
    for (int64_t it = 1; it <= 6; ++it) {
      for (int64_t k = 0; k < 4; ++k) {
        if (r == 1 && it == 2 && k == 1) continue;
        const int64_t base = it * 10'000'000 + k * 2'000'000;
        ranks[r].calls.push_back(Call(it, "ncclKernel_AllReduce_RING_LL_Sum_float", base + r * 1000, base + 1'000'000));
      }
    }
  }
  const Stragglers s = FindStragglers(Of(ranks));
  EXPECT_EQ(s.matched, 20);
  EXPECT_EQ(s.skipped, 4);
  EXPECT_NE(s.mismatch.find("iteration 2"), std::string::npos) << s.mismatch;
  EXPECT_TRUE(StragglerFindings(s).empty());
}

TEST(Stragglers, DifferentSequencesAreComparedUpToWhereTheyDiffer) {
  auto ranks = Job();
  ranks[3].calls[3].name = "ncclDevKernel_AllGather_RING_LL";  // iteration 2, second call
  const Stragglers s = FindStragglers(Of(ranks));
  EXPECT_EQ(s.matched, 15);
  EXPECT_EQ(s.skipped, 1);
  EXPECT_NE(s.mismatch.find("iteration 2, collective 2"), std::string::npos) << s.mismatch;
  EXPECT_EQ(StragglerTable(s).notes.size(), 2u);
  // Message sizes, where the trace records them, must agree too.
  ranks = Job();
  ranks[0].calls[0].elems = 100;
  ranks[1].calls[0].elems = 200;
  EXPECT_EQ(FindStragglers(Of(ranks)).skipped, 2);
}

TEST(Stragglers, OneRankOrNoCollectivesSayWhy) {
  const auto ranks = Job();
  EXPECT_NE(FindStragglers({{0, &ranks[0]}}).alignment.find("one rank"), std::string::npos);
  RankCollectives none;
  const Stragglers s = FindStragglers({{0, &none}, {1, &none}});
  EXPECT_EQ(s.matched, 0);
  EXPECT_NE(s.alignment.find("no collective matched"), std::string::npos);
  EXPECT_TRUE(StragglerFindings(s).empty());
}

TEST(Stragglers, AJobWithFewerTracesThanRanksSaysSo) {
  const auto ranks = Job();
  const Stragglers s = FindStragglers(Of(ranks), /*world_size=*/128);
  const Table t = StragglerTable(s);
  ASSERT_FALSE(t.notes.empty());
  EXPECT_NE(t.notes.back().find("4 of the job's 128 ranks"), std::string::npos) << t.notes.back();
  const auto findings = StragglerFindings(s);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_NE(findings[0].evidence.back().find("4 of the job's 128"), std::string::npos);
}

TEST(Stragglers, CollectivesAreDeviceKernelsElseHostCalls) {
  Builder gpu;
  gpu.Unit("ProfilerStep#7", 0, 1000);
  gpu.Launch("cudaLaunchKernel", "gemm", 10, 5, 20, 50, 1);
  gpu.Launch("cudaLaunchKernel", "ncclDevKernel_AllReduce_Sum_f32", 100, 5, 200, 300, 2);
  gpu.trace().events.back().args = gpu.trace().strings.Intern(
      R"("Collective name": "allreduce", "In msg nelems": 4096, "Process Group Name": "0")");
  gpu.Launch("cudaLaunchKernel", "ncclDevKernel_SendRecv", 600, 5, 700, 100, 3);
  gpu.trace().events.back().args = gpu.trace().strings.Intern(R"("Collective name": "send")");
  const RankCollectives g = FindCollectives(BuildIndex(gpu.trace(), {}));
  EXPECT_TRUE(g.device);
  EXPECT_EQ(g.point_to_point, 1);  // the send: two ranks, not a group
  ASSERT_EQ(g.calls.size(), 1u);
  EXPECT_EQ(g.calls[0].iteration, 7);  // by its launch, inside the step
  EXPECT_EQ(g.calls[0].issue_ns, 100);
  EXPECT_EQ(g.calls[0].arrive_ns, 200);
  EXPECT_EQ(g.calls[0].end_ns, 500);
  EXPECT_EQ(g.calls[0].group, "0");
  EXPECT_EQ(g.calls[0].elems, 4096);

  Builder cpu;  // gloo: the backend's ranges, not the c10d calls that issued them
  cpu.Unit("ProfilerStep#1", 0, 1000);
  cpu.Op("c10d::allreduce_", 100, 5, 1);
  cpu.Unit("gloo:all_reduce", 110, 400, /*tid=*/2);
  cpu.Unit("gloo:send", 600, 50, /*tid=*/2);  // point to point: left out
  cpu.Unit("gloo:recv", 700, 50, /*tid=*/2);
  const RankCollectives c = FindCollectives(BuildIndex(cpu.trace(), {}));
  EXPECT_FALSE(c.device);
  EXPECT_EQ(c.point_to_point, 2);
  ASSERT_EQ(c.calls.size(), 1u);
  EXPECT_EQ(c.calls[0].name, "gloo:all_reduce");
  EXPECT_EQ(c.calls[0].iteration, 1);
}

}  // namespace
}  // namespace tierscope
