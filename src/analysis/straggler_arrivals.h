// The straggler view's data: each matched collective's arrival on every rank that took
// part, behind (or ahead of) the median rank's, on the clock the stragglers' alignment
// found — the rank x collective lateness an analysis page draws as a heat map.
#ifndef TIERSCOPE_ANALYSIS_STRAGGLER_ARRIVALS_H_
#define TIERSCOPE_ANALYSIS_STRAGGLER_ARRIVALS_H_

#include <cstddef>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/stragglers.h"

namespace tierscope {

// {"ranks": [rank numbers], "collectives": [{"iteration", "index", "name"}], "behind_ns":
// [per collective, per rank: arrival - the median arrival, or null where the rank took no
// part], "matched": all matched collectives}; at most `limit` collectives (those with the
// widest spread of arrivals, in their order); null when none matched.
nlohmann::json StragglerArrivals(const Stragglers& s, const std::vector<RankCollectivesOf>& ranks, size_t limit = 256);

}  // namespace tierscope

#endif  // TIERSCOPE_ANALYSIS_STRAGGLER_ARRIVALS_H_
