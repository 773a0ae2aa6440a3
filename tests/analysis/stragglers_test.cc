// Stragglers on hand-made collectives: clocks that disagree by milliseconds are aligned by
// the ends of the collectives that end together, the rank that arrives late is named, and
// ranks that call different collectives are compared only up to where they differ.
#include "analysis/stragglers.h"

#include <gtest/gtest.h>

#include "analysis/trace_builder.h"

namespace tierscope {
namespace {

// 4 ranks, 3 iterations of (all_reduce, broadcast). Rank r's clock reads r ms ahead; rank
// 2 reaches every all_reduce 5 ms after the others, which all arrive within 0.1 ms.
std::vector<RankCollectives> Job(bool rank2_late = true) {
  std::vector<RankCollectives> ranks(4);
  for (int r = 0; r < 4; ++r) {
    const int64_t skew = r * 1'000'000;
    for (int64_t it = 1; it <= 3; ++it) {
      const int64_t base = it * 100'000'000;
      const int64_t arrive = base + (r == 2 && rank2_late ? 5'000'000 : r * 30'000);
      const int64_t end = base + 6'000'000;  // every rank leaves the all-reduce together
      ranks[r].calls.push_back({it, "ncclDevKernel_AllReduce_Sum_f32", arrive + skew, end + skew});
      // The broadcast: the root ends first, receivers at scattered times.
      ranks[r].calls.push_back({it, "ncclDevKernel_Broadcast_RING_LL", base + 7'000'000 + skew,
                                base + 7'500'000 + r * 400'000 + skew});
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
  EXPECT_EQ(s.matched, 6);
  EXPECT_TRUE(s.mismatch.empty());
  for (int r = 0; r < 4; ++r) EXPECT_EQ(s.ranks[r].offset_ns, r * 1'000'000) << r;
  EXPECT_NE(s.alignment.find("3 all-reduce"), std::string::npos) << s.alignment;
  EXPECT_EQ(s.ranks[2].times_last, 3 + 0);  // every all_reduce (broadcast arrivals tie)
  EXPECT_EQ(s.ranks[2].late_ns, 3 * (5'000'000 - 90'000));  // vs rank 3 at +0.09 ms
  ASSERT_EQ(s.iterations.size(), 3u);
  for (const StragglerIteration& i : s.iterations) {
    EXPECT_EQ(i.last_rank, 2);
    EXPECT_EQ(i.collectives, 2);
    EXPECT_DOUBLE_EQ(i.mean_late_ns, 4'910'000);
  }
  const auto findings = StragglerFindings(s);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].rule, "straggler");
  EXPECT_NE(findings[0].title.find("rank 2"), std::string::npos);
}

TEST(Stragglers, NoStragglerWhenArrivalsAreEven) {
  // Rank 3 is last at every all-reduce, but by 30 us of a 6 ms collective: not a straggler.
  const auto ranks = Job(/*rank2_late=*/false);
  const Stragglers s = FindStragglers(Of(ranks));
  EXPECT_EQ(s.ranks[3].times_last, 3);
  EXPECT_TRUE(StragglerFindings(s).empty());
}

TEST(Stragglers, DifferentSequencesAreComparedUpToWhereTheyDiffer) {
  auto ranks = Job();
  ranks[3].calls[3].name = "ncclDevKernel_AllGather_RING_LL";  // iteration 2, second call
  const Stragglers s = FindStragglers(Of(ranks));
  EXPECT_EQ(s.matched, 5);
  EXPECT_NE(s.mismatch.find("iteration 2, collective 2"), std::string::npos) << s.mismatch;
  EXPECT_EQ(StragglerTable(s).notes.size(), 2u);
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

TEST(Stragglers, CollectivesAreDeviceKernelsElseHostCalls) {
  Builder gpu;
  gpu.Unit("ProfilerStep#7", 0, 1000);
  gpu.Launch("cudaLaunchKernel", "gemm", 10, 5, 20, 50, 1);
  gpu.Launch("cudaLaunchKernel", "ncclDevKernel_AllReduce_Sum_f32", 100, 5, 200, 300, 2);
  const RankCollectives g = FindCollectives(BuildIndex(gpu.trace(), {}));
  EXPECT_TRUE(g.device);
  ASSERT_EQ(g.calls.size(), 1u);
  EXPECT_EQ(g.calls[0].iteration, 7);  // by its launch, inside the step
  EXPECT_EQ(g.calls[0].arrive_ns, 200);
  EXPECT_EQ(g.calls[0].end_ns, 500);

  Builder cpu;  // gloo: the backend's ranges, not the c10d calls that issued them
  cpu.Unit("ProfilerStep#1", 0, 1000);
  cpu.Op("c10d::allreduce_", 100, 5, 1);
  cpu.Unit("gloo:all_reduce", 110, 400, /*tid=*/2);
  const RankCollectives c = FindCollectives(BuildIndex(cpu.trace(), {}));
  EXPECT_FALSE(c.device);
  ASSERT_EQ(c.calls.size(), 1u);
  EXPECT_EQ(c.calls[0].name, "gloo:all_reduce");
  EXPECT_EQ(c.calls[0].iteration, 1);
}

}  // namespace
}  // namespace tierscope
