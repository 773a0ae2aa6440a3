// Stragglers across ranks: which rank reaches each collective last, and by how much.
// Each rank's collectives are its communication kernels (GPU jobs) or, without any, its
// host collective calls (c10d::allreduce_, ..., or gloo:/nccl: ranges); they are matched
// across ranks by iteration (ProfilerStep#N) and order. Ranks' clocks are aligned by the
// collectives' ends — a collective ends at nearly the same moment on every rank, whatever
// each host's clock says — and a rank's arrival is its collective's start (the kernel's on
// the device, or the call's on the host) on the aligned clock.
#ifndef TIERSCOPE_ANALYSIS_STRAGGLERS_H_
#define TIERSCOPE_ANALYSIS_STRAGGLERS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/reports.h"
#include "analysis/rules.h"
#include "analysis/table.h"

namespace tierscope {

struct CollectiveCall {
  int64_t iteration = 0;  // N of the ProfilerStep#N it was issued in; 0 without steps
  std::string name;
  int64_t arrive_ns = 0, end_ns = 0;
};

// A rank's collectives in issue order, and whether they are device kernels.
struct RankCollectives {
  bool device = false;
  std::vector<CollectiveCall> calls;
};
RankCollectives FindCollectives(const TraceIndex& index);

struct StragglerRank {
  int rank = 0;
  int64_t offset_ns = 0;     // subtracted from its times to align it with the first rank
  int64_t times_last = 0;    // collectives it reached last
  int64_t late_ns = 0;       // summed over those: its arrival - the next latest
  double behind_median_ns = 0;  // mean over collectives: its arrival - the median arrival
};
struct StragglerIteration {
  int64_t iteration = 0;
  int64_t collectives = 0;   // matched on every rank
  int last_rank = -1;        // the rank last most often
  int64_t times_last = 0;
  double mean_late_ns = 0;   // over the collectives that rank reached last
  int64_t max_late_ns = 0;
};
struct Stragglers {
  std::string alignment;  // how the clocks were aligned, in words
  std::string mismatch;   // where the ranks' collective sequences stopped matching ("" if never)
  int64_t matched = 0;    // collectives matched on every rank
  double mean_duration_ns = 0;  // of the matched collectives, over ranks (arrival to end)
  std::vector<StragglerRank> ranks;
  std::vector<StragglerIteration> iterations;
};

struct RankCollectivesOf {
  int rank = 0;
  const RankCollectives* collectives = nullptr;
};
Stragglers FindStragglers(const std::vector<RankCollectivesOf>& ranks);

Table StragglerTable(const Stragglers& s);
Table StragglerRankTable(const Stragglers& s);
// A finding when one rank is last in most collectives (none otherwise).
std::vector<Finding> StragglerFindings(const Stragglers& s);

}  // namespace tierscope

#endif  // TIERSCOPE_ANALYSIS_STRAGGLERS_H_
