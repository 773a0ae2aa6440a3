// The batch choice under a latency SLO and a memory budget, and sweep input checks.
#include "lab/sweep.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace tierscope {
namespace {

using testing::Contains;

std::vector<SweepPoint> Points() {
  // batch, P95 ms, peak MB: latency grows faster than memory.
  std::vector<SweepPoint> v;
  for (auto [b, p95, mb] : {std::tuple{1, 2.0, 18.0}, {4, 8.0, 20.0}, {16, 38.0, 32.0},
                            {64, 160.0, 77.0}, {128, 370.0, 137.0}}) {
    SweepPoint p;
    p.batch = b;
    p.seq_len = 128;
    p.p95_ms = p95;
    p.peak_memory_mb = mb;
    v.push_back(p);
  }
  return v;
}

TEST(ChooseBatch, TheLatencySloBinds) {
  const BatchChoice c = ChooseBatch(Points(), 100, 0);
  EXPECT_EQ(c.batch, 16);
  EXPECT_EQ(c.binding, "latency");
  EXPECT_TRUE(Contains(c.reason, "batch 64 would break the latency SLO")) << c.reason;
}

TEST(ChooseBatch, TheMemoryBudgetBinds) {
  const BatchChoice c = ChooseBatch(Points(), 1000, 100);
  EXPECT_EQ(c.batch, 64);
  EXPECT_EQ(c.binding, "memory");
}

TEST(ChooseBatch, BothBindTogether) {
  const BatchChoice c = ChooseBatch(Points(), 100, 60);
  EXPECT_EQ(c.batch, 16);
  EXPECT_EQ(c.binding, "latency and memory");
}

TEST(ChooseBatch, WithoutLimitsTheLargestSweptBatchAndNoBinding) {
  const BatchChoice c = ChooseBatch(Points(), 0, 0);
  EXPECT_EQ(c.batch, 128);
  EXPECT_EQ(c.binding, "none");
  EXPECT_TRUE(Contains(c.reason, "sweep larger batches"));
}

TEST(ChooseBatch, NothingMeetsTheLimitsIsSaid) {
  const BatchChoice c = ChooseBatch(Points(), 1, 10);
  EXPECT_EQ(c.batch, 0);
  EXPECT_EQ(c.binding, "latency and memory");
  EXPECT_TRUE(Contains(c.reason, "no batch meets the limits"));
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
  EXPECT_TRUE(Contains(r->text, "seq_len 16: use batch 2"));
  EXPECT_EQ(r->json["points"].size(), 4u);
}

}  // namespace
}  // namespace tierscope
