// A rank's summary (RankAnalysis) as bytes and back: what a Dask worker sends the client
// instead of a trace (MessagePack; kilobytes to a few megabytes per rank).
#ifndef TIERSCOPE_ANALYSIS_RANK_SUMMARY_H_
#define TIERSCOPE_ANALYSIS_RANK_SUMMARY_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "analysis/job.h"
#include "tierscope/status.h"

namespace tierscope {

std::string SaveRankSummary(const RankAnalysis& rank);
// InvalidArgument for bytes that are not a summary this build wrote.
StatusOr<RankAnalysis> LoadRankSummary(std::string_view bytes);

}  // namespace tierscope

#endif  // TIERSCOPE_ANALYSIS_RANK_SUMMARY_H_
