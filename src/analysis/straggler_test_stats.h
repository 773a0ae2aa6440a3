// The permutation test behind a straggler finding: the chance that the waiting at the
// matched collectives gathers on one rank this much by chance, with the ranks relabelled
// per collective and, where the steps are enough to tell, per step; and, where these data
// cannot decide, a sentence that says so and gives the least p they could ever give.
#ifndef TIERSCOPE_ANALYSIS_STRAGGLER_TEST_STATS_H_
#define TIERSCOPE_ANALYSIS_STRAGGLER_TEST_STATS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/stragglers.h"

namespace tierscope {

inline constexpr double kStragglerAlpha = 0.01;  // a straggler finding needs p below it

// One matched collective as the test sees it.
struct TestedCollective {
  std::string group;
  int64_t iteration = kNoStep;
  std::vector<size_t> who;  // the ranks that took part: indices into Stragglers::ranks
  size_t last = 0;          // the one that arrived last (an index into ranks)
  int64_t late_ns = 0;      // its arrival - the next latest; 0: a tie, no last rank
};

// Fills s's test fields (test, p_value, p_collective, p_step, the floors, worst, steps,
// undecided ...) from the collectives; s->ranks must hold each rank's late_ns already.
void TestStragglerConcentration(const std::vector<TestedCollective>& collectives, Stragglers* s);

// How the test relabelled the ranks, and its p, in a sentence (no final stop).
std::string StragglerTestText(const Stragglers& s);

// "%.2g": a p-value or a floor in a sentence.
std::string PValueText(double p);

}  // namespace tierscope

#endif  // TIERSCOPE_ANALYSIS_STRAGGLER_TEST_STATS_H_
