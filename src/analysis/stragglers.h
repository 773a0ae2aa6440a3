// Stragglers across ranks: which rank reaches each collective last, and by how much.
// Each rank's collectives are its communication kernels (GPU jobs; send / recv apart: paired
// by their peers, they align the clocks of ranks no collective links)
// or, without any, its host collective calls (c10d::allreduce_, ..., or gloo:/nccl:
// ranges); they are matched across the ranks that took part by process group, iteration
// (ProfilerStep#N; kNoStep outside any) and order, and only where every such rank made the same calls (same
// name, same message size when the trace records it). Ranks' clocks are aligned by the
// collectives' ends — a collective ends at nearly the same moment on every rank, whatever
// each host's clock says — and a rank's arrival is its collective's start (the kernel's on
// the device, or the call's on the host) on the aligned clock; the host's issue of each
// collective is compared on the same clock.
#ifndef TIERSCOPE_ANALYSIS_STRAGGLERS_H_
#define TIERSCOPE_ANALYSIS_STRAGGLERS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/reports.h"
#include "analysis/rules.h"
#include "analysis/table.h"

namespace tierscope {

// The iteration of a collective issued outside every ProfilerStep#N range (or in a trace
// without any): one value for "no step", apart from every step's N, ProfilerStep#0's too.
inline constexpr int64_t kNoStep = -1;

struct CollectiveCall {
  int64_t iteration = kNoStep;  // N of the ProfilerStep#N it was issued in; kNoStep outside any
  std::string name;
  std::string group;      // the trace's "Process Group Name" ("" when it does not say)
  int64_t elems = -1;     // "In msg nelems", -1 when absent
  int64_t issue_ns = 0;   // on the host: the launch call (a host collective: its start)
  int64_t arrive_ns = 0, end_ns = 0;
  int64_t event = -1;  // its kernel's or host event's index in the trace it came from (-1: not known)
  int32_t peer = -1;   // send / recv: the other side's global rank (-1: a collective, or not recorded)
  bool send = false;   // send / recv: which side this is
};

// Whether a collective of this name ends at nearly the same moment on every rank
// (all-reduce, all-gather, reduce-scatter, all-to-all, barrier), unlike a broadcast's root.
bool EndsTogether(std::string_view name);

// A rank's collectives in issue order, and whether they are device kernels.
struct RankCollectives {
  bool device = false;
  int64_t point_to_point = 0;  // send / recv kernels: they do not join every rank
  std::vector<CollectiveCall> calls;
  // The send / recv kernels whose peer the trace records ("Src Rank" / "Dst Rank", mapped
  // through "Process Group Ranks" to the global rank), in issue order: they pair across
  // ranks (Stragglers::pairs), align clocks where no collective does, and join the job's
  // critical path, but are not compared for stragglers.
  std::vector<CollectiveCall> p2p;
};
RankCollectives FindCollectives(const TraceIndex& index);

struct StragglerRank {
  int rank = 0;
  bool aligned = false;         // had a matched collective to align its clock by
  int64_t offset_ns = 0;        // subtracted from its times to align it with its group's first rank
  int64_t offset_spread_ns = 0; // median absolute deviation of the ends it was aligned by
  double offset_error_ns = 0;   // the standard error of its offset that spread implies
  int64_t collectives = 0;      // matched collectives it took part in
  int64_t times_last = 0;       // collectives it reached last
  int64_t late_ns = 0;          // summed over those: its arrival - the next latest
  double behind_median_ns = 0;  // mean over collectives: its arrival - the median arrival
  double host_behind_median_ns = 0;  // the same for the host's issue of the collective
};
struct StragglerIteration {
  int64_t iteration = kNoStep;
  int64_t collectives = 0;   // matched
  int last_rank = -1;        // the rank that held the others up longest
  int64_t times_last = 0;
  double mean_late_ns = 0;   // over the collectives that rank reached last
  int64_t max_late_ns = 0;
};
struct StragglerCollective {  // one matched collective
  int64_t iteration = kNoStep, index = 0;  // index: its place among its group's in the iteration
  std::string group, name;
  int64_t ranks = 0;
  int last_rank = -1;     // -1: a tie
  int64_t late_ns = 0;    // the last rank's arrival - the next latest's
  int64_t spread_ns = 0;  // latest - earliest arrival
};
// How the ranks are relabelled in the permutation test.
enum class StragglerTest {
  kNone,         // nothing late to test
  kCollectives,  // no ProfilerStep: each collective apart
  // Too few steps to tell a late rank from a rank slowed for a whole step by chance
  // (step_floor >= 0.01): each collective apart, and the rank must be late beyond chance
  // in every step it takes part in, each step tested on its own (steps_late).
  kFewSteps,
  kCollectivesAndSteps,  // each collective apart, and whole steps: p is the larger
  // Too few collectives for any relabelling to reach p < 0.01 (n^(1-K) >= 0.01 for K of
  // n ranks): the worst rank's arrivals weighed against the noise of all of them
  // (LatenessModel, straggler_lateness_model.h).
  kLatenessModel,
};

// The two-way model of arrivals (block: a step, or a collective outside any; and rank)
// that decides where no relabelling can.
struct LatenessModel {
  bool ran = false;
  bool by_step = false;  // the blocks are steps (else collectives)
  int64_t ranks = 0, blocks = 0;
  int64_t df = 0;          // residual degrees of freedom, (ranks - 1)(blocks - 1); 0: not fitted
  int64_t latest = 0;      // blocks in which the worst rank arrived latest (on average over the block's collectives)
  double effect_ns = 0;    // the worst rank's arrival after the ranks' mean, averaged over the blocks
  double sigma_ns = 0;     // the residual standard deviation, pooled over the ranks
  double own_sigma_ns = 0; // the worst rank's own: the spread of its B values
  double own_t = 0;        // effect_ns over the standard error its own spread gives
  int64_t picked_from = 0; // the ranks the worst was picked from (p counts them all)
  bool floored = false;    // sigma_ns was below the timestamps' resolution, which was used instead
  double t = 0;            // effect_ns over its standard error
  double p = 1;            // picked_from x the larger t tail of the two (the rank was picked after looking), at most 1
  double block_floor = 1;  // ranks^(1-blocks): the chance that a delay striking one rank a block is the same rank's in all
};

// Calls joined across ranks: a matched collective (every rank of it), or a send and the
// recv it pairs with. `calls`: (index into the job's ranks, index into that rank's
// RankCollectives::calls, or ::p2p when `p2p`).
struct JoinedCalls {
  int64_t iteration = kNoStep, index = 0;
  std::string name;
  bool p2p = false;
  std::vector<std::pair<size_t, size_t>> calls;
};

struct Stragglers {
  std::string alignment;  // how the clocks were aligned, in words
  std::string mismatch;   // where the ranks' collective sequences stopped matching ("" if never)
  int64_t matched = 0;    // collectives matched across the ranks that took part
  int64_t skipped = 0;    // collectives left out: the ranks' sequences differ there
  int world_size = 0;     // the job's, from the traces (0: unknown)
  double mean_duration_ns = 0;  // of the matched collectives, over ranks (arrival to end)
  // The permutation test (see StragglerFindings): the chance that the waiting gathers on
  // one rank this much by chance. p_value decides; 1 when nothing was compared.
  StragglerTest test = StragglerTest::kNone;
  double p_value = 1;
  double p_collective = 1;  // each collective's ranks relabelled at random, apart
  double p_step = 1;        // the ranks relabelled once per process group and step (1: not run)
  // The least p each relabelling can give here, by construction: whole steps, were the
  // worst rank last at every collective (n^(1-B) for B steps of n ranks); each collective,
  // given the collectives the worst rank was last at (n^(1-K) for K of them).
  double step_floor = 1, collective_floor = 1;
  // The least p relabelling the collectives can give were the worst rank last at all it
  // took part in: at or above 0.01 the lateness model decides instead.
  double reachable_floor = 1;
  int64_t permutations = 0;  // draws, for each relabelling
  int worst = -1;            // index into ranks: the rank with the most waiting (-1: none)
  int64_t worst_last = 0, worst_joined = 0;  // collectives it reached last / took part in
  int64_t steps = 0, steps_worst = 0;        // steps it took part in / held the others up longest in
  int64_t steps_late = 0;  // of those, where it is late beyond chance on its own (p < 0.01 in the step)
  LatenessModel model;     // run when no relabelling can reach p < 0.01 (model.ran)
  std::vector<std::string> undecided;        // why these data cannot decide, a sentence each
  std::vector<StragglerRank> ranks;
  std::vector<StragglerIteration> iterations;
  std::vector<StragglerCollective> collectives;
  std::vector<JoinedCalls> joined;  // the matched collectives, then the paired sends and recvs
  int64_t p2p_paired = 0, p2p_unpaired = 0;  // send / recv kernels with a peer, paired or not
};

struct RankCollectivesOf {
  int rank = 0;
  const RankCollectives* collectives = nullptr;
};
// `world_size`: the job's as its traces say (0: unknown); a job with fewer traces than
// that is compared among the ranks present.
Stragglers FindStragglers(const std::vector<RankCollectivesOf>& ranks, int world_size = 0);

Table StragglerTable(const Stragglers& s);
Table StragglerRankTable(const Stragglers& s);
// The matched collectives, the latest first (the first `limit` of them).
Table StragglerCollectiveTable(const Stragglers& s, size_t limit = 50);
// A finding when one rank causes most of the waiting, often and by more than noise
// would (none otherwise): p_value < 0.01, and under kFewSteps the rank is late beyond
// chance in every step (steps_late == steps).
std::vector<Finding> StragglerFindings(const Stragglers& s);

}  // namespace tierscope

#endif  // TIERSCOPE_ANALYSIS_STRAGGLERS_H_
