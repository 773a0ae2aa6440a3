// A job's step timeline: the ranks' own steps side by side on the clock the stragglers'
// alignment found, their lanes named for their rank, the longest rank's path the figure.
#include "analysis/job_timeline.h"

#include <gtest/gtest.h>

#include <string>

#include "analysis/job.h"
#include "trace_builder.h"

namespace tierscope {
namespace {

// One step at `t0` on the rank's clock: an op, its launch, a kernel of `kernel_ns`.
Trace Rank(int64_t t0, int64_t kernel_ns) {
  Builder b;
  b.Unit("ProfilerStep#4", t0, 1000);
  b.Op("aten::linear", t0 + 10, 300, 1);
  b.Launch("cudaLaunchKernel", "gemm", t0 + 20, 30, t0 + 100, kernel_ns, 1);
  return std::move(b.trace());
}

// Two ranks with timelines: rank 0's step at 5,000 ns, rank 1's at 9,000 ns on its own
// clock, with a longer kernel; rank 1 aligned by `rank1_offset` when `aligned`.
JobAnalysis TwoRanks(bool aligned, int64_t rank1_offset) {
  AnalysisOptions o;
  o.timeline = true;
  const Trace r0 = Rank(5'000, 200), r1 = Rank(9'000, 700);
  JobAnalysis job;
  job.ranks.push_back(AnalyzeRank(r0, o));
  job.ranks.push_back(AnalyzeRank(r1, o));
  job.ranks[0].rank = 0;
  job.ranks[1].rank = 1;
  job.stragglers.ranks = {StragglerRank{.rank = 0, .aligned = true},
                          StragglerRank{.rank = 1, .aligned = aligned, .offset_ns = rank1_offset}};
  return job;
}

TEST(JobTimeline, RanksSideBySideOnTheAlignedClock) {
  // Rank 1's clock runs 4,000 ns ahead of rank 0's.
  const JobAnalysis job = TwoRanks(/*aligned=*/true, 4'000);
  const nlohmann::json t = JobTimeline(job);
  ASSERT_TRUE(t.is_object());
  EXPECT_EQ(t["step"], "ProfilerStep#4");
  EXPECT_EQ(t["origin_ns"], 5'000);
  ASSERT_EQ(t["steps"].size(), 1u);
  EXPECT_EQ(t["steps"][0]["kernels"], 2);  // one per rank
  EXPECT_EQ(t["steps"][0]["begin_ns"], 0);
  EXPECT_EQ(t["steps"][0]["end_ns"], 1000);  // both steps fall on the same aligned window
  // Each rank's kernel at 100 ns into its step, on the aligned clock.
  const auto& e = t["events"];
  int kernels = 0;
  for (size_t i = 0; i < e["lane"].size(); ++i) {
    const nlohmann::json& lane = t["lanes"][e["lane"][i].get<size_t>()];
    const std::string name = lane["name"];
    EXPECT_EQ(name.rfind("rank " + std::to_string(lane["rank"].get<int>()) + " ", 0), 0u) << name;
    if (t["kinds"][e["kind"][i].get<size_t>()] == "kernel") {
      ++kernels;
      EXPECT_EQ(e["start_ns"][i], 100) << name;
      const int64_t launch = e["launch"][i];
      ASSERT_GE(launch, 0);
      EXPECT_EQ(t["lanes"][e["lane"][static_cast<size_t>(launch)].get<size_t>()]["rank"], lane["rank"]);
    }
  }
  EXPECT_EQ(kernels, 2);
  // The figure is the longest rank's path (rank 1's, with the longer kernel), not a sum.
  EXPECT_EQ(t["critical_path"]["rank"], 1);
  EXPECT_EQ(t["critical_path"]["length_ns"], job.ranks[1].timeline["critical_path"]["length_ns"]);
  EXPECT_GT(t["critical_path"]["rows"].size(), job.ranks[1].timeline["critical_path"]["rows"].size());
  EXPECT_EQ(t["why"].get<std::string>().find("own clocks"), std::string::npos);
}

TEST(JobTimeline, ARankNoCollectiveAlignedIsOnItsOwnClockAndSaysSo) {
  const JobAnalysis job = TwoRanks(/*aligned=*/false, 0);
  const nlohmann::json t = JobTimeline(job);
  EXPECT_EQ(t["steps"][0]["end_ns"], 4'000 + 1000);
  EXPECT_NE(t["why"].get<std::string>().find("1 rank(s) on their own clocks"), std::string::npos) << t["why"];
  EXPECT_TRUE(JobTimeline(JobAnalysis{}).is_null());
}

}  // namespace
}  // namespace tierscope
