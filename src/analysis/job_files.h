// A job's traces: one or more files per rank (HTA's trace_dir, nsys -o report_%q{RANK},
// rank_N/ sub-directories, tensorboard_trace_handler's one file per profiler cycle),
// found in directories or named one by one, read in parallel within a memory budget, each
// reduced by the caller before its trace is let go, so a job of many large ranks never
// holds more than the traces in flight.
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

// A file in a job directory that is not a trace, and why.
struct SkippedFile {
  std::string path;   // as found: the job directory joined with `place`
  std::string place;  // under the job directory: "steps_index.csv", "rank_0/et.json", "plots/"
  std::string why;    // "YAML", "PyTorch execution traces (operators, not a timeline)", ...
};
struct JobFileList {
  std::vector<std::string> files;
  std::vector<SkippedFile> skipped;
  // PyTorch execution traces given or found beside the traces: joined to the rank whose
  // run they record (AttachExecutionTraces).
  std::vector<std::string> execution_traces;
};

// The trace files `inputs` name: each file as given; in a directory, its *.json,
// *.json.gz, *.pt.trace.json(.gz) and *.sqlite files and those in its rank
// sub-directories (rank_0/, rank-1/, rank2/, rank0_ascend_pt/) and one level under
// them, sorted by path (numbers in names as numbers: report_2 before report_10). Files
// in a directory that are not traces are skipped, each with why: by name (CSV, YAML,
// ...), or by their first 64 KiB (a PyTorch / Chakra execution trace, a rocprofv3
// result, a whole JSON document without traceEvents); so are sub-directories not named
// for a rank. InvalidArgument when there are no traces; NotFound for an input that does
// not exist.
StatusOr<JobFileList> FindJobFiles(const std::vector<std::string>& inputs);
// Whether `path` is a PyTorch execution trace (by its first 64 KiB, else by its name).
bool IsExecutionTraceFile(const std::string& path);

// The execution traces in the directory of `trace_path` (none in one of more than 256
// entries: a job's directory is listed by FindJobFiles).
std::vector<std::string> ExecutionTracesBeside(const std::string& trace_path);

// Joins to `t` the first of `candidates` recorded by the same process (execution_trace.h);
// what was tried and why it did not join goes to t.execution_trace.note.
void AttachExecutionTraces(Trace& t, const std::vector<std::string>& candidates);

// FindJobFiles' files only.
StatusOr<std::vector<std::string>> JobFiles(const std::vector<std::string>& inputs);
// One note per job directory and reason, naming the files skipped for it.
std::vector<std::string> SkippedNotes(const std::vector<SkippedFile>& skipped);

// The rank a file name gives ("rank-3", "rank_3", "rank3", any case): -1 if none.
int RankFromFileName(std::string_view path);

// The last number in a file name's stem (before its first '.'): 3 for report_3.sqlite, 0
// for worker0.1623143089861.pt.trace.json; -1 if none.
int NumberInFileName(std::string_view path);

// How many ranks are read at once: no more than the threads, nor than fit in `budget_bytes`
// (the memory budget, kineto_stream.h) at what each costs: read whole, about 1.5x its
// JSON; streamed (when that would not fit, or past 4 GiB), its trace alone, about
// kStreamedTraceBytesPerJsonByte of its JSON plus the window, or with its strings spilled
// to disk (`spill`: SpillsStrings()), kSpilledTraceBytesPerJsonByte (kineto_stream.h); a
// streamed rank is read on two threads, so half as many are read at once.
struct LoadPlan {
  int in_flight = 1;
  int64_t largest_bytes = 0;  // the largest rank's uncompressed size (estimated)
  int64_t budget_bytes = 0;   // memory the plan may use (<= 0: unknown)
  int64_t per_rank_bytes = 0; // what the largest rank is planned to take
  bool streamed = false;      // the largest rank does not fit whole: it is streamed
  bool spilled = false;       // streamed, its args spilled to disk
  std::string why;            // "2 threads", "memory for 3 ranks of 5.0 GiB", ...
};
LoadPlan PlanLoad(const std::vector<int64_t>& rank_bytes, int threads, int64_t budget_bytes, bool spill);

// Reads files[i] for every i, at most plan.in_flight at a time, and calls reduce(i, trace)
// on the reading thread; the trace is freed when reduce returns. `progress(done, total,
// path)` is called, one call at a time, after each. The first error stops the others
// from starting and is returned (naming the file).
Status ForEachRankTrace(const std::vector<std::string>& files, const LoadPlan& plan,
                        const std::function<Status(size_t, Trace&)>& reduce,
                        const std::function<void(size_t, size_t, const std::string&)>& progress);

// The rank a directory's name gives when it starts with one ("rank_3", "rank-3",
// "Rank3", "rank0_ascend_pt"): -1 if not.
int RankFromDirectoryName(std::string_view name);

// Which rank each trace is, one source for the whole job: every trace's own
// distributedInfo.rank, else every file name's, else every file's rank directory (when
// they name two ranks or more), else numbers in the names that are exactly 0..N-1, else
// the place in `files`. `from` says which, per file. InvalidArgument when two files claim
// one rank (naming both).
struct RankAssignment {
  std::vector<int> rank;
  std::vector<std::string> from;  // "distributedInfo", "profiler_info" (torch_npu), "file name", "directory name",
                                  // "number in the file name", "worker name", "order"
  std::string note;  // why distributedInfo was not used when some traces have it ("" otherwise)
  // Per rank, ascending: the indices of its files in time order (one each from AssignRanks).
  std::vector<std::vector<size_t>> windows;
};
StatusOr<RankAssignment> AssignRanks(const std::vector<std::string>& files,
                                     const std::vector<int>& trace_ranks);

// One trace's place in a job: its distributedInfo.rank and the wall-clock span of its
// events (base time + timestamps; begin == end when it has none).
struct TraceWindow {
  int trace_rank = -1;
  int64_t begin_ns = 0, end_ns = 0;
};
// A loaded trace's window: its distributedInfo rank and the wall-clock span of its events.
TraceWindow WindowOf(const Trace& t);
// As AssignRanks, but several files may be one rank: successive windows of it (one file
// per profiler cycle), ordered by time, when no two of them overlap by more than a tenth
// of the shorter; else InvalidArgument naming both (two runs' traces claiming one rank).
// Without ranks in the traces or the paths, tensorboard_trace_handler's names
// (WORKER.TIME.pt.trace.json) make one rank of each worker that wrote several files.
StatusOr<RankAssignment> AssignRankWindows(const std::vector<std::string>& files,
                                           const std::vector<TraceWindow>& windows);

}  // namespace tierscope

#endif  // TIERSCOPE_ANALYSIS_JOB_FILES_H_
