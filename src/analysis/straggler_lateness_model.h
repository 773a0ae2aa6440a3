// The stragglers' second test, for profiles too short for any relabelling of the ranks
// to reach p < 0.01 (a rank last at all 4 all-reduces of 4 steps of 4 ranks has p >= 4^-3
// = 0.016 whatever its lateness): the worst rank's arrivals weighed against the noise of
// everyone's, in a two-way model of block (step, or collective outside any) and rank.
#ifndef TIERSCOPE_ANALYSIS_STRAGGLER_LATENESS_MODEL_H_
#define TIERSCOPE_ANALYSIS_STRAGGLER_LATENESS_MODEL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/stragglers.h"

namespace tierscope {

// One matched collective as the tests see it.
struct TestedCollective {
  std::string group;
  int64_t iteration = kNoStep;
  std::vector<size_t> who;  // the ranks that took part: indices into Stragglers::ranks
  size_t last = 0;          // the one that arrived last (an index into ranks)
  int64_t late_ns = 0;      // its arrival - the next latest; 0: a tie, no last rank
  std::vector<double> arrive_ns;  // parallel to who: arrivals on the aligned clocks (any common origin)
};

// The residual spread is never taken below this: Kineto's timestamps are microseconds,
// so arrivals that agree exactly (a synthetic trace) do not make the noise zero.
inline constexpr double kArrivalResolutionNs = 1000;

// The model decides with this many blocks at least: with 2, a delay that strikes the
// same rank in both by chance (1 in n^(B-1) of the delays that strike one rank a block)
// would pass it as often as not, whatever their noise elsewhere.
inline constexpr int64_t kLatenessModelMinBlocks = 3;

// Fits the model to the blocks rank `worst` took part in (those of its most common set of
// ranks) and fills s->model; p is 1 and model.df 0 with fewer than kLatenessModelMinBlocks.
void FitLatenessModel(const std::vector<TestedCollective>& collectives, size_t worst, Stragglers* s);

// The model's result in a sentence (no final stop); `rank`: the worst rank's number.
std::string LatenessModelText(const LatenessModel& m, int rank);

}  // namespace tierscope

#endif  // TIERSCOPE_ANALYSIS_STRAGGLER_LATENESS_MODEL_H_
