// Stragglers in short profiles: where no relabelling of the ranks can decide, the lateness
// model weighs a rank's lateness against the arrivals' noise (and keeps its false-positive
// rate, and what it cannot rule out happens as often as it says); a rank slow in one step
// is not named; where neither test can decide, the report says so.
#include "analysis/stragglers.h"
#include "analysis/straggler_test_stats.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "core/splitmix.h"
#include "stragglers_test_util.h"

namespace tierscope {
namespace {

using namespace stragglers_test;  // NOLINT: the shared job builders

// The gloo-like job: 2 ranks, `steps` steps of (all-reduce, broadcast); rank 1
// reaches every all-reduce 30 ms late; the broadcast's arrivals tie.
std::vector<RankCollectives> GlooLike(int steps) {
  std::vector<RankCollectives> ranks(2);
  for (int r = 0; r < 2; ++r) {
    for (int64_t it = 1; it <= steps; ++it) {
      const int64_t base = it * 100'000'000;
      ranks[r].calls.push_back(Call(it, "gloo:all_reduce", base + (r == 1 ? 30'000'000 : 0), base + 31'000'000));
      ranks[r].calls.push_back(Call(it, "gloo:broadcast", base + 32'000'000, base + 32'500'000 + r * 10'000));
    }
  }
  return ranks;
}

TEST(Stragglers, ShortProfilesDecideByTheLatenessAgainstTheNoise) {
  // The shapes the issue measured: too few collectives for any relabelling of the ranks to
  // reach 0.01 (were the rank last at all K of n ranks: n^(1-K)), so the lateness is
  // weighed against the arrivals' own noise, and a rank late at every step is named.
  struct Shape {
    int n, steps;
    int64_t jitter, late;
    double floor;
  };
  for (const Shape& sh : {Shape{4, 4, 1'000'000, 13'000'000, 1.0 / 64}, Shape{2, 3, 100'000, 30'000'000, 0.25},
                          Shape{8, 3, 100'000, 30'000'000, 1.0 / 64}, Shape{3, 5, 2'000'000, 20'000'000, 1.0 / 81}}) {
    const std::string where = std::to_string(sh.n) + " ranks x " + std::to_string(sh.steps) + " steps";
    const int late = sh.n - 1;
    const Stragglers s = FindStragglers(Of(Jittered(sh.n, sh.steps, 1, 5, sh.jitter, late, sh.late)));
    EXPECT_EQ(s.test, StragglerTest::kLatenessModel) << where;
    EXPECT_DOUBLE_EQ(s.reachable_floor, sh.floor) << where;
    EXPECT_GE(s.p_collective, sh.floor) << where;  // what relabelling gives: not enough
    EXPECT_EQ(s.model.ranks, sh.n) << where;
    EXPECT_EQ(s.model.blocks, sh.steps) << where;
    EXPECT_EQ(s.model.df, (sh.n - 1) * (sh.steps - 1)) << where;
    EXPECT_TRUE(s.model.by_step) << where;
    EXPECT_EQ(s.model.latest, sh.steps) << where;
    EXPECT_DOUBLE_EQ(s.model.block_floor, std::pow(sh.n, 1 - sh.steps)) << where;
    // The late rank's mean arrival after the ranks' mean: (n-1)/n of its lateness, give or take the jitter.
    EXPECT_NEAR(s.model.effect_ns, static_cast<double>(sh.late) * (sh.n - 1) / sh.n, static_cast<double>(sh.jitter))
        << where;
    EXPECT_LT(s.model.sigma_ns, static_cast<double>(sh.jitter)) << where;
    EXPECT_EQ(s.p_value, s.model.p) << where;
    EXPECT_LT(s.p_value, 1e-4) << where;
    EXPECT_TRUE(s.undecided.empty()) << where;
    const auto findings = StragglerFindings(s);
    ASSERT_EQ(findings.size(), 1u) << where;
    EXPECT_NE(findings[0].title.find("rank " + std::to_string(late)), std::string::npos) << where;
    EXPECT_NE(findings[0].threshold.find("a delay of one rank in one step cannot pass it"), std::string::npos);
    EXPECT_NE(findings[0].threshold.find("that rare delays struck the same rank in each of the " +
                                         std::to_string(sh.steps) + " steps by chance is not ruled out (p >= " +
                                         PValueText(std::pow(sh.n, 1 - sh.steps))),
              std::string::npos)
        << findings[0].threshold;
    const std::string says = "No relabelling of the ranks can reach p < 0.01 here (p >= " + PValueText(sh.floor) +
                             " by construction, were rank " + std::to_string(late) + " last at every collective)";
    EXPECT_TRUE(HasNote(StragglerRankTable(s), says)) << where;
    EXPECT_TRUE(HasNote(StragglerRankTable(s), " degrees of freedom in a model of step and rank) and ")) << where;
    EXPECT_TRUE(HasNote(StragglerRankTable(s), "would have struck the same rank in all " + std::to_string(sh.steps) +
                                                   " with chance " + PValueText(std::pow(sh.n, 1 - sh.steps)) +
                                                   ", which these data cannot rule out"))
        << where;
    EXPECT_EQ(s.model.picked_from, sh.n) << where;
  }
  // The gloo-like job (all-reduce and a tied broadcast a step), arrivals exactly repeated:
  // the spread is taken as the timestamps' resolution, never zero.
  const Stragglers s = FindStragglers(Of(GlooLike(3)));
  EXPECT_EQ(s.test, StragglerTest::kLatenessModel);
  EXPECT_TRUE(s.model.floored);
  EXPECT_EQ(s.model.sigma_ns, 0);
  EXPECT_EQ(s.model.df, 2);
  EXPECT_DOUBLE_EQ(s.model.effect_ns, 7'500'000);  // +15 ms at the all-reduce, 0 at the broadcast
  EXPECT_LT(s.p_value, 1e-4);
  EXPECT_TRUE(HasNote(StragglerRankTable(s), "a spread below the timestamps' resolution taken as 1.000 us"));
  ASSERT_EQ(StragglerFindings(s).size(), 1u);
  EXPECT_NE(StragglerFindings(s)[0].title.find("rank 1"), std::string::npos);
}

// `n` ranks, `steps` steps of one all-reduce; each arrival drawn by `noise` (ns), none late.
template <typename Noise>
std::vector<RankCollectives> Noisy(int n, int steps, Noise&& noise) {
  std::vector<RankCollectives> ranks(static_cast<size_t>(n));
  for (int st = 0; st < steps; ++st) {
    const int64_t base = 10'000'000 + st * 200'000'000LL;
    for (int r = 0; r < n; ++r) {
      ranks[static_cast<size_t>(r)].calls.push_back(
          Call(1 + st, "ncclDevKernel_AllReduce_Sum_f32", base + noise(), base + 150'000'000));
    }
  }
  return ranks;
}

TEST(Stragglers, TheLatenessModelKeepsItsFalsePositiveRate) {
  // No rank is late: 7 short shapes x 150 seeds under five kinds of noise — uniform, a sum
  // of four uniforms (near normal), a rare large delay (1 arrival in 10 is 20 ms later:
  // heavier-tailed than the model assumes), exponential (skewed), and one rank 3x as noisy
  // as the others with the same mean. A finding's test — p < 0.01 and the rank latest in
  // every step — passes no more often than chance allows: at most 6 of a shape's 150 and
  // 2% of all 1050 (10.5 expected were the test exact), p < 0.05 likewise; and p is no
  // constant 1 either. (Over 2,000 seeds a shape: at most 1.75%, 2 ranks x 3 steps with
  // one rank 3x as noisy; with 2 ranks the test is exact for normal noise, so uniform
  // noise's light tails put it a little either side of 1%.)
  const std::vector<std::pair<int, int>> shapes = {{2, 3}, {2, 5}, {2, 7}, {3, 3}, {3, 5}, {4, 4}, {8, 3}};
  for (int kind = 0; kind < 5; ++kind) {
    int runs = 0, below_1 = 0, below_5 = 0, below_50 = 0;
    for (const auto& shape : shapes) {
      const int n = shape.first, steps = shape.second;  // named, not bound: lambdas capture them
      int shape_1 = 0;
      for (uint64_t seed = 1; seed <= 150; ++seed) {
        SplitMix64 rng(seed * 7919 + static_cast<uint64_t>(kind));
        const auto uniform = [&](int64_t to) { return static_cast<int64_t>(rng.Next() % static_cast<uint64_t>(to)); };
        int r = -1;  // the rank Noisy draws for: it draws rank 0, 1, ... n-1 in each step
        const auto noise = [&]() -> int64_t {
          r = (r + 1) % n;
          if (kind == 0) return uniform(1'000'000);
          if (kind == 1) return uniform(250'000) + uniform(250'000) + uniform(250'000) + uniform(250'000);
          if (kind == 2) return uniform(200'000) + (uniform(10) == 0 ? 20'000'000 : 0);
          if (kind == 3) {
            return static_cast<int64_t>(-300'000.0 * std::log1p(-static_cast<double>(rng.Next() >> 11) * 0x1.0p-53));
          }
          return r == 0 ? uniform(3'000'000) : 1'000'000 + uniform(1'000'000);  // both means 1.5 ms
        };
        const Stragglers s = FindStragglers(Of(Noisy(n, steps, noise)));
        ASSERT_EQ(s.test, StragglerTest::kLatenessModel) << n << "x" << steps;
        ++runs;
        const bool latest = s.model.latest == s.model.blocks;
        shape_1 += latest && s.p_value < 0.01 ? 1 : 0;
        below_5 += latest && s.p_value < 0.05 ? 1 : 0;
        below_50 += s.p_value < 0.5 ? 1 : 0;
      }
      EXPECT_LE(shape_1, 6) << "noise " << kind << ", " << n << " x " << steps;
      below_1 += shape_1;
    }
    EXPECT_EQ(runs, 1050);
    EXPECT_LE(below_1, 21) << "noise " << kind;
    EXPECT_LE(below_5, 84) << "noise " << kind;
    EXPECT_GE(below_50, 100) << "noise " << kind;
  }
  // A rank struck by a 20 ms delay in 2 of 3 steps of 8 ranks: beyond normal noise for the
  // pooled model, but not latest in every step, so not named.
  auto ranks = Jittered(8, 3, 1, 13, 200'000);
  ranks[5].calls[0].arrive_ns += 20'000'000;
  ranks[5].calls[2].arrive_ns += 20'000'000;
  const Stragglers s = FindStragglers(Of(ranks));
  EXPECT_EQ(s.test, StragglerTest::kLatenessModel);
  EXPECT_EQ(s.worst, 5);
  EXPECT_GT(s.model.t, 5);
  EXPECT_EQ(s.model.latest, 2);
  EXPECT_TRUE(StragglerFindings(s).empty());
}

TEST(Stragglers, WhatTheModelCannotRuleOutHappensAsOftenAsItSays) {
  // Each step one rank, drawn at random, is 20 ms late (a slow step on a random rank, not
  // a slow rank). Where the draw struck the same rank every step the data are a
  // straggler's, and the finding says what it cannot rule out: that chance, n^(1-B). The
  // rate of findings over 400 seeds is that chance, within sampling error.
  for (const auto& [n, steps] : std::vector<std::pair<int, int>>{{2, 3}, {3, 3}, {4, 4}}) {
    const double floor = std::pow(n, 1 - steps);
    int named = 0;
    for (uint64_t seed = 1; seed <= 400; ++seed) {
      SplitMix64 rng(seed);
      auto ranks = Jittered(n, steps, 1, seed, 200'000);
      for (int st = 0; st < steps; ++st) {
        ranks[rng.Next() % static_cast<uint64_t>(n)].calls[static_cast<size_t>(st)].arrive_ns += 20'000'000;
      }
      const auto findings = StragglerFindings(FindStragglers(Of(ranks)));
      if (findings.empty()) continue;
      ++named;
      ASSERT_GE(findings[0].evidence.size(), 2u);
      EXPECT_NE(findings[0].evidence[1].find("with chance " + PValueText(floor) + ", which these data cannot rule out"),
                std::string::npos)
          << findings[0].evidence[1];
    }
    const double sd = std::sqrt(floor * (1 - floor) / 400);
    EXPECT_NEAR(named / 400.0, floor, 4 * sd + 0.005) << n << " x " << steps;
  }
}

TEST(Stragglers, ARankSlowInOneStepOfAShortProfileIsNotAStraggler) {
  // 4 ranks, 4 steps of one all-reduce jittered by up to 100 us; rank 1 is 20 ms late in
  // one step only (each step in turn), then in two. One block's delay on one rank gives
  // F = 1 in the pooled model whatever its size (t = 1.73 on 9 degrees of freedom), and
  // t = 1 on the rank's own 4 values: p = 4 x 0.196 = 0.78.
  for (int slow = 0; slow < 4; ++slow) {
    auto ranks = Jittered(4, 4, 1, 11, 100'000);
    ranks[1].calls[static_cast<size_t>(slow)].arrive_ns += 20'000'000;
    const Stragglers s = FindStragglers(Of(ranks));
    EXPECT_EQ(s.test, StragglerTest::kLatenessModel);
    EXPECT_EQ(s.worst, 1);
    EXPECT_NEAR(s.model.t, 1.73, 0.05) << slow;
    EXPECT_NEAR(s.model.own_t, 1.0, 0.02) << slow;
    EXPECT_NEAR(s.p_value, 0.78, 0.03) << slow;
    EXPECT_TRUE(StragglerFindings(s).empty()) << slow;
  }
  auto ranks = Jittered(4, 4, 1, 11, 100'000);
  ranks[1].calls[0].arrive_ns += 20'000'000;
  ranks[1].calls[2].arrive_ns += 20'000'000;
  const Stragglers s = FindStragglers(Of(ranks));
  EXPECT_NEAR(s.model.t, 3.0, 0.1);
  EXPECT_NEAR(s.model.own_t, 1.73, 0.05);
  EXPECT_NEAR(s.p_value, 0.36, 0.03);
  EXPECT_TRUE(StragglerFindings(s).empty());
}

TEST(Stragglers, ShortProfilesThatCannotDecideSaySo) {
  // 2 ranks, 1 step of one all-reduce, rank 1 30 ms late: nothing to compare it with.
  Stragglers s = FindStragglers(Of(Jittered(2, 1, 1, 5, 100'000, 1, 30'000'000)));
  EXPECT_EQ(s.matched, 1);
  EXPECT_EQ(s.p_value, 1);
  EXPECT_TRUE(StragglerFindings(s).empty());
  Table t = StragglerTable(s);
  EXPECT_TRUE(HasNote(t, "Straggler test: 1 collective on 2 ranks cannot separate a late rank from chance: p >= 1 "
                         "by construction (rank 1 was last at 1 of its 1 collectives)"));
  EXPECT_TRUE(HasNote(t, "Straggler test: 1 step on 2 ranks cannot separate a late rank from a slow step: p >= 1 "
                         "by construction"));
  EXPECT_TRUE(HasNote(t, "Straggler test: 1 step on 2 ranks is too few to weigh the lateness against"));
  // 2 steps: the model would have a residual, but a delay striking one rank twice passes it.
  s = FindStragglers(Of(Jittered(2, 2, 1, 5, 100'000, 1, 30'000'000)));
  EXPECT_EQ(s.test, StragglerTest::kFewSteps);
  EXPECT_GE(s.p_value, 0.5);
  EXPECT_TRUE(StragglerFindings(s).empty());
  EXPECT_TRUE(HasNote(StragglerTable(s), "Straggler test: 2 steps on 2 ranks are too few to weigh the lateness against "
                                         "the arrivals' noise: the model of step and rank needs 3"));
  // The same outside any step: one collective is one block.
  s = FindStragglers(Of(Jittered(4, 1, 1, 5, 100'000, 3, 30'000'000, kNoStep)));
  EXPECT_EQ(s.test, StragglerTest::kCollectives);
  EXPECT_EQ(s.p_value, 1);
  EXPECT_TRUE(HasNote(StragglerTable(s), "Straggler test: 1 collective on 4 ranks is too few to weigh the "
                                         "lateness against the arrivals' noise: the model of collective and rank "
                                         "needs 3 of them"));
  // With enough steps nothing is said: 8 all-reduces of 4 ranks in each of 6 steps.
  s = FindStragglers(Of(Jittered(4, 6, 8, 5, 100'000, 3, 1'000'000)));
  EXPECT_EQ(s.test, StragglerTest::kCollectivesAndSteps);
  EXPECT_FALSE(s.model.ran);
  EXPECT_TRUE(s.undecided.empty());
  EXPECT_EQ(s.p_value, std::max(s.p_collective, s.p_step));
  EXPECT_LT(s.p_value, 0.01);
  EXPECT_EQ(StragglerFindings(s).size(), 1u);
}

}  // namespace
}  // namespace tierscope
