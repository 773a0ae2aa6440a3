// A job's traces: one file per rank (HTA's trace_dir, nsys -o report_%q{RANK}), found in
// directories or named one by one, read in parallel within a memory budget, each reduced
// by the caller before its trace is let go, so a job of many large ranks never holds more
// than the ranks in flight.
#ifndef TIERSCOPE_ANALYSIS_JOB_FILES_H_
#define TIERSCOPE_ANALYSIS_JOB_FILES_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "tierscope/status.h"
#include "trace/trace.h"

namespace tierscope {

// The trace files `inputs` name: each a file, or a directory whose *.json, *.json.gz,
// *.pt.trace.json(.gz) and *.sqlite files are taken, sorted by name (numbers in names as
// numbers: report_2 before report_10). InvalidArgument when
// there are none; NotFound for an input that does not exist.
StatusOr<std::vector<std::string>> JobFiles(const std::vector<std::string>& inputs);

// The rank a file name gives ("rank-3", "rank_3", "rank3", any case): -1 if none.
int RankFromFileName(std::string_view path);

// The last number in a file name's stem (before its first '.'): 3 for report_3.sqlite, 0
// for worker0.1623143089861.pt.trace.json; -1 if none.
int NumberInFileName(std::string_view path);

// How many ranks are read at once: no more than the threads, and no more than fit in the
// memory available when each needs about 1.5x its uncompressed size.
struct LoadPlan {
  int in_flight = 1;
  int64_t largest_bytes = 0;  // the largest rank's uncompressed size (estimated)
  int64_t budget_bytes = 0;   // memory the plan may use (-1: unknown)
  std::string why;            // "2 threads", "memory for 3 ranks of 5.0 GiB", ...
};
LoadPlan PlanLoad(const std::vector<int64_t>& rank_bytes, int threads, int64_t available_bytes);

// Reads files[i] for every i, at most plan.in_flight at a time, and calls reduce(i, trace)
// on the reading thread; the trace is freed when reduce returns. `progress(done, total,
// path)` is called, one call at a time, after each. The first error stops the others
// from starting and is returned (naming the file).
Status ForEachRankTrace(const std::vector<std::string>& files, const LoadPlan& plan,
                        const std::function<Status(size_t, Trace&)>& reduce,
                        const std::function<void(size_t, size_t, const std::string&)>& progress);

// Which rank each trace is: its own distributedInfo.rank, else its file name's, else its
// place in `files`. `from` says which, per file. InvalidArgument when two files claim one
// rank (naming both).
struct RankAssignment {
  std::vector<int> rank;
  std::vector<std::string> from;  // "distributedInfo", "file name", "number in the file name", "order"
  std::string note;  // why distributedInfo was not used when some traces have it ("" otherwise)
};
StatusOr<RankAssignment> AssignRanks(const std::vector<std::string>& files,
                                     const std::vector<int>& trace_ranks);

}  // namespace tierscope

#endif  // TIERSCOPE_ANALYSIS_JOB_FILES_H_
