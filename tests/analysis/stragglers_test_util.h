// Hand-made collectives for the straggler tests (stragglers_test.cc,
// stragglers_lateness_test.cc): calls, a 4-rank job with a late rank, and jittered jobs.
#ifndef TIERSCOPE_TESTS_ANALYSIS_STRAGGLERS_TEST_UTIL_H_
#define TIERSCOPE_TESTS_ANALYSIS_STRAGGLERS_TEST_UTIL_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/stragglers.h"
#include "analysis/table.h"
#include "core/splitmix.h"

namespace tierscope::stragglers_test {

inline CollectiveCall Call(int64_t iteration, const char* name, int64_t arrive, int64_t end, const char* group = "") {
  return {iteration, name, group, -1, arrive - 1000, arrive, end};
}

// 4 ranks, `iterations` of (all_reduce, broadcast). Rank r's clock reads r ms ahead; rank
// 2 reaches every all_reduce 5 ms after the others, which all arrive within 0.1 ms.
inline std::vector<RankCollectives> Job(bool rank2_late = true, int iterations = 8) {
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

inline std::vector<RankCollectivesOf> Of(const std::vector<RankCollectives>& v) {
  std::vector<RankCollectivesOf> out;
  for (size_t r = 0; r < v.size(); ++r) out.push_back({static_cast<int>(r), &v[r]});
  return out;
}

// `n` ranks, `steps` steps (ProfilerStep#`first` on; all kNoStep when `first` is) of
// `per_step` all-reduces that every rank leaves together `span` after the collective's
// start (3 ms, or 1 ms more than the latest arrival can be), 1 ms apart; each rank reaches
// each at a random time up to `jitter` ns after that start, and `late_rank` (-1: none)
// `late` ns later still.
inline std::vector<RankCollectives> Jittered(int n, int steps, int per_step, uint64_t seed, int64_t jitter,
                                             int late_rank = -1, int64_t late = 0, int64_t first = 1) {
  SplitMix64 rng(seed);
  const int64_t span = std::max<int64_t>(3'000'000, jitter + late + 1'000'000);
  std::vector<RankCollectives> ranks(static_cast<size_t>(n));
  for (int st = 0; st < steps; ++st) {
    for (int k = 0; k < per_step; ++k) {
      const int64_t base = 10'000'000 + (st * per_step + k) * (span + 1'000'000);
      for (int r = 0; r < n; ++r) {
        const int64_t arrive = base + static_cast<int64_t>(rng.Next() % static_cast<uint64_t>(jitter)) +
                               (r == late_rank ? late : 0);
        ranks[static_cast<size_t>(r)].calls.push_back(
            Call(first == kNoStep ? kNoStep : first + st, "ncclDevKernel_AllReduce_Sum_f32", arrive, base + span));
      }
    }
  }
  return ranks;
}

inline bool HasNote(const Table& t, const std::string& text) {
  for (const std::string& n : t.notes) {
    if (n.find(text) != std::string::npos) return true;
  }
  return false;
}

}  // namespace tierscope::stragglers_test

#endif  // TIERSCOPE_TESTS_ANALYSIS_STRAGGLERS_TEST_UTIL_H_
