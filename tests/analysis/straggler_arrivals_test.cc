// The straggler view's arrivals: each rank against the median rank, on the aligned clock.
#include "analysis/straggler_arrivals.h"

#include <gtest/gtest.h>

namespace tierscope {
namespace {

TEST(StragglerArrivals, EachRankBehindTheMedianOnTheAlignedClock) {
  // Three ranks, two all-reduces; rank 2's clock is 1,000 ns ahead, and it is 500 ns late
  // at the second.
  std::vector<RankCollectives> calls(3);
  const int64_t arrive[2][3] = {{100, 110, 1'105}, {300, 300, 1'800}};
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 2; ++c) calls[r].calls.push_back(CollectiveCall{.name = "allreduce", .arrive_ns = arrive[c][r]});
  }
  Stragglers s;
  s.ranks = {StragglerRank{.rank = 0, .aligned = true}, StragglerRank{.rank = 1, .aligned = true},
             StragglerRank{.rank = 2, .aligned = true, .offset_ns = 1'000}};
  for (size_t c = 0; c < 2; ++c) {
    s.joined.push_back(JoinedCalls{.iteration = 4, .index = static_cast<int64_t>(c), .name = "allreduce",
                                   .calls = {{0, c}, {1, c}, {2, c}}});
  }
  s.joined.push_back(JoinedCalls{.name = "send", .p2p = true, .calls = {{0, 0}, {1, 0}}});  // not a collective
  const std::vector<RankCollectivesOf> ranks = {{0, &calls[0]}, {1, &calls[1]}, {2, &calls[2]}};
  const nlohmann::json a = StragglerArrivals(s, ranks);
  EXPECT_EQ(a["ranks"], nlohmann::json({0, 1, 2}));
  ASSERT_EQ(a["collectives"].size(), 2u);
  EXPECT_EQ(a["behind_ns"][0], nlohmann::json({-5, 5, 0}));    // 100, 110, 105: median 105
  EXPECT_EQ(a["behind_ns"][1], nlohmann::json({0, 0, 500}));   // 300, 300, 800
  EXPECT_EQ(a["matched"], 2);
  // At most `limit`: the widest spread stays.
  const nlohmann::json one = StragglerArrivals(s, ranks, 1);
  ASSERT_EQ(one["collectives"].size(), 1u);
  EXPECT_EQ(one["collectives"][0]["index"], 1);
  EXPECT_EQ(one["shown"], 1);
  EXPECT_TRUE(StragglerArrivals(Stragglers{}, ranks).is_null());
}

}  // namespace
}  // namespace tierscope
