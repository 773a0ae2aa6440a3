// The permutation test behind a straggler finding: the chance that the waiting at the
// matched collectives gathers on one rank this much by chance, with the ranks relabelled
// per collective and, where the steps are enough to tell, per step; and, where these data
// cannot decide, a sentence that says so and gives the least p they could ever give.
#ifndef TIERSCOPE_ANALYSIS_STRAGGLER_TEST_STATS_H_
#define TIERSCOPE_ANALYSIS_STRAGGLER_TEST_STATS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/straggler_lateness_model.h"
#include "analysis/stragglers.h"

namespace tierscope {

inline constexpr double kStragglerAlpha = 0.01;  // a straggler finding needs p below it

// Fills s's test fields (test, p_value, p_collective, p_step, the floors, worst, steps,
// undecided ...) from the collectives; s->ranks must hold each rank's late_ns already.
void TestStragglerConcentration(const std::vector<TestedCollective>& collectives, Stragglers* s);

// How the test relabelled the ranks, and its p, in a sentence (no final stop).
std::string StragglerTestText(const Stragglers& s);

// "%.2g": a p-value or a floor in a sentence.
std::string PValueText(double p);

}  // namespace tierscope

#endif  // TIERSCOPE_ANALYSIS_STRAGGLER_TEST_STATS_H_
