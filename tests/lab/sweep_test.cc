// The batch choice under a latency SLO and a memory budget, and sweep input checks.
#include "lab/sweep.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "test_util.h"

namespace tierscope {
namespace {

using testing::Contains;

// batch, samples/s, P95 ms, peak MB.
std::vector<SweepPoint> Make(std::initializer_list<std::tuple<int, double, double, double>> rows) {
  std::vector<SweepPoint> v;
  for (auto [b, sps, p95, mb] : rows) {
    SweepPoint p;
    p.batch = b;
    p.seq_len = 128;
    p.samples_per_s = sps;
    p.p95_ms = p95;
    p.peak_memory_mb = mb;
    v.push_back(p);
  }
  return v;
}

// Throughput grows with the batch; latency grows faster than memory.
std::vector<SweepPoint> Growing() {
  return Make({{1, 300, 2, 18}, {4, 700, 8, 20}, {16, 896, 38, 32}, {64, 950, 160, 77}, {128, 990, 370, 137}});
}

// What a CPU sweep saw: the best at batch 16, then slower as activations leave the caches.
std::vector<SweepPoint> PeaksAt16() {
  return Make({{1, 300, 2, 18}, {4, 700, 8, 20}, {16, 896, 38, 32}, {64, 800, 160, 77},
               {128, 740, 370, 137}, {256, 727, 800, 300}});
}

TEST(ChooseBatch, WithoutLimitsTheThroughputBestBatchNotTheLargest) {
  const BatchChoice c = ChooseBatch(PeaksAt16(), 0, 0);
  EXPECT_EQ(c.batch, 16);
  EXPECT_EQ(c.binding, "none");
  EXPECT_DOUBLE_EQ(c.samples_per_s, 896);
  EXPECT_TRUE(Contains(c.reason, "the best throughput swept")) << c.reason;
}

TEST(ChooseBatch, WithoutLimitsTheSmallestBatchWithinFivePercentOfTheBest) {
  const BatchChoice c = ChooseBatch(Growing(), 0, 0);
  EXPECT_EQ(c.batch, 64);  // 950 >= 0.95 x 990; 896 is not
  EXPECT_EQ(c.binding, "none");
  EXPECT_TRUE(Contains(c.reason, "within 5% of the best (990.0 samples/s at batch 128)")) << c.reason;
  EXPECT_TRUE(Contains(c.reason, "sweep larger batches")) << c.reason;
}

TEST(ChooseBatch, TheLatencySloBinds) {
  const BatchChoice c = ChooseBatch(Growing(), 100, 0);
  EXPECT_EQ(c.batch, 16);
  EXPECT_EQ(c.binding, "latency");
  EXPECT_TRUE(Contains(c.reason, "batch 128 would give 990.0 samples/s but break the latency SLO")) << c.reason;
}

TEST(ChooseBatch, TheMemoryBudgetBinds) {
  const BatchChoice c = ChooseBatch(Growing(), 1000, 100);
  EXPECT_EQ(c.batch, 64);
  EXPECT_EQ(c.binding, "memory");
}

TEST(ChooseBatch, BothBindTogether) {
  const BatchChoice c = ChooseBatch(Growing(), 100, 60);
  EXPECT_EQ(c.batch, 16);
  EXPECT_EQ(c.binding, "latency and memory");
}

TEST(ChooseBatch, UnderLimitsTheBestThroughputNotTheLargestThatFits) {
  // Every batch meets a loose SLO: the choice is still the fastest, batch 16.
  const BatchChoice c = ChooseBatch(PeaksAt16(), 10000, 0);
  EXPECT_EQ(c.batch, 16);
  EXPECT_EQ(c.binding, "none");
}

TEST(ChooseBatch, NothingMeetsTheLimitsIsSaid) {
  const BatchChoice c = ChooseBatch(Growing(), 1, 10);
  EXPECT_EQ(c.batch, 0);
  EXPECT_EQ(c.binding, "latency and memory");
  EXPECT_TRUE(Contains(c.reason, "no batch meets the limits"));
}

TEST(ThroughputTrend, AFallAsTheBatchGrowsIsSaidWithTheCachesItOutgrew) {
  // Two workers: L2 is per core (2 x 2 MiB), L3 one 32 MiB instance for both.
  const std::vector<CacheLevel> caches = {{1, 48 << 10, 1}, {2, 2 << 20, 1}, {3, 32 << 20, 2}};
  const std::string t = DescribeThroughputTrend(PeaksAt16(), caches, 2);
  EXPECT_TRUE(Contains(t, "throughput falls as the batch grows past 16: 896.0 samples/s at batch 16, "
                          "727.0 at batch 256 (-19%)")) << t;
  EXPECT_TRUE(Contains(t, "L3 (32 MiB) between batch 16 and 64")) << t;
  EXPECT_EQ(DescribeThroughputTrend(Growing(), caches, 2), "");  // it only grows
}

TEST(Sweep, ListsAndModesAreChecked) {
  EXPECT_EQ(*ParseSizeList("64, 1,16,16", "--batch-sizes"), (std::vector<int64_t>{1, 16, 64}));
  EXPECT_TRUE(Contains(ParseSizeList("1,x", "--batch-sizes").status().message(), "'x' is not a positive integer"));
  EXPECT_TRUE(Contains(ParseSizeList("0", "--seq-lens").status().message(), "--seq-lens"));
  EXPECT_FALSE(ParseSizeList("", "--batch-sizes").ok());
  SweepOptions o;
  o.bench.mode = "serial-fp32";
  EXPECT_TRUE(Contains(RunSweep(o).status().message(), "needs a batch mode"));
}

class SweepRunTest : public testing::FreshCacheTest {};

TEST_F(SweepRunTest, EveryPointAndSeqLenBucketIsMeasured) {
  SweepOptions o;
  o.bench.warmup = 0;
  o.bench.iterations = 2;
  o.bench.threads = 2;
  o.batch_sizes = {1, 2};
  o.seq_lens = {8, 16};
  o.slo_ms = 1000;
  auto r = RunSweep(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->points.size(), 4u);
  EXPECT_EQ(r->points[3].seq_len, 16);
  EXPECT_EQ(r->points[3].batch, 2);
  for (const SweepPoint& p : r->points) {
    EXPECT_GT(p.samples_per_s, 0);
    EXPECT_LE(p.p50_ms, p.p99_ms);
    EXPECT_GT(p.peak_memory_mb, 0);
  }
  ASSERT_EQ(r->choices.size(), 2u);
  EXPECT_TRUE(Contains(r->text, "seq_len 16: use batch "));
  for (const BatchChoice& c : r->choices) {  // the faster of the two batches measured
    const auto& pts = r->points;
    double best = 0;
    for (const SweepPoint& p : pts) {
      if (p.seq_len == c.seq_len) best = std::max(best, p.samples_per_s);
    }
    EXPECT_GE(c.samples_per_s, 0.95 * best);
  }
  EXPECT_EQ(r->json["points"].size(), 4u);
}

}  // namespace
}  // namespace tierscope
